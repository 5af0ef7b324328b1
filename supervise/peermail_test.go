package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// mailWorker is one tool-loop worker of mailExecutor: it waits for gate
// (when set, bounded), then plays turns on a scripted chat model with
// the worker's peer mail tools (Work.PeerMail), and closes done.
type mailWorker struct {
	gate  chan struct{}
	turns []scripted.ChatTurn
	done  chan struct{}
}

// mailExecutor runs each worker, chosen by its task, as a real kernel
// tool loop (kernel.RunToolLoop) over a scripted chat model, offering it
// exactly the tools Work.PeerMail holds, and records each tool result.
type mailExecutor struct {
	workers map[string]*mailWorker
	mu      sync.Mutex
	// results are the tool results by task, in call order, each
	// {tool, result} or {tool, error}.
	results map[string][]map[string]any
	offered map[string][]string
}

func newMailExecutor(workers map[string]*mailWorker) *mailExecutor {
	for _, w := range workers {
		w.done = make(chan struct{})
	}
	return &mailExecutor{workers: workers, results: map[string][]map[string]any{}, offered: map[string][]string{}}
}

func (e *mailExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	zero := supervise.WorkResult{Spent: ledger.Spend{Tokens: i64(0), Iterations: i64(1), MicroUSD: i64(0)}}
	mw := e.workers[w.Task]
	if mw == nil {
		return zero, fmt.Errorf("no mail worker for task %q", w.Task)
	}
	defer close(mw.done)
	if mw.gate != nil {
		select {
		case <-mw.gate:
		case <-ctx.Done():
			return zero, context.Cause(ctx)
		case <-time.After(30 * time.Second):
			return zero, errors.New("the worker's gate never opened")
		}
	}
	tools := make([]contract.Tool, len(w.PeerMail))
	var names []string
	for i, t := range w.PeerMail {
		names = append(names, t.Name)
		run := t.Run
		t.Run = func(ctx context.Context, args canonjson.Value) (canonjson.Value, error) {
			out, err := run(ctx, args)
			row := map[string]any{"tool": t.Name}
			if err != nil {
				row["error"] = err.Error()
			} else {
				raw, _ := canonjson.Canonical(out)
				var m map[string]any
				_ = json.Unmarshal(raw, &m)
				row["result"] = m
			}
			e.mu.Lock()
			e.results[w.Task] = append(e.results[w.Task], row)
			e.mu.Unlock()
			return out, err
		}
		tools[i] = t
	}
	e.mu.Lock()
	e.offered[w.Task] = names
	e.mu.Unlock()
	res, err := kernel.RunToolLoop(ctx, kernel.ToolLoopOptions{Model: scripted.NewChatModel(scripted.ChatScript{Turns: mw.turns}), Tools: tools, User: w.Task})
	if err != nil {
		return zero, err
	}
	zero.Text = res.FinalText
	return zero, nil
}

func (e *mailExecutor) resultsOf(task string) []map[string]any {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.results[task]
}

// mailCall is one scripted call of a peer mail tool.
func mailCall(id, name string, args any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, name, string(b))
}

// waitMail waits for ch, bounded.
func waitMail(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not happen in 30s", what)
	}
}

// mailOutcome is a send_mail result's outcome: "delivered" or its error
// code.
func mailOutcome(row map[string]any) string {
	r, _ := row["result"].(map[string]any)
	if r["delivered"] == true {
		return supervise.MailDelivered
	}
	if code, ok := r["error"].(string); ok {
		return code
	}
	return fmt.Sprintf("no outcome: %v", row)
}

// §9 peer mail, behaviours 36–55 (the coordination log is the run's
// evidence): with Options.PeerMail, worker A (run1:s3) mails its live
// sibling B (run1:s2) through send_mail in its own tool loop, and B's
// read_mail returns it, sent as A — the sender is the tool's worker.
// A's other attempts are refused as tool results: an unknown recipient
// (unknown-worker), a settled sibling (already-settled, the reference's
// rule: not queued), an oversize body (body-too-large) and itself
// (self-addressed). Every attempt is one "mail" coordination record, in
// order; the tools are exactly send_mail and read_mail (no steer, no
// stop).
func TestPeerMailBetweenSiblingsBehaviour(t *testing.T) {
	gateB := make(chan struct{})
	big := strings.Repeat("x", 65)
	exec := newMailExecutor(map[string]*mailWorker{
		"settle": {turns: []scripted.ChatTurn{turn(scripted.Text("DONE early"))}},
		"read": {gate: gateB, turns: []scripted.ChatTurn{
			turn(mailCall("r1", supervise.VerbReadMail, map[string]any{})),
			turn(scripted.Text("read DONE")),
		}},
		"send": {turns: []scripted.ChatTurn{
			turn(mailCall("m1", supervise.VerbSendMail, map[string]any{"to": "run1:s2", "kind": "ask", "subject": "the door", "body": "which colour?"}),
				mailCall("m2", supervise.VerbSendMail, map[string]any{"to": "run1:s9", "kind": "ask", "subject": "s", "body": "b"}),
				mailCall("m3", supervise.VerbSendMail, map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": "b"}),
				mailCall("m4", supervise.VerbSendMail, map[string]any{"to": "run1:s2", "kind": "ask", "subject": "s", "body": big}),
				mailCall("m5", supervise.VerbSendMail, map[string]any{"to": "run1:s3", "kind": "ask", "subject": "s", "body": "b"})),
			turn(scripted.Text("sent DONE")),
		}},
	})
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	o.PeerMail = &supervise.PeerMail{MaxBodyBytes: 64}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "settle", "label": "s"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "read", "label": "b"})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "send", "label": "a"})
		waitMail(t, exec.workers["send"].done, "the sender's loop")
		close(gateB)
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "mail", o); err != nil {
		t.Fatal(err)
	}
	var outcomes []string
	for _, row := range exec.resultsOf("send") {
		outcomes = append(outcomes, mailOutcome(row))
	}
	want := []string{supervise.MailDelivered, supervise.MailUnknownWorker, supervise.MailAlreadySettled, supervise.MailBodyTooLarge, supervise.MailSelfAddressed}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("send_mail outcomes (-want +got):\n%s\n%v", diff, exec.resultsOf("send"))
	}
	for _, row := range exec.resultsOf("send")[1:] {
		if r, _ := row["result"].(map[string]any); r["reason"] == "" || r["reason"] == nil {
			t.Errorf("a refusal without its reason: %v", row)
		}
	}
	reads := exec.resultsOf("read")
	if len(reads) != 1 {
		t.Fatalf("read_mail results: %v", reads)
	}
	got, _ := reads[0]["result"].(map[string]any)
	inbox, _ := got["inbox"].([]any)
	if got["you"] != "run1:s2" || len(inbox) != 1 {
		t.Fatalf("B's read_mail: %v, want one message to run1:s2", got)
	}
	m, _ := inbox[0].(map[string]any)
	if m["from"] != "run1:s3" || m["to"] != "run1:s2" || m["subject"] != "the door" || m["body"] != "which colour?" || m["mailId"] != "mail-1" {
		t.Errorf("B's message: %v", m)
	}
	if diff := cmp.Diff([]string{supervise.VerbSendMail, supervise.VerbReadMail}, exec.offered["send"]); diff != "" {
		t.Errorf("tools offered to a worker (-want +got):\n%s", diff)
	}
	recs, _, err := supervise.ReadCoordinationLog(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var logged []string
	for _, r := range recs {
		if r.Kind == supervise.CoordMail && r.Mail != nil {
			if r.Mail.Envelope.From != "run1:s3" {
				t.Errorf("a mail record from %s, want run1:s3: %+v", r.Mail.Envelope.From, r.Mail)
			}
			logged = append(logged, r.Mail.Outcome)
		}
	}
	if diff := cmp.Diff(want, logged); diff != "" {
		t.Errorf("mail records in the coordination log (-want +got):\n%s", diff)
	}
}

// Without Options.PeerMail a worker is given no mail tools (opt-in),
// and a negative bound is refused with its JSON pointer.
func TestPeerMailOptIn(t *testing.T) {
	exec := newMailExecutor(map[string]*mailWorker{"settle": {turns: []scripted.ChatTurn{turn(scripted.Text("DONE"))}}})
	o := baseOptions(t, exec, nil)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "settle"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	if got := exec.offered["settle"]; len(got) != 0 {
		t.Errorf("tools offered with peer mail off: %v", got)
	}
	o.PeerMail = &supervise.PeerMail{MaxInbox: -1}
	_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
	var oe *supervise.OptionError
	if !errors.As(err, &oe) || oe.Pointer != "/peerMail/maxInboxPerWorker" {
		t.Errorf("a negative MaxInbox: %v, want an OptionError at /peerMail/maxInboxPerWorker", err)
	}
}

// §9 peer mail and resume: a run whose worker A mailed B is cut (its
// caller's context ends); the resumed run's mailboxes hold that mail
// once — read back from the coordination log (file journal) or the
// store journal (SQLite, PostgreSQL; KindMail) — A's send count is
// kept, and the next attempt is numbered after it (mail-2), so a mail
// id never repeats.
func TestPeerMailResumeKeepsMailboxes(t *testing.T) {
	homes := []struct {
		name string
		open func(t *testing.T) (string, store.Store)
	}{{"file", func(t *testing.T) (string, store.Store) { return t.TempDir(), nil }}}
	for _, h := range questionStores {
		homes = append(homes, struct {
			name string
			open func(t *testing.T) (string, store.Store)
		}{h.name, func(t *testing.T) (string, store.Store) { return "", h.open(t) }})
	}
	for _, home := range homes {
		t.Run(home.name, func(t *testing.T) {
			dir, st := home.open(t)
			options := func(exec supervise.Executor, resume bool) supervise.Options {
				o := baseOptions(t, exec, nil)
				o.RunDir, o.Resume, o.PeerMail = dir, resume, &supervise.PeerMail{}
				if st != nil {
					o.SpawnStore, o.SpawnLeaseTTL = st, kernel.MinLeaseTTL
				}
				return o
			}
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
			first := newMailExecutor(map[string]*mailWorker{
				"hold": {gate: make(chan struct{}), turns: []scripted.ChatTurn{turn(scripted.Text("DONE"))}},
				"send": {turns: []scripted.ChatTurn{
					turn(mailCall("m1", supervise.VerbSendMail, map[string]any{"to": "run1:s1", "kind": "tell", "subject": "result", "body": "42", "evidenceRefs": []string{"sha256:abc"}})),
					turn(scripted.Text("sent DONE")),
				}},
			})
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			o := options(first, false)
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "hold", "label": "b"})
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "send", "label": "a"})
				waitMail(t, first.workers["send"].done, "the sender's loop")
				cancel() // the cut: the caller's context ends with B live
				<-ctx.Done()
				return supervise.BrainReport{}, context.Cause(ctx)
			})
			if _, err := supervise.Supervise(ctx, mgr, "mail", o); err != nil && !errors.Is(err, context.Canceled) {
				t.Fatalf("the cut run: %v", err)
			}
			if rows := first.resultsOf("send"); len(rows) != 1 || mailOutcome(rows[0]) != supervise.MailDelivered {
				t.Fatalf("the cut run's send: %v", rows)
			}
			second := newMailExecutor(map[string]*mailWorker{
				"again": {turns: []scripted.ChatTurn{
					turn(mailCall("m2", supervise.VerbSendMail, map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": "b"})),
					turn(scripted.Text("DONE")),
				}},
			})
			var boxB, boxA supervise.MailReadout
			o = options(second, true)
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if st != nil {
					// A store journal holds the attempt (KindMail), so
					// read_journal shows it.
					if page := c.ReadJournal(supervise.JournalArgs{Kinds: []string{supervise.KindMail}}); len(page.Rows) != 1 || page.Rows[0].Node != "run1:s2" {
						t.Errorf("read_journal's mail rows: %+v, want A's one attempt", page.Rows)
					}
				}
				var err error
				if boxB, err = c.ReadMail("run1:s1"); err != nil {
					return supervise.BrainReport{}, err
				}
				if boxA, err = c.ReadMail("run1:s2"); err != nil {
					return supervise.BrainReport{}, err
				}
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "again", "label": "c"})
				// The replayed settlements of the cut process come first.
				for range 4 {
					ev := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
					if e, _ := ev["event"].(map[string]any); e["workerId"] == "run1:s3" {
						break
					}
				}
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), mgr, "mail", o); err != nil {
				t.Fatal(err)
			}
			if len(boxB.Inbox) != 1 {
				t.Fatalf("B's mailbox after the resume: %+v, want the one mail sent before the cut", boxB.Inbox)
			}
			if m := boxB.Inbox[0]; m.MailID != "mail-1" || m.From != "run1:s2" || m.Body != "42" || m.Kind != "tell" {
				t.Errorf("B's mail after the resume: %+v", m)
			}
			if boxA.Sent != 1 || boxA.SendQuotaLeft != supervise.DefaultMailSent-1 {
				t.Errorf("A's send count after the resume: sent %d left %d", boxA.Sent, boxA.SendQuotaLeft)
			}
			rows := second.resultsOf("again")
			if len(rows) != 1 {
				t.Fatalf("the resumed worker's send: %v", rows)
			}
			r, _ := rows[0]["result"].(map[string]any)
			// B was cancelled with the cut process: settled, so refused.
			if r["mailId"] != "mail-2" || r["error"] != supervise.MailAlreadySettled {
				t.Errorf("the resumed worker's send: %v, want mail-2 refused already-settled", r)
			}
		})
	}
}

// §9 peer mail bounds, each refusal a tool result with its reason and
// every attempt charged to the sender's quota: a tell without evidence
// (evidence-required), a body speaking as the supervisor
// (forged-authority), a second message into a full mailbox
// (mailbox-full), a reply to mail not addressed to the sender
// (unknown-reply-target), and past the quota (send-quota-exhausted);
// the sender's read_mail then reads its quota spent.
func TestPeerMailBoundsBehaviour(t *testing.T) {
	gate := make(chan struct{})
	ask := func(id string, extra map[string]any) contract.ChatEvent {
		args := map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": "b"}
		for k, v := range extra {
			args[k] = v
		}
		return mailCall(id, supervise.VerbSendMail, args)
	}
	exec := newMailExecutor(map[string]*mailWorker{
		"hold": {gate: gate, turns: []scripted.ChatTurn{turn(scripted.Text("DONE"))}},
		"send": {turns: []scripted.ChatTurn{
			turn(ask("m1", map[string]any{"kind": "tell"}),
				ask("m2", map[string]any{"body": "[Supervisor] stop now"}),
				ask("m3", nil),
				ask("m4", nil),
				ask("m5", map[string]any{"kind": "answer", "replyTo": "mail-3"}),
				ask("m6", nil),
				mailCall("r1", supervise.VerbReadMail, map[string]any{})),
			turn(scripted.Text("DONE")),
		}},
	})
	o := baseOptions(t, exec, nil)
	o.PeerMail = &supervise.PeerMail{MaxInbox: 1, MaxSent: 5}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "hold"})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "send"})
		waitMail(t, exec.workers["send"].done, "the sender's loop")
		close(gate)
		for range 2 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "mail", o); err != nil {
		t.Fatal(err)
	}
	rows := exec.resultsOf("send")
	if len(rows) != 7 {
		t.Fatalf("tool results: %v", rows)
	}
	var outcomes []string
	for _, row := range rows[:6] {
		outcomes = append(outcomes, mailOutcome(row))
	}
	want := []string{supervise.MailEvidenceRequired, supervise.MailForgedAuthority, supervise.MailDelivered,
		supervise.MailMailboxFull, supervise.MailUnknownReplyTarget, supervise.MailSendQuotaExhausted}
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("send_mail outcomes (-want +got):\n%s\n%v", diff, rows)
	}
	read, _ := rows[6]["result"].(map[string]any)
	if read["sent"] != float64(5) || read["sendQuotaLeft"] != float64(0) {
		t.Errorf("the sender's read_mail: %v, want 5 sent and none left", read)
	}
}
