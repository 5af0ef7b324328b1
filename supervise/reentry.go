package supervise

import "slices"

// Bounds of a ReentryState: each list keeps at most MaxReentryWorkers workers
// (MaxReentryQuestions questions) and says how many it left out, and
// each free text it carries (a label, a key, a reason, a question) is
// clipped to MaxReentryText bytes, so what a re-entering manager is told
// stays small however large the run grew.
const (
	MaxReentryWorkers   = 20
	MaxReentryQuestions = 10
	MaxReentryText      = 200
)

// ReentryState is what a manager re-entering a run in progress needs to know
// before it acts (spec/runtime.md §3.6 resume, behaviour 40): a brain
// that cannot replay its own conversation — an external harness started
// afresh on resume — learns from it which of its workers settled, which
// still run, which are in doubt, what waits for it, and where the
// journal stands, so it neither redoes settled work nor spawns
// duplicates. It is a snapshot, read when asked.
type ReentryState struct {
	// Resumed: this manager was driven by an earlier process of the run
	// (the root of a resumed run; a nested manager the resumed run
	// drives again). False on a first start.
	Resumed bool `json:"resumed"`
	// JournalRows is how many rows the run's journal holds now;
	// PriorRows how many of them earlier processes wrote (read_journal
	// with sinceRow 0 reads the whole run, sinceRow PriorRows what this
	// process added).
	JournalRows int `json:"journalRows"`
	PriorRows   int `json:"priorRows"`
	// Settled are this manager's settled workers, the most recently
	// admitted last; SettledOmitted counts the earlier ones left out.
	Settled        []ReentryWorker `json:"settled"`
	SettledOmitted int             `json:"settledOmitted,omitzero"`
	// Live are its workers still running, in admission order;
	// LiveOmitted counts the later ones left out.
	Live        []ReentryWorker `json:"live"`
	LiveOmitted int             `json:"liveOmitted,omitzero"`
	// InDoubt are its workers whose outcome is unknown (started by an
	// earlier process with no settlement journaled and none recovered),
	// in admission order; InDoubtOmitted counts the later ones left out.
	InDoubt        []ReentryWorker `json:"inDoubt"`
	InDoubtOmitted int             `json:"inDoubtOmitted,omitzero"`
	// OpenQuestions are the questions asked of this manager still
	// waiting for its decision, in the order asked;
	// OpenQuestionsOmitted counts the later ones left out.
	OpenQuestions        []ReentryQuestion `json:"openQuestions"`
	OpenQuestionsOmitted int               `json:"openQuestionsOmitted,omitzero"`
	// WaitingEvents counts the events await_event would return now
	// (settlements replayed from the journal among them).
	WaitingEvents int `json:"waitingEvents"`
	// Submitted: a result of this manager's already passed the check
	// (a later submit_result is refused).
	Submitted bool `json:"submitted,omitzero"`
}

// ReentryWorker is one worker in a ReentryState. Its text fields are clipped
// to MaxReentryText bytes (marked "…").
type ReentryWorker struct {
	ID      NodeID `json:"workerId"`
	Label   string `json:"label,omitzero"`
	Profile string `json:"profile,omitzero"`
	// Key is its spawn's idempotency key: spawn_worker with the same key
	// and request returns this worker instead of starting another.
	Key   string `json:"key,omitzero"`
	State State  `json:"state"`
	// Delivered is set on a settled worker: whether its result passed
	// the check. Nil while it runs or when in doubt (unknown).
	Delivered *bool `json:"delivered,omitzero"`
	// Verdict is the check's reason, when it gave one.
	Verdict string `json:"verdict,omitzero"`
	// OutRef names its stored result (observe_agent reads it).
	OutRef string `json:"outRef,omitzero"`
	// Reason says why it failed, was cancelled or is in doubt.
	Reason string `json:"reason,omitzero"`
}

// ReentryQuestion is one open question in a ReentryState, its text clipped
// to MaxReentryText bytes.
type ReentryQuestion struct {
	ID       string  `json:"id"`
	From     NodeID  `json:"from"`
	Urgency  Urgency `json:"urgency"`
	Question string  `json:"question"`
}

// Reentry returns what this manager re-entering its run needs to know
// (see ReentryState): its own workers (its direct children) by state, its
// open questions, the events waiting for it and the journal's position,
// each list bounded. It only reads; on a first start Resumed is false.
func (c *Coordinator) Reentry() ReentryState {
	nodes := c.scope.Nodes()
	c.log.mu.Lock()
	out := ReentryState{JournalRows: c.log.rows.len(), PriorRows: c.log.prior}
	if c.parent == nil {
		out.Resumed = out.PriorRows > 0
	} else {
		// A nested manager re-enters when an earlier process admitted
		// it (a resumed run drives it again under the same id, its
		// worker made anew).
		for i := range c.log.prior {
			if r := c.log.rows.at(i); r.Kind == KindSpawned && r.Node == c.self {
				out.Resumed = true
				break
			}
		}
	}
	c.log.mu.Unlock()
	c.mu.Lock()
	defer c.mu.Unlock()
	var settled, live, inDoubt []ReentryWorker
	for _, n := range nodes {
		if n.Parent != c.self {
			continue
		}
		rw := ReentryWorker{ID: n.ID, Label: clip(n.Label, MaxReentryText), Profile: clip(n.Profile, MaxReentryText),
			Key: clip(n.Key, MaxReentryText), State: n.State}
		w := c.workers[n.ID]
		if w != nil && w.settling {
			// Not durable yet: live, as observe_agent shows it.
			rw.State = StateRunning
			live = append(live, rw)
			continue
		}
		switch {
		case n.InDoubt || n.NeverSettled:
			if w != nil {
				rw.Reason = clip(w.reason, MaxReentryText)
			}
			inDoubt = append(inDoubt, rw)
		case n.State.Terminal():
			if w != nil {
				d := w.delivered
				rw.Delivered = &d
				rw.OutRef = w.outRef
				rw.Reason = clip(w.reason, MaxReentryText)
				if w.verdict != nil {
					rw.Verdict = clip(w.verdict.Reason, MaxReentryText)
				}
			}
			if rw.Reason == "" && n.Settlement != nil {
				rw.Reason = clip(n.Settlement.Reason, MaxReentryText)
			}
			settled = append(settled, rw)
		default:
			live = append(live, rw)
		}
	}
	out.Settled, out.SettledOmitted = lastN(settled, MaxReentryWorkers)
	out.Live, out.LiveOmitted = firstN(live, MaxReentryWorkers)
	out.InDoubt, out.InDoubtOmitted = firstN(inDoubt, MaxReentryWorkers)
	var open []ReentryQuestion
	for _, q := range c.questionsTo[c.self] {
		if q.decision == nil && (q.Status == "open" || q.Status == "escalated") { // escalated by the root, still its to decide
			open = append(open, ReentryQuestion{ID: q.ID, From: q.From, Urgency: q.Urgency, Question: clip(q.Question.Question, MaxReentryText)})
		}
	}
	out.OpenQuestions, out.OpenQuestionsOmitted = firstN(open, MaxReentryQuestions)
	for _, q := range c.queued {
		out.WaitingEvents += q.len()
	}
	out.Submitted = c.submitted != nil
	return out
}

// firstN is s's first n elements (never nil) and how many it left out.
func firstN[T any](s []T, n int) ([]T, int) {
	if len(s) <= n {
		return slices.Clip(append([]T{}, s...)), 0
	}
	return slices.Clone(s[:n]), len(s) - n
}

// lastN is s's last n elements (never nil) and how many it left out.
func lastN[T any](s []T, n int) ([]T, int) {
	if len(s) <= n {
		return slices.Clip(append([]T{}, s...)), 0
	}
	return slices.Clone(s[len(s)-n:]), len(s) - n
}
