package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/tools"
)

// Urgency says how much a question holds up (§3.6 "Questions").
type Urgency string

// Urgencies.
const (
	UrgencyContinueWithout Urgency = "continue-without"
	UrgencyBlocksStep      Urgency = "blocks-step"
	UrgencyBlocksRun       Urgency = "blocks-run"
)

// AskArgs are ask_parent's arguments, and what a worker asks through
// Work.Ask.
type AskArgs struct {
	From     NodeID           `json:"from,omitzero" jsonschema:"who asks; the asking node when empty"`
	Level    string           `json:"level" jsonschema:"worker, driver or loop"`
	Question string           `json:"question"`
	Reason   string           `json:"reason"`
	Urgency  Urgency          `json:"urgency" jsonschema:"continue-without, blocks-step or blocks-run"`
	Options  []QuestionOption `json:"options,omitzero" jsonschema:"the choices: {label, tradeoff} objects, or plain labels"`
}

// QuestionOption is one choice a question offers (§3.6, the reference's
// {label, tradeoff}). It is written as {"label", "tradeoff"}, and read
// from that form (tradeoff may be left out) or from a plain string, the
// label alone: what a question journaled before options had tradeoffs
// holds, and what a caller may still pass.
type QuestionOption struct {
	Label    string
	Tradeoff string
}

// MarshalJSON writes o as {"label", "tradeoff"}.
func (o QuestionOption) MarshalJSON() ([]byte, error) {
	return json.Marshal(struct {
		Label    string `json:"label"`
		Tradeoff string `json:"tradeoff"`
	}{o.Label, o.Tradeoff})
}

// UnmarshalJSON reads a plain string (the label) or a strict
// {"label", "tradeoff"?} object with a non-empty label.
func (o *QuestionOption) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		*o = QuestionOption{Label: s}
		return nil
	}
	var v struct {
		Label    *string `json:"label"`
		Tradeoff string  `json:"tradeoff"`
	}
	d := json.NewDecoder(bytes.NewReader(b))
	d.DisallowUnknownFields()
	if err := d.Decode(&v); err != nil {
		return fmt.Errorf("%w: an option is a label or {label, tradeoff}: %w", ErrBadQuestion, err)
	}
	if v.Label == nil || *v.Label == "" {
		return fmt.Errorf("%w: an option needs a label", ErrBadQuestion)
	}
	*o = QuestionOption{Label: *v.Label, Tradeoff: v.Tradeoff}
	return nil
}

// MarshalValue writes o as {"label", "tradeoff"} where the run journals
// it (the coordination log, a store spawn journal), as MarshalJSON does
// for a tool's reply: one shape wherever a question is written.
func (o QuestionOption) MarshalValue() (canonjson.Value, error) {
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "label", Value: canonjson.StringValue(o.Label)},
		{Name: "tradeoff", Value: canonjson.StringValue(o.Tradeoff)},
	}), nil
}

// UnmarshalValue reads what UnmarshalJSON reads — a plain label, or
// {"label", "tradeoff"?} — and a journal this package wrote before
// options had their own journaled shape ({"Label", "Tradeoff"}).
func (o *QuestionOption) UnmarshalValue(v canonjson.Value) error {
	return o.UnmarshalJSON(canonjson.Marshal(v))
}

// questionOptionSchema is a QuestionOption's schema in a tool's input:
// a label, or {label, tradeoff?}.
func questionOptionSchema() *jsonschema.Schema {
	return &jsonschema.Schema{AnyOf: []*jsonschema.Schema{
		{Type: "string"},
		{Type: "object", Properties: map[string]*jsonschema.Schema{"label": {Type: "string", MinLength: jsonschema.Ptr(1)}, "tradeoff": {Type: "string"}},
			Required: []string{"label"}, AdditionalProperties: &jsonschema.Schema{Not: &jsonschema.Schema{}}},
	}}
}

// Question is a question asked of a manager.
type Question struct {
	ID       string           `json:"id"`
	From     NodeID           `json:"from"`
	Level    string           `json:"level"`
	Question string           `json:"question"`
	Reason   string           `json:"reason"`
	Urgency  Urgency          `json:"urgency"`
	Options  []QuestionOption `json:"options,omitzero"`
	// Status is open, answered, deferred, escalated (a nested manager
	// queued it for its parent, or the run's EscalateQuestion received
	// it from the root) or expired (its asker stopped waiting before a
	// decision reached it).
	Status string `json:"status"`
	// To is the nested manager asked; empty for the run's root manager.
	To NodeID `json:"to,omitzero"`
}

// Decision is a manager's decision on a question: Kind answer (Answer),
// defer (DeferReason) or escalate (EscalateTo parent or user).
type Decision struct {
	Kind           string `json:"kind"`
	Answer         string `json:"answer,omitzero"`
	DeferReason    string `json:"deferReason,omitzero"`
	EscalateTo     string `json:"escalateTo,omitzero"`
	EscalateReason string `json:"escalateReason,omitzero"`
	By             string `json:"by,omitzero"`
}

type question struct {
	Question
	// to is the manager asked: its list_questions lists it, its
	// answer_question decides it.
	to       NodeID
	decision *Decision
	// reply carries the decision to the waiting asker; nil when nobody
	// waits (the manager's own ask_parent, a question escalated through
	// a nested manager: its asker waits on down's), or no longer.
	reply chan Decision
	// earlier: the question and its decision are an earlier process's
	// (replayQuestions).
	earlier bool
	// upstream: a nested manager escalated the question to its parent
	// manager and the asker still waits for the decision made there;
	// until it arrives the question is undecided for stop.
	upstream bool
	// up is the question as escalated to the parent manager (set once
	// asked there): when the asker stops waiting it expires too.
	up *question
	// down is the question a nested manager escalated as this one (this
	// is its up): the decision made here goes, under c.mu, down the
	// chain to the asker waiting at its bottom (waiterLocked), so it is
	// delivered exactly when that asker still waits.
	down *question
	// escalatedAs, on an earlier process's question a nested manager
	// escalated to its parent manager, is the question it was asked as
	// there, and escalation the decision that escalated it
	// (replayQuestions): re-offered on resume (reofferAsked), the
	// question is open again up there, linked down to its asker.
	escalatedAs *question
	escalation  *Decision
	// journaled is closed once this process's append of the question's
	// record returned (written or recorded lost); nil for an earlier
	// process's question. A decision is journaled only after it, so the
	// coordination log never holds a decision before its question.
	journaled chan struct{}
}

// ErrBadQuestion: a question's fields are not what §3.6 allows.
var ErrBadQuestion = errors.New("supervise: invalid question")

// Bounds of one question: its question, reason and options (labels and
// tradeoffs) together
// take at most MaxQuestionBytes, in at most MaxQuestionOptions options.
// A question is kept for list_questions and journaled whole, so each is
// bounded.
const (
	MaxQuestionBytes   = 16 << 10
	MaxQuestionOptions = 64
)

func (a AskArgs) check() error {
	switch a.Level {
	case "worker", "driver", "loop":
	default:
		return fmt.Errorf("%w: level %q", ErrBadQuestion, a.Level)
	}
	switch a.Urgency {
	case UrgencyContinueWithout, UrgencyBlocksStep, UrgencyBlocksRun:
	default:
		return fmt.Errorf("%w: urgency %q", ErrBadQuestion, a.Urgency)
	}
	if a.Question == "" {
		return fmt.Errorf("%w: empty question", ErrBadQuestion)
	}
	if len(a.Options) > MaxQuestionOptions {
		return fmt.Errorf("%w: %d options, at most %d", ErrBadQuestion, len(a.Options), MaxQuestionOptions)
	}
	if n := a.size(); n > MaxQuestionBytes {
		return fmt.Errorf("%w: %d bytes of question, reason and options, at most %d", ErrBadQuestion, n, MaxQuestionBytes)
	}
	return nil
}

// size is the bytes of a's question, reason and options.
func (a AskArgs) size() int {
	n := len(a.Question) + len(a.Reason)
	for _, o := range a.Options {
		n += len(o.Label) + len(o.Tradeoff)
	}
	return n
}

// appendQuestionLocked adds q to the questions and their index; c.mu
// is held.
func (c *Coordinator) appendQuestionLocked(q *question) {
	c.questions = append(c.questions, q)
	if c.questionsByID == nil {
		c.questionsByID = map[string][]*question{}
	}
	c.questionsByID[q.ID] = append(c.questionsByID[q.ID], q)
	if c.questionsTo == nil {
		c.questionsTo = map[NodeID][]*question{}
	}
	c.questionsTo[q.to] = append(c.questionsTo[q.to], q)
}

// addQuestion records a question and, when wait is set, returns the
// channel its decision will arrive on — taken under the same lock that
// publishes the question, so a decision made at once is never missed.
// down, when set, is the question a nested manager escalates as this
// one: linked under that lock, so a decision made at once reaches its
// asker; expired at once when that asker already gave up.
func (c *Coordinator) addQuestion(ctx context.Context, a AskArgs, wait bool, down *question) (*question, <-chan Decision) {
	c.mu.Lock()
	c.questionSeq = max(c.questionSeq, len(c.questions)) + 1
	q := &question{Question: Question{ID: "q" + strconv.Itoa(c.questionSeq), From: a.From, Level: a.Level, Question: a.Question,
		Reason: a.Reason, Urgency: a.Urgency, Options: a.Options, Status: "open"}, to: c.self, journaled: make(chan struct{})}
	if c.parent != nil {
		q.To = c.self // journaled, so a resumed run lists it to the same manager
	}
	if wait {
		q.reply = make(chan Decision, 1)
	}
	if down != nil {
		q.down, down.up = down, q
		if q.waiterLocked() == nil {
			q.Status = "expired" // its asker gave up while it was escalated
		}
	}
	c.appendQuestionLocked(q)
	qq, reply := q.Question, q.reply
	c.pushLocked(Event{Kind: EventQuestion, WorkerID: a.From, Question: &qq})
	c.mu.Unlock()
	// The event goes out before the record is written (a manager waiting
	// in await_event sees it at once); a decision on it waits for the
	// record (questionJournaled).
	err := c.log.appendCoordOrLose(ctx, CoordRecord{Kind: CoordQuestion, QuestionID: qq.ID, Question: &qq}, qq.From)
	close(q.journaled)
	if err != nil {
		c.logger.Error("supervise: journaling a question", "question", qq.ID, "err", err)
	}
	return q, reply
}

// Ask raises a worker's question to the manager and waits for the
// decision that reaches it (answer, defer or escalate) or for ctx to
// end. An executor offers it to its workers through Work.Ask.
func (c *Coordinator) Ask(ctx context.Context, a AskArgs) (Decision, error) {
	if err := a.check(); err != nil {
		return Decision{}, err
	}
	q, reply := c.addQuestion(ctx, a, true, nil)
	select {
	case d := <-reply:
		return d, nil
	case <-ctx.Done():
		if d, ok := c.decidedOrAbandon(q, reply); ok {
			return d, nil
		}
		return Decision{}, context.Cause(ctx)
	}
}

// decidedOrAbandon is the one end of every wait for a question's
// decision whose waiter gave up (Ask, askUp, a resumed run's reoffer):
// a decision sent as it gave up was reported delivered (decide sends it
// under c.mu), so it is returned (ok) for the waiter to take; otherwise
// q is abandoned (abandonLocked) — both under c.mu, so no decision is
// said delivered and then dropped.
func (c *Coordinator) decidedOrAbandon(q *question, reply <-chan Decision) (Decision, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	select {
	case d := <-reply:
		return d, true
	default:
	}
	abandonLocked(q)
	return Decision{}, false
}

// abandonLocked expires q, whose asker stopped waiting, unless it was
// decided, and with it each question it was escalated as up the
// managers: nobody waits for their decisions now (a question outlived
// by its asker holds no stop and takes no answer). c.mu is held.
func abandonLocked(q *question) {
	for ; q != nil; q = q.up {
		if q.decision == nil {
			q.Status = "expired"
		}
		q.reply, q.upstream = nil, false
	}
}

// waiterLocked returns the question whose asker waits for q's decision:
// q itself, or the one at the bottom of the questions q was escalated
// from through nested managers (down); nil when that asker no longer
// waits. c.mu is held.
func (q *question) waiterLocked() *question {
	for q.down != nil {
		q = q.down
	}
	if q.reply == nil {
		return nil
	}
	return q
}

// AskParentResult is ask_parent's reply. A manager with no parent gets
// status no-parent (no default operator queue).
type AskParentResult struct {
	QuestionID string `json:"questionId"`
	Status     string `json:"status"`
	// Reason says who holds the question now (queued-for-parent) or why
	// nothing received it (no-parent); Guidance what the manager is to
	// do; To who holds it, when the run's EscalateQuestion received it.
	Reason   string `json:"reason,omitzero"`
	Guidance string `json:"guidance,omitzero"`
	To       string `json:"to,omitzero"`
	// Replayed: an earlier process of the run made this very call and
	// escalated its question; nothing is asked again.
	Replayed bool `json:"replayed,omitzero"`
}

// AskParent records the manager's own question. A nested manager's
// question is queued at its parent manager (queued-for-parent), and the
// decision made there joins the nested manager's inbox. The run's root
// has no parent manager: its question, kept for list_questions and the
// journal, goes to Options.EscalateQuestion — queued-for-parent when
// that received it, else no-parent (as without the hook: there is no
// default operator queue), the manager told it is the last decider
// (askRootParent).
func (c *Coordinator) AskParent(ctx context.Context, a AskArgs) (AskParentResult, error) {
	if a.From == "" || c.parent != nil {
		a.From = c.self // a nested manager asks as itself
	}
	if err := a.check(); err != nil {
		return AskParentResult{}, &VerbRefusal{Code: "invalid-question", Reason: err.Error()}
	}
	if c.parent != nil {
		// A nested manager's question goes to its parent manager; the
		// decision joins its own brain between turns (its inbox).
		in := c.ManagerInbox()
		id := c.askUp(a, func(qid string, d Decision) {
			if in != nil {
				in.post(context.WithoutCancel(c.workContext()), decisionText(qid, d), "")
			}
		})
		return AskParentResult{QuestionID: id, Status: "queued-for-parent"}, nil
	}
	return c.askRootParent(ctx, a)
}

// ListQuestionsArgs are list_questions' arguments: a page of at most
// Limit questions (DefaultQuestionPage when 0, at most MaxQuestionPage)
// from position Cursor in the order asked (a previous page's
// NextCursor; 0 is the first question).
type ListQuestionsArgs struct {
	Cursor int `json:"cursor,omitzero" jsonschema:"where the page starts: the nextCursor of the previous page (default 0, the first question)"`
	Limit  int `json:"limit,omitzero" jsonschema:"questions per page, at most 100 (default 50)"`
}

// QuestionList is list_questions' reply: one page of the questions asked
// of the manager, in the order asked. More says whether questions remain
// past it, and NextCursor (set only then) is where the next page starts.
type QuestionList struct {
	Questions  []Question `json:"questions"`
	More       bool       `json:"more"`
	NextCursor int        `json:"nextCursor,omitzero"`
}

// ListQuestions returns every question asked of this manager, in the
// order asked. Its cost follows this manager's questions; the verb pages
// them (ListQuestionsPage).
func (c *Coordinator) ListQuestions() QuestionList {
	c.mu.Lock()
	defer c.mu.Unlock()
	own := c.questionsTo[c.self]
	out := QuestionList{Questions: make([]Question, len(own))}
	for i, q := range own {
		out.Questions[i] = q.Question
	}
	return out
}

// ListQuestionsPage is list_questions: one page of the questions asked
// of this manager. Arguments out of range are a *tools.ArgumentsError
// naming the member; a cursor at or past the end is an empty last page.
// Its cost follows the page, not the questions asked.
func (c *Coordinator) ListQuestionsPage(a ListQuestionsArgs) (QuestionList, error) {
	switch {
	case a.Cursor < 0:
		return QuestionList{}, &tools.ArgumentsError{Path: "/cursor", Reason: fmt.Sprintf("are refused: cursor %d is negative", a.Cursor)}
	case a.Limit < 0 || a.Limit > MaxQuestionPage:
		return QuestionList{}, &tools.ArgumentsError{Path: "/limit", Reason: fmt.Sprintf("are refused: limit %d is outside 0…%d questions", a.Limit, MaxQuestionPage)}
	}
	limit := a.Limit
	if limit == 0 {
		limit = DefaultQuestionPage
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	own := c.questionsTo[c.self]
	from := min(a.Cursor, len(own))
	to := min(from+limit, len(own))
	out := QuestionList{Questions: make([]Question, to-from), More: to < len(own)}
	for i, q := range own[from:to] {
		out.Questions[i] = q.Question
	}
	if out.More {
		out.NextCursor = to
	}
	return out, nil
}

// AnswerArgs are answer_question's arguments: exactly one of Answer,
// DeferReason and EscalateTo.
type AnswerArgs struct {
	QuestionID     string `json:"questionId"`
	Answer         string `json:"answer,omitzero"`
	DeferReason    string `json:"deferReason,omitzero"`
	EscalateTo     string `json:"escalateTo,omitzero" jsonschema:"parent or user"`
	By             string `json:"by,omitzero"`
	EscalateReason string `json:"escalateReason,omitzero"`
}

// AnswerResult is answer_question's reply. Delivered says the decision
// reached its asker; only a delivered decision resolves the question.
type AnswerResult struct {
	QuestionID string `json:"questionId"`
	Delivered  bool   `json:"delivered"`
	Status     string `json:"status"`
	// Replayed: an earlier process of the run delivered this very
	// decision, or escalated this very call's question (a call a resumed
	// manager runs again); it is not sent again.
	Replayed bool `json:"replayed,omitzero"`
	// Reason and Guidance are a root escalation's (escalateTo parent):
	// who holds the question now or why nothing received it, and what
	// the manager is to do.
	Reason   string `json:"reason,omitzero"`
	Guidance string `json:"guidance,omitzero"`
}

// AnswerQuestion decides a question and routes the decision to its
// asker. The root's escalation to parent goes to Options.EscalateQuestion
// (queued-for-parent or no-parent) and leaves the question undecided
// (escalateRootDecision); a nested manager's escalation to parent asks
// its parent manager, whose decision reaches the asker.
func (c *Coordinator) AnswerQuestion(ctx context.Context, a AnswerArgs) (AnswerResult, error) {
	// A decision reaches its asker before it is journaled: a process
	// whose store journal's lease ran out (paused past it; another
	// process may hold the run now) hands none to a worker of a run no
	// longer its own, which would run on and spend.
	if err := c.log.current(); err != nil {
		return AnswerResult{}, fmt.Errorf("supervise: answer_question: %w", spawnLogLost(err))
	}
	if c.parent == nil && a.EscalateTo == "parent" {
		return c.escalateRootDecision(ctx, a)
	}
	if a.Answer != "" && c.authorizeMessage != nil {
		// An answer is a message down to its asker: the product's
		// authority sees it first (Options.AuthorizeMessage), and a
		// refused one decides nothing.
		// An answer an earlier process delivered is authorized again
		// too: a resumed manager re-sends what it proposed, and the
		// decision journaled is what the hook narrowed it to, so only
		// the narrowed text is the same decision (replayed).
		var asker NodeID
		replay := false
		c.mu.Lock()
		for _, q := range c.questionsByID[a.QuestionID] {
			if q.to == c.self && (q.decision == nil || q.earlier && q.decision.Kind == "answer") {
				asker, replay = q.From, q.decision != nil
			}
		}
		c.mu.Unlock()
		if asker != "" {
			answer, err := c.authorizeDown(ctx, DownMessage{Kind: DownAnswer, WorkerID: asker, Source: "answer_question",
				Instruction: a.Answer, QuestionID: a.QuestionID})
			switch {
			case err == nil:
				a.Answer = answer
			case !replay:
				return AnswerResult{}, &VerbRefusal{Code: "message-not-authorized", Reason: err.Error()}
			}
			// A replay the hook now refuses is no decision of this
			// process: decide reports the question already decided.
		}
	}
	res, d, from, then, err := c.decide(a)
	if err == nil && (d != nil || then != nil) {
		// The question's record first: its event reached this manager
		// before the record was written, and a decision journaled before
		// it, or its escalated copy asked (and journaled) of the parent
		// before it, would leave a journal — to a process killed between
		// the two — holding the consequence and not the question.
		c.questionJournaled(ctx, res.QuestionID)
	}
	if then != nil {
		then()
	}
	if err == nil && d != nil {
		rec := CoordRecord{Kind: CoordDecision, QuestionID: res.QuestionID, Decision: d, Delivered: res.Delivered}
		if jerr := c.log.appendCoordOrLose(ctx, rec, from); jerr != nil {
			c.logger.Error("supervise: journaling a decision", "question", res.QuestionID, "err", jerr)
		}
	}
	return res, err
}

// questionJournaled waits until this process's append of question id's
// record returned, or ctx ends: a decision journaled before its question
// would be ignored by a resumed run's replay (replayQuestions), and a lost
// question's loss would be recorded after its decision's.
func (c *Coordinator) questionJournaled(ctx context.Context, id string) {
	var done chan struct{}
	c.mu.Lock()
	if qs := c.questionsByID[id]; len(qs) > 0 {
		done = qs[0].journaled
	}
	c.mu.Unlock()
	if done == nil {
		return
	}
	select {
	case <-done:
	case <-ctx.Done():
	}
}

// decide applies a decision under the lock and returns it, and who
// asked, for the log, and what is left to do once the lock is released
// (a nested manager's escalation to its parent).
func (c *Coordinator) decide(a AnswerArgs) (AnswerResult, *Decision, NodeID, func(), error) {
	set := 0
	for _, s := range []string{a.Answer, a.DeferReason, a.EscalateTo} {
		if s != "" {
			set++
		}
	}
	if set != 1 {
		return AnswerResult{}, nil, "", nil, &VerbRefusal{Code: "invalid-decision", Reason: "give exactly one of answer, deferReason, escalateTo"}
	}
	if a.EscalateTo != "" && a.EscalateTo != "parent" && a.EscalateTo != "user" {
		return AnswerResult{}, nil, "", nil, &VerbRefusal{Code: "invalid-decision", Reason: "escalateTo is parent or user"}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	var q *question
	for _, x := range c.questionsByID[a.QuestionID] {
		if x.to == c.self {
			q = x
		}
	}
	switch {
	case q == nil:
		return AnswerResult{}, nil, "", nil, &VerbRefusal{Code: "unknown-question", Reason: "no question " + a.QuestionID}
	case q.decision != nil && q.earlier && q.decision.same(a):
		return AnswerResult{QuestionID: q.ID, Delivered: true, Status: q.Status, Replayed: true}, nil, q.From, nil, nil
	case q.decision != nil:
		return AnswerResult{}, nil, "", nil, &VerbRefusal{Code: "already-decided", Reason: "question " + q.ID + " is " + q.Status}
	case a.EscalateTo != "" && (c.parent == nil || a.EscalateTo != "parent"):
		return AnswerResult{QuestionID: q.ID, Status: "no-parent"}, nil, q.From, nil, nil
	case a.EscalateTo != "" && q.waiterLocked() == nil:
		// A nested manager has a parent; nobody waits for this
		// question's decision any more (its asker ended, as an earlier
		// process's asker did): nothing is escalated, as an answer to it
		// delivers nothing.
		return AnswerResult{QuestionID: q.ID, Status: q.Status}, nil, q.From, nil, nil
	case a.EscalateTo != "":
		// A nested manager escalates to its parent manager: the question
		// is asked there, and the decision made there reaches the asker.
		d := Decision{Kind: "escalate", EscalateTo: "parent", EscalateReason: a.EscalateReason, By: a.By}
		q.decision, q.Status, q.upstream = &d, "escalated", true
		up := q.Question
		then := func() {
			c.parent.addQuestion(c.workContext(), AskArgs{From: up.From, Level: up.Level, Question: up.Question, Reason: up.Reason, Urgency: up.Urgency, Options: up.Options}, false, q)
		}
		return AnswerResult{QuestionID: q.ID, Status: "queued-for-parent"}, &d, q.From, then, nil
	}
	d := Decision{Kind: "answer", Answer: a.Answer, By: a.By}
	status := "answered"
	if a.DeferReason != "" {
		d, status = Decision{Kind: "defer", DeferReason: a.DeferReason, By: a.By}, "deferred"
	}
	w := q.waiterLocked()
	if w == nil {
		// Nobody is waiting: the decision cannot be delivered.
		return AnswerResult{QuestionID: q.ID, Status: q.Status}, nil, q.From, nil, nil
	}
	w.reply <- d // buffered, and only ever sent once
	w.reply = nil
	for x := q.down; x != nil; x = x.down {
		x.upstream = false // the decision made upstream reached the asker
	}
	q.decision, q.Status = &d, status
	return AnswerResult{QuestionID: q.ID, Delivered: true, Status: status}, &d, q.From, nil, nil
}

// same reports whether a decides a question as d did: the same answer,
// or the same deferral.
func (d *Decision) same(a AnswerArgs) bool {
	switch d.Kind {
	case "answer":
		return a.Answer != "" && a.Answer == d.Answer && a.DeferReason == "" && a.EscalateTo == ""
	case "defer":
		return a.DeferReason != "" && a.DeferReason == d.DeferReason && a.Answer == "" && a.EscalateTo == ""
	}
	return false
}

// list_questions pages: DefaultQuestionPage questions when the call sets
// no limit, at most MaxQuestionPage.
const (
	DefaultQuestionPage = 50
	MaxQuestionPage     = 100
)
