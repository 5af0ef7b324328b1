package supervise

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
)

// KindTranscript is a journal record of a router manager's conversation
// (RouterBrain): the messages its tool loop gained since the previous
// such record (kernel.ToolLoopOptions.Checkpoint), under the manager's
// node — the run's root, or a nested manager's id. The records of one
// node, concatenated, are its transcript after the system prompt and the
// task: a resumed run feeds them back (kernel.ToolLoopOptions.Recorded),
// so the manager goes on from where it was rather than starting over,
// and a call the last record left without a result runs again exactly as
// the model made it (a spawn then replays its journaled child). Replay
// passes the records over, and read_journal leaves them out unless asked
// for them by kind.
const KindTranscript = "transcript"

// TranscriptMessage is one journaled chat message of a manager's
// transcript. A message too large to sit in the journal is kept in a
// content-addressed blob (like a settlement's outRef): Ref names it and
// nothing else is set.
type TranscriptMessage struct {
	Role       contract.ChatRole `json:"role,omitzero"`
	Content    *string           `json:"content,omitzero"`
	ToolCalls  []TranscriptCall  `json:"toolCalls,omitzero"`
	ToolCallID string            `json:"toolCallId,omitzero"`
	Ref        string            `json:"ref,omitzero"`
	// Took, on the tool message of an await_event call, is the event
	// the call took from the manager's queue: a resumed run's queue
	// holds the replayed settlements again, and drops the ones the
	// conversation already has. On a user message of root steers it
	// names them (Kind TakenSteer): a resumed run re-offers a steer
	// whose acknowledgement was never journaled unless the conversation
	// already has it.
	Took []TakenEvent `json:"took,omitzero"`
	// Asked, on the tool message of a nested manager's ask_parent call
	// that queued a question at its parent manager, is that question's
	// id: the manager driven again on resume still waits for its
	// decision (reofferAsked).
	Asked string `json:"asked,omitzero"`
}

// TakenSteer is the Kind of a TakenEvent that names a root steer the
// transcript's user message holds, by its OperationID.
const TakenSteer = "steer"

// TakenEvent names an event await_event returned: its kind and worker,
// and for a question its id; or a root steer a user message holds (Kind
// TakenSteer): its operation id.
type TakenEvent struct {
	Kind        string `json:"kind"`
	WorkerID    NodeID `json:"workerId"`
	QuestionID  string `json:"questionId,omitzero"`
	OperationID string `json:"operationId,omitzero"`
	// Online marks a taken online finding (Options.WatchWorkers): an
	// event about a worker that is not its settlement, which a resumed
	// run does not queue again.
	Online bool `json:"online,omitzero"`
}

// TranscriptCall is a journaled tool call: its id, tool name and
// arguments, exactly as the model made it.
type TranscriptCall struct {
	ID   string          `json:"id"`
	Name string          `json:"name"`
	Args canonjson.Value `json:"args,omitzero"`
}

// Transcript blob thresholds: a message larger than maxInlineMessage,
// and every message once a record holds maxInlineRecord, goes to a blob,
// so that a record stays well under the journal's record limit
// (journal.DefaultMaxRecordBytes).
const (
	maxInlineMessage = 16 << 10
	maxInlineRecord  = 256 << 10
)

func transcriptMessage(m contract.ChatMessage) TranscriptMessage {
	t := TranscriptMessage{Role: m.Role, Content: m.Content, ToolCallID: m.ToolCallID}
	for _, c := range m.ToolCalls {
		t.ToolCalls = append(t.ToolCalls, TranscriptCall{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	return t
}

func (t TranscriptMessage) chat() contract.ChatMessage {
	m := contract.ChatMessage{Role: t.Role, Content: t.Content, ToolCallID: t.ToolCallID}
	for _, c := range t.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, contract.ToolCall{ID: c.ID, Name: c.Name, Args: c.Args})
	}
	return m
}

// size is about how many bytes t takes in the journal.
func (t TranscriptMessage) size() int {
	n := 64 + len(t.ToolCallID)
	if t.Content != nil {
		n += len(*t.Content)
	}
	for _, c := range t.ToolCalls {
		n += 32 + len(c.ID) + len(c.Name)
		if c.Args.IsValid() {
			n += len(canonjson.Marshal(c.Args))
		}
	}
	return n
}

// transcriptJournal journals one Drive's conversation for the manager c
// serves (checkpoint) and notes the events its await_event calls take
// (awaiting).
type transcriptJournal struct {
	c *Coordinator
	// inbox is the manager's root inbox (nil when it has none); steers
	// are the steers interject took from it that no checkpoint has
	// journaled yet: the next successful one confirms them delivered.
	inbox  *Inbox
	steers []*posting
	// took is what the await_event call whose tool message is not yet
	// journaled took; the loop runs its calls one at a time, on its own
	// goroutine, and checkpoints after each.
	took []TakenEvent
	// asked is the question the ask_parent call whose tool message is
	// not yet journaled queued at the parent manager ("" when none).
	asked string
	// awaited are the events await_event calls took whose tool
	// messages were not journaled yet: a call the loop does not record
	// (its context ended) never handed its event to the manager, and
	// release puts it back in the queue.
	awaited []heldEvent
	// turn is the spend of the model turn that ended last, charged
	// already and not journaled yet (nil when none): the next
	// checkpoint, which journals what that turn said, carries it
	// (Record.Spent), so a resumed run either has the turn's answer and
	// its charge or neither. A turn no checkpoint follows gets its own
	// metered record (flushTurn).
	turn *ledger.Spend
}

// turnEnded holds the spend sp of the model turn that just ended,
// charged already, for the next checkpoint. A turn held before it that
// no checkpoint journaled (none follows a turn that failed) gets its
// own metered record first.
func (j *transcriptJournal) turnEnded(ctx context.Context, sp ledger.Spend) error {
	err := j.flushTurn(ctx)
	j.turn = &sp
	return err
}

// flushTurn journals the held turn's spend, if any, as a metered record:
// the turn ended without a checkpoint journaling it (it failed, the loop
// ended, or the checkpoint was refused).
func (j *transcriptJournal) flushTurn(ctx context.Context) error {
	if j.turn == nil {
		return nil
	}
	sp := *j.turn
	j.turn = nil
	return j.c.journalMetered(context.WithoutCancel(ctx), sp)
}

// heldEvent is an event an await_event call took, with its place in the
// recorded order (Coordinator.untake).
type heldEvent struct {
	ev  Event
	seq int64
}

// awaitNoteKey is the context key under which awaiting asks Await to
// note the event it takes (an *awaitNote).
type awaitNoteKey struct{}

// awaitNote is the event one Await call took, if took; hold asks Await
// to count it held (Coordinator.held) until PutBackUnreturned settles it.
type awaitNote struct {
	ev   Event
	seq  int64
	took bool
	hold bool
}

// awaiting wraps the await_event tool t so that the event each call
// returns is noted for the tool message that carries it.
func (j *transcriptJournal) awaiting(t contract.Tool) contract.Tool {
	run := t.Run
	t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		note := &awaitNote{}
		v, err := run(context.WithValue(ctx, awaitNoteKey{}, note), args)
		j.took = j.took[:0]
		if note.took {
			if err != nil {
				// Taken, but not in the result: back in the queue.
				j.c.untake(note.ev, note.seq)
			} else {
				j.awaited = append(j.awaited, heldEvent{ev: note.ev, seq: note.seq})
			}
		}
		if err == nil {
			kind, k := canonjson.Resolve(v, "/event/kind")
			worker, w := canonjson.Resolve(v, "/event/workerId")
			if k && w {
				t := TakenEvent{Kind: kind.Str(), WorkerID: NodeID(worker.Str())}
				if id, ok := canonjson.Resolve(v, "/event/question/id"); ok {
					t.QuestionID = id.Str()
				}
				if lens, ok := canonjson.Resolve(v, "/event/lens"); ok && strings.HasPrefix(lens.Str(), OnlineLensPrefix) {
					t.Online = true
				}
				j.took = append(j.took, t)
			}
		}
		return v, err
	}
	return t
}

// asking wraps the ask_parent tool t so that the question a nested
// manager's call queued at its parent is noted for the tool message
// that carries it.
func (j *transcriptJournal) asking(t contract.Tool) contract.Tool {
	run := t.Run
	t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
		v, err := run(ctx, args)
		j.asked = ""
		if err == nil {
			status, s := canonjson.Resolve(v, "/status")
			id, i := canonjson.Resolve(v, "/questionId")
			if s && i && status.Str() == "queued-for-parent" {
				j.asked = id.Str()
			}
		}
		return v, err
	}
	return t
}

// checkpoint is the router brain's kernel.ToolLoopOptions.Checkpoint: it
// journals the messages the transcript gained as one KindTranscript
// record under the manager's node, through the run's journal (its fence
// included), large messages as blobs, with the spend of the model turn
// that ended since the previous one (what that turn said is among
// them). Its error stops the manager's loop; the turn's spend then gets
// its own metered record.
func (j *transcriptJournal) checkpoint(ctx context.Context, appended []contract.ChatMessage) error {
	c := j.c
	msgs := make([]TranscriptMessage, len(appended))
	inline := 0
	lastTool, lastUser := -1, -1
	for i, m := range appended {
		switch m.Role {
		case contract.ChatTool:
			lastTool = i
		case contract.ChatUser:
			lastUser = i
		}
	}
	for i, m := range appended {
		t := transcriptMessage(m)
		if i == lastTool && len(j.took) > 0 {
			t.Took = slices.Clone(j.took)
			j.took = j.took[:0]
		}
		if i == lastUser && len(j.steers) > 0 {
			// The interjected user messages hold the held steers: the
			// last of them names them all.
			for _, p := range j.steers {
				t.Took = append(t.Took, TakenEvent{Kind: TakenSteer, WorkerID: c.self, OperationID: p.msg.OperationID})
			}
		}
		if i == lastTool && j.asked != "" {
			t.Asked, j.asked = j.asked, ""
		}
		if n := t.size(); n <= maxInlineMessage && inline+n <= maxInlineRecord {
			inline += n
			msgs[i] = t
			continue
		}
		v, err := canonjson.ToValue(t)
		if err != nil {
			return fmt.Errorf("supervise: journaling the manager's transcript: %w", err)
		}
		ref, err := c.log.putBlob(ctx, v)
		if err != nil {
			return errors.Join(fmt.Errorf("supervise: journaling the manager's transcript: %w", err), j.flushTurn(ctx))
		}
		msgs[i] = TranscriptMessage{Ref: ref}
	}
	rec := Record{Kind: KindTranscript, Node: c.self, Messages: msgs}
	if j.turn != nil {
		rec.Spent = spendRecord(*j.turn)
	}
	if err := c.log.append(ctx, rec); err != nil {
		j.releaseHeld(ctx)
		return errors.Join(fmt.Errorf("supervise: journaling the manager's transcript: %w", err), j.flushTurn(ctx))
	}
	j.turn = nil
	// The steers are in the journaled transcript: delivered.
	j.inbox.confirm(ctx, j.steers)
	j.steers = nil
	if lastTool >= 0 {
		// The await's result is the manager's now: its event is taken.
		j.awaited = j.awaited[:0]
	}
	return nil
}

// releaseHeld gives back the steers the loop took that no checkpoint
// journaled: a later turn, or a resumed process, takes them again.
func (j *transcriptJournal) releaseHeld(ctx context.Context) {
	j.inbox.release(context.WithoutCancel(ctx), j.steers)
	j.steers = nil
}

// release puts back in c's queue, in their recorded order, the events
// await_event calls took that the loop never recorded as a result: the
// manager never saw them, so the next await returns them (in this
// process; across a resume see replayQuestions).
func (j *transcriptJournal) release() {
	for i := len(j.awaited) - 1; i >= 0; i-- {
		j.c.untake(j.awaited[i].ev, j.awaited[i].seq)
	}
	j.awaited = nil
}

// recordedTranscript is the transcript earlier processes journaled for
// c's manager (nil when none did: a fresh run, or a journal written
// before transcripts were), blobs read back, and the events its
// await_event calls took and the questions its ask_parent calls queued
// at its parent (TranscriptMessage.Asked).
func (c *Coordinator) recordedTranscript() ([]contract.ChatMessage, []TakenEvent, []string, error) {
	var recs []Record
	c.log.mu.Lock()
	for i := range c.log.rows.len() {
		if r := c.log.rows.at(i); r.Kind == KindTranscript && r.Node == c.self {
			recs = append(recs, *r)
		}
	}
	c.log.mu.Unlock()
	var out []contract.ChatMessage
	var took []TakenEvent
	var asked []string
	for _, r := range recs {
		for _, t := range r.Messages {
			if t.Ref != "" {
				v, err := c.log.getBlob(t.Ref)
				if err != nil {
					return nil, nil, nil, &ResumeError{RunDir: c.log.where, Reason: "reading back the manager " + string(c.self) + "'s transcript", Err: err}
				}
				var full TranscriptMessage
				if err := canonjson.FromValue(v, &full); err != nil || full.Ref != "" {
					return nil, nil, nil, &ResumeError{RunDir: c.log.where, Reason: "reading back the manager " + string(c.self) + "'s transcript: blob " + t.Ref + " is not a message", Err: err}
				}
				t = full
			}
			out = append(out, t.chat())
			took = append(took, t.Took...)
			if t.Asked != "" {
				asked = append(asked, t.Asked)
			}
		}
	}
	return out, took, asked, nil
}

// dropTaken removes from c's event queue, for each settlement (or
// finding) a recorded await_event call took, the earliest queued
// settlement or finding of its worker: the replayed settlement the
// resumed conversation already has. A worker settles once, queued under
// one kind, so the taken event's kind need not be its queue's (a graph
// names an analyst node's settlement a finding). A taken question is
// passed over: the replay does not queue questions again, so a question
// queued now is a new one (asked again by a nested manager driven
// again, or a recovered worker). It is one pass over each kind's queue,
// whatever the number taken: a resumed manager of a wide run took about
// as many as are queued.
func (c *Coordinator) dropTaken(took []TakenEvent) {
	left := map[NodeID]int{} // worker → how many to drop
	for _, t := range took {
		if t.Kind != EventSettled && t.Kind != EventFinding || t.Online {
			continue // not queued again by the replay (publishReplayed)
		}
		left[t.WorkerID]++
	}
	if len(left) == 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, kind := range []string{EventSettled, EventFinding} {
		q := c.queued[kind]
		if q == nil {
			continue
		}
		// The earliest n events of a worker are dropped: each taken
		// event removes the earliest of its worker still queued.
		kept := q.head
		for i := q.head; i < len(q.events); i++ {
			if w := q.events[i].WorkerID; left[w] > 0 {
				left[w]--
				continue
			}
			q.events[kept], q.seqs[kept] = q.events[i], q.seqs[i]
			kept++
		}
		clear(q.events[kept:])
		q.events, q.seqs = q.events[:kept], q.seqs[:kept]
	}
}
