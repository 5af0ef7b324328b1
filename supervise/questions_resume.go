package supervise

import (
	"context"
	"errors"
	"io/fs"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

// replayQuestions reads back, on resume, the questions earlier processes
// of this run asked (earlierQuestions): each is listed again — answered
// or deferred as its delivered decision says, else expired, since its
// asker ended with that process — and the questions this process asks
// are numbered after them, so a question id never repeats in the
// journal. A coordination log that is missing or unreadable leaves the
// list empty (it is evidence, not state).
func (c *Coordinator) replayQuestions(ctx context.Context, prior []Record) {
	recs := c.earlierQuestions(ctx, prior)
	c.mu.Lock()
	defer c.mu.Unlock()
	byID := map[string]*question{}
	// escalations holds the decisions by which nested managers
	// escalated questions to their parent managers, by question id.
	escalations := map[string]Decision{}
	var asked []*question // this replay's questions, in journal order
	mailOff := 0          // mail records kept while peer mail is off
	for _, r := range recs {
		switch {
		case r.Kind == CoordDecision && r.Decision != nil && !r.Delivered && r.Decision.Kind == "escalate":
			// Linked below (linkEscalatedLocked).
			escalations[r.QuestionID] = *r.Decision
		case r.Kind == CoordQuestion && r.Question != nil:
			// Every record counts, even one repeating an id (an older
			// process's), so new ids come after all of them.
			q := &question{Question: *r.Question, to: c.self, earlier: true}
			if q.To != "" {
				q.to = q.To // a nested manager's question
			}
			q.Status = "expired"
			byID[q.ID] = q
			asked = append(asked, q)
			if n, err := strconv.Atoi(strings.TrimPrefix(q.ID, "q")); err == nil && strings.HasPrefix(q.ID, "q") && n < 1<<31 {
				c.questionSeq = max(c.questionSeq, n)
			}
			c.appendQuestionLocked(q)
		case r.Kind == CoordDecision && r.Decision != nil && r.Delivered:
			q := byID[r.QuestionID]
			if q == nil {
				continue
			}
			d := *r.Decision
			q.decision = &d
			switch d.Kind {
			case "answer":
				q.Status = "answered"
			case "defer":
				q.Status = "deferred"
			}
		case r.Kind == CoordFinding && r.Finding != nil && r.Finding.Outcome == FindingDetected:
			// An online finding an earlier process raised: it counts
			// against its worker's cap (Options.WatchWorkers), and is
			// not raised again.
			c.watchRaised[r.Finding.Source]++
		case r.Kind == CoordMail && r.Mail != nil && c.mail != nil:
			// A peer mail attempt of an earlier process: the mailboxes
			// and send counts are rebuilt, so mail sent before the cut
			// is read after it, once.
			c.mail.mu.Lock()
			c.mail.applyLocked(*r.Mail)
			c.mail.mu.Unlock()
		case r.Kind == CoordMail && r.Mail != nil:
			mailOff++
		case r.Kind == CoordEscalation && r.Escalation != nil:
			// The root escalated it: the call that did gets its outcome
			// back if the resumed manager runs it again (rerunEscalation),
			// and one delivered is listed escalated — decided, so it
			// holds no stop: its asker ended with that process.
			e := *r.Escalation
			if e.Call != "" {
				if c.escalatedCalls == nil {
					c.escalatedCalls = map[string]EscalationRecord{}
				}
				c.escalatedCalls[e.Call] = e
			}
			if q := byID[r.QuestionID]; q != nil && e.Delivered && q.decision == nil {
				q.Status = "escalated"
				q.decision = &Decision{Kind: "escalate", EscalateTo: "parent", EscalateReason: StatusQueuedForParent}
			}
		}
	}
	c.linkEscalatedLocked(asked, escalations)
	if mailOff > 0 {
		// Not an error (a later resume with peer mail reads them), but
		// the run's workers lose a channel they had: said, not silent.
		c.logger.Warn("supervise: this run had peer mail and is resumed without Options.PeerMail (agentrt: --peer-mail): its workers get no send_mail or read_mail; the journaled mail is kept for a resume with it",
			"mailRecords", mailOff)
	}
}

// earlierQuestions returns the question lifecycle records of the run's
// earlier processes, in order, from wherever the run journals them: a
// spawn journal that is not the run dir's file (a store's, which a run
// takes with it to another machine) holds them as KindQuestionAsked and
// KindQuestionDecided records (runLog.appendCoord); the run dir's
// coordination log holds them otherwise — and for a store journal
// written before it held them.
func (c *Coordinator) earlierQuestions(ctx context.Context, prior []Record) []CoordRecord {
	if c.log.questionsInSpawn {
		var recs []CoordRecord
		for _, r := range prior {
			if cr, ok := coordRecord(r); ok {
				recs = append(recs, cr)
			}
		}
		if len(recs) > 0 || c.log.dir == "" {
			return recs
		}
	}
	if c.log.dir == "" {
		return nil
	}
	recs, _, err := ReadCoordinationLog(ctx, c.log.dir)
	if err != nil {
		if !errors.Is(err, fs.ErrNotExist) {
			c.logger.Warn("supervise: reading the questions of the resumed run", "err", err)
		}
		return nil
	}
	return recs
}

// questionRecord is coordination record r as the spawn journal keeps it
// (KindQuestionAsked, KindQuestionDecided, KindQuestionEscalated,
// KindFindingDetected); false for a record of another kind (an
// analyst's finding).
func questionRecord(r CoordRecord) (Record, bool) {
	switch {
	case r.Kind == CoordQuestion && r.Question != nil:
		q := *r.Question
		return Record{Kind: KindQuestionAsked, Node: q.From, QuestionID: r.QuestionID, Question: &q}, true
	case r.Kind == CoordDecision && r.Decision != nil:
		d := *r.Decision
		return Record{Kind: KindQuestionDecided, QuestionID: r.QuestionID, Decision: &d, Delivered: r.Delivered}, true
	case r.Kind == CoordEscalation && r.Escalation != nil:
		e := *r.Escalation
		return Record{Kind: KindQuestionEscalated, Node: e.From, QuestionID: r.QuestionID, Escalation: &e}, true
	case r.Kind == CoordFinding && r.Finding != nil && r.Finding.Outcome == FindingDetected:
		f := r.Finding
		return Record{Kind: KindFindingDetected, Node: f.Source, Label: f.Lens, Reason: f.Findings}, true
	case r.Kind == CoordMail && r.Mail != nil:
		v, err := canonjson.ToValue(*r.Mail)
		if err != nil {
			return Record{}, false
		}
		return Record{Kind: KindMail, Node: r.Mail.Envelope.From, Data: v}, true
	}
	return Record{}, false
}

// coordRecord is spawn journal record r as the coordination record it
// keeps (questionRecord's inverse); false for a record of another kind.
func coordRecord(r Record) (CoordRecord, bool) {
	switch {
	case r.Kind == KindQuestionAsked && r.Question != nil:
		return CoordRecord{Kind: CoordQuestion, QuestionID: r.QuestionID, Question: r.Question}, true
	case r.Kind == KindQuestionDecided && r.Decision != nil:
		return CoordRecord{Kind: CoordDecision, QuestionID: r.QuestionID, Decision: r.Decision, Delivered: r.Delivered}, true
	case r.Kind == KindQuestionEscalated && r.Escalation != nil:
		return CoordRecord{Kind: CoordEscalation, QuestionID: r.QuestionID, Escalation: r.Escalation}, true
	case r.Kind == KindFindingDetected:
		return CoordRecord{Kind: CoordFinding, Finding: &FindingRecord{Outcome: FindingDetected, Lens: r.Label, Source: r.Node, Findings: r.Reason}}, true
	case r.Kind == KindMail:
		var m MailRecord
		if err := canonjson.FromValue(r.Data, &m); err != nil {
			return CoordRecord{}, false
		}
		return CoordRecord{Kind: CoordMail, Mail: &m}, true
	}
	return CoordRecord{}, false
}

// reofferAsked settles, for c — a nested manager a resumed run drives
// again — the questions it asked its parent in an earlier process and
// is still waiting on: those its journaled conversation holds as queued
// at the parent (TranscriptMessage.Asked), so it will not ask them
// again, and whose decision that conversation does not hold. One a
// delivered decision answered (earlierQuestions) keeps it: the
// decision joins c's inbox again, as it was, since the inbox it reached
// ended with its process. Any other is the parent's open question
// again, under its own id: the parent's await_event returns it — unless
// the parent's journaled conversation already took it
// (TakenEvent.QuestionID) and answers it from there — and its decision
// joins c's inbox, as askUp's does. Every other question of an earlier
// process stays expired (replayQuestions).
func (c *Coordinator) reofferAsked() {
	if c.parent == nil {
		return
	}
	in := c.ManagerInbox()
	if in == nil {
		return // no decision could reach it
	}
	c.mu.Lock()
	earlier := false
	for _, q := range c.questions {
		if q.earlier && q.From == c.self {
			earlier = true
			break
		}
	}
	c.mu.Unlock()
	if !earlier {
		return // nothing it asked before: no need to read the journal
	}
	msgs, _, asked, err := c.recordedTranscript()
	if err != nil || len(asked) == 0 {
		return // the drive reports an unreadable transcript
	}
	waiting := undecided(msgs, asked)
	p := c.parent
	// The questions each manager above c took in its journaled
	// conversation: a question re-opened there is not queued again.
	taken := map[NodeID]map[string]bool{}
	for m := p; m != nil; m = m.parent {
		taken[m.self] = map[string]bool{}
		if _, took, _, err := m.recordedTranscript(); err == nil {
			for _, t := range took {
				if t.Kind == EventQuestion && t.QuestionID != "" {
					taken[m.self][t.QuestionID] = true
				}
			}
		}
	}
	ctx := c.workContext()
	type open struct {
		q     *question
		reply chan Decision
	}
	var opened []open
	var again []string // decisions delivered before, lost with the inbox
	c.mu.Lock()
	for _, q := range c.questions {
		if !q.earlier || q.reply != nil || q.to != p.self || q.From != c.self || !waiting[q.ID] {
			continue
		}
		// Escalated up the managers before: the question open again is
		// the one at the top of that chain, linked down to q, whose
		// decision reaches c as askUp's does.
		top := q
		for top.escalatedAs != nil && (top.decision == nil || top.decision == top.escalation) {
			u := top.escalatedAs
			top.decision, top.Status, top.upstream, top.up, u.down = top.escalation, "escalated", true, u, top
			top = u
		}
		if top.decision != nil {
			if top != q {
				for x := q; x != top; x = x.up {
					x.upstream = false // decided up there
				}
			}
			again = append(again, decisionText(q.ID, *top.decision))
			continue
		}
		q.reply = make(chan Decision, 1)
		top.Status = "open"
		opened = append(opened, open{q, q.reply})
		if at := c.viewOfLocked(top.to); !taken[at.self][top.ID] {
			qq := top.Question
			at.pushLocked(Event{Kind: EventQuestion, WorkerID: top.From, Question: &qq})
		}
	}
	c.mu.Unlock()
	for _, msg := range again {
		// Queued before the drive starts, so its first turn takes it;
		// only the wait for that take runs on.
		if posted, _, _ := in.enqueue(ctx, msg, ""); posted != nil {
			go in.await(context.WithoutCancel(ctx), posted)
		}
	}
	for _, o := range opened {
		go func() {
			select {
			case d := <-o.reply:
				in.post(context.WithoutCancel(ctx), decisionText(o.q.ID, d), "")
			case <-ctx.Done():
				// A decision said delivered as the manager ended is
				// posted; otherwise nobody waits for it now, here or
				// where the question was escalated.
				if d, ok := c.decidedOrAbandon(o.q, o.reply); ok {
					in.post(context.WithoutCancel(ctx), decisionText(o.q.ID, d), "")
				}
			}
		}()
	}
}

// undecided returns the question ids of asked that msgs, a manager's
// conversation, holds no decision on as its inbox delivered it
// (decisionText). One pass over msgs collects the ids decided, so its
// cost is linear in the conversation and the questions asked.
func undecided(msgs []contract.ChatMessage, asked []string) map[string]bool {
	decided := map[string]bool{}
	for _, m := range msgs {
		if m.Role != contract.ChatUser || m.Content == nil {
			continue
		}
		if id, ok := decidedID(*m.Content); ok {
			decided[id] = true
		}
	}
	waiting := map[string]bool{}
	for _, id := range asked {
		if !decided[id] {
			waiting[id] = true
		}
	}
	return waiting
}

// decidedID returns the question id a decision message (decisionText)
// names. Question ids ("q<n>") hold neither ": " nor " was ".
func decidedID(content string) (string, bool) {
	if rest, ok := strings.CutPrefix(content, "Answer to your question "); ok {
		id, _, found := strings.Cut(rest, ": ")
		return id, found
	}
	if rest, ok := strings.CutPrefix(content, "Your question "); ok {
		id, _, found := strings.Cut(rest, " was ")
		return id, found
	}
	return "", false
}

// linkEscalatedLocked links each question of asked (an earlier
// process's, in journal order) that a nested manager escalated to its
// parent manager to the question asked there (question.escalatedAs),
// with the decision that escalated it (escalations, by question id;
// records of a question, its copy and their decisions may be journaled
// out of order, as their appends race). One escalated and decided and
// delivered up there is listed escalated, as the earlier process listed
// it, not expired; one whose asker still waits is re-opened up there on
// resume (reofferAsked). c.mu is held.
func (c *Coordinator) linkEscalatedLocked(asked []*question, escalations map[string]Decision) {
	var copies []*question
	for _, x := range asked {
		o := c.escalatedFromLocked(x)
		if o == nil {
			continue
		}
		d, ok := escalations[o.ID]
		if !ok {
			d = Decision{Kind: "escalate", EscalateTo: "parent"}
		}
		o.escalatedAs, o.escalation, x.down = x, &d, o
		copies = append(copies, x)
	}
	for _, x := range copies {
		if x.decision == nil || x.decision.Kind == "escalate" {
			continue
		}
		for q := x.down; q != nil && q.decision == nil; q = q.down {
			q.decision, q.Status = q.escalation, "escalated"
		}
	}
	// down only served the walk: the chain is linked for real when a
	// waiting asker's question is re-offered (reofferAsked).
	for _, x := range copies {
		x.down = nil
	}
}

// escalatedFromLocked returns the earlier question that x, a question
// an earlier process asked of manager x.to, was escalated from: x's
// asker is no child of x.to, so a nested manager below x.to on the
// asker's path asked it up (decide's then) — the latest question of
// that manager from the same asker with the same text not yet linked
// (journaled before or, as the appends race, after x).
// Nil when x was asked directly. c.mu is held.
func (c *Coordinator) escalatedFromLocked(x *question) *question {
	below, ok := x.From.Parent()
	if !ok || below == x.to {
		return nil
	}
	for {
		p, ok := below.Parent()
		if !ok {
			return nil // x.to is not above the asker
		}
		if p == x.to {
			break
		}
		below = p
	}
	qs := c.questionsTo[below] // that manager's questions only
	for i := len(qs) - 1; i >= 0; i-- {
		q := qs[i]
		if q.earlier && q.escalatedAs == nil && q.From == x.From && q.Question.Question == x.Question.Question {
			return q
		}
	}
	return nil
}
