package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// sendAs calls c.SendMail as worker from with args (a Go value, or a
// raw JSON document when a string), and returns the result's outcome —
// MailDelivered or its refusal code — its mailId, and the error of a
// call that was no attempt.
func sendAs(ctx context.Context, c *supervise.Coordinator, from supervise.NodeID, args any) (outcome, mailID string, err error) {
	var v canonjson.Value
	if raw, ok := args.(string); ok {
		v, err = canonjson.Decode([]byte(raw))
	} else {
		v, err = canonjson.ToValue(args)
	}
	if err != nil {
		return "", "", err
	}
	out, err := c.SendMail(ctx, from, v)
	if err != nil {
		return "", "", err
	}
	var m map[string]any
	if err := json.Unmarshal(canonjson.Marshal(out), &m); err != nil {
		return "", "", err
	}
	id, _ := m["mailId"].(string)
	if m["delivered"] == true {
		return supervise.MailDelivered, id, nil
	}
	code, _ := m["error"].(string)
	if reason, _ := m["reason"].(string); code == "" || reason == "" {
		return "", id, fmt.Errorf("a refusal without its code or reason: %v", m)
	}
	return code, id, nil
}

// mailLog is the run dir's mail records: outcome by mailId, and the ids
// in journal order.
func mailLog(t *testing.T, dir string) (map[string]string, []string) {
	t.Helper()
	recs, skipped, err := supervise.ReadCoordinationLog(context.Background(), dir)
	if err != nil || skipped != 0 {
		t.Fatalf("reading the coordination log: %v (%d skipped)", err, skipped)
	}
	byID, order := map[string]string{}, []string{}
	for _, r := range recs {
		if r.Kind != supervise.CoordMail || r.Mail == nil {
			continue
		}
		if _, dup := byID[r.Mail.Envelope.MailID]; dup {
			t.Errorf("mail %s journaled twice", r.Mail.Envelope.MailID)
		}
		byID[r.Mail.Envelope.MailID] = r.Mail.Outcome
		order = append(order, r.Mail.Envelope.MailID)
	}
	return byID, order
}

// §9 peer mail bounds at and one past each limit, with the reference's
// defaults (8 sends and 16 received messages per worker): a sender's
// 8th send is delivered and its 9th refused send-quota-exhausted; a
// recipient's 16th message is delivered and its 17th refused
// mailbox-full; and 32 KiB of received body bytes (counted in UTF-8
// bytes, a two-byte rune at a time) is delivered where one byte more is
// refused mailbox-full. Every attempt, delivered or refused, is one
// mail record, each id once; nothing past a bound reaches an inbox.
func TestPeerMailBoundsExactlyAtAndPast(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	o.PeerMail = &supervise.PeerMail{MaxBodyBytes: 32 << 10}
	ask := func(to, body string) map[string]any {
		return map[string]any{"to": to, "kind": "ask", "subject": "s", "body": body}
	}
	type attempt struct {
		from, to, body string
		want           string
	}
	var attempts []attempt
	// R (s1) receives; A (s2) and B (s3) send 8 each; C (s4) sends the
	// 17th; D (s5) takes the 32 KiB.
	for i := range 8 {
		attempts = append(attempts, attempt{"run1:s2", "run1:s1", fmt.Sprintf("a%d", i), supervise.MailDelivered})
	}
	attempts = append(attempts, attempt{"run1:s2", "run1:s5", "a9", supervise.MailSendQuotaExhausted})
	for i := range 8 {
		attempts = append(attempts, attempt{"run1:s3", "run1:s1", fmt.Sprintf("b%d", i), supervise.MailDelivered})
	}
	attempts = append(attempts,
		attempt{"run1:s4", "run1:s1", "c17", supervise.MailMailboxFull},
		attempt{"run1:s4", "run1:s5", strings.Repeat("é", 16<<10) + "x", supervise.MailBodyTooLarge},
		attempt{"run1:s4", "run1:s5", strings.Repeat("é", 16<<10), supervise.MailDelivered},
		attempt{"run1:s4", "run1:s5", "x", supervise.MailMailboxFull},
	)
	var got []string
	var ids []string
	var boxR, boxD, boxA supervise.MailReadout
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for range 5 {
			tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		}
		for _, a := range attempts {
			out, id, err := sendAs(ctx, c, supervise.NodeID(a.from), ask(a.to, a.body))
			if err != nil {
				t.Errorf("%s -> %s: %v", a.from, a.to, err)
			}
			got, ids = append(got, out), append(ids, id)
		}
		var err error
		if boxR, err = c.ReadMail("run1:s1"); err != nil {
			return supervise.BrainReport{}, err
		}
		if boxD, err = c.ReadMail("run1:s5"); err != nil {
			return supervise.BrainReport{}, err
		}
		if boxA, err = c.ReadMail("run1:s2"); err != nil {
			return supervise.BrainReport{}, err
		}
		close(exec.gate)
		for range 5 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range attempts {
		want = append(want, a.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(boxR.Inbox) != 16 {
		t.Errorf("R's inbox holds %d messages, want 16", len(boxR.Inbox))
	}
	if len(boxD.Inbox) != 1 || len(boxD.Inbox[0].Body) != 32<<10 {
		t.Errorf("D's inbox: %d messages, want one of 32 KiB", len(boxD.Inbox))
	}
	if boxA.Sent != 8 || boxA.SendQuotaLeft != 0 {
		t.Errorf("A's read_mail: sent %d left %d, want 8 and 0", boxA.Sent, boxA.SendQuotaLeft)
	}
	logged, order := mailLog(t, o.RunDir)
	if len(order) != len(attempts) {
		t.Errorf("%d mail records, want one per attempt (%d): %v", len(order), len(attempts), order)
	}
	for i, id := range ids {
		if logged[id] != want[i] {
			t.Errorf("attempt %d (%s) journaled %q, want %q", i, id, logged[id], want[i])
		}
	}
}

// §9 peer mail addressing and hostile arguments: mail to itself, to a
// settled sibling, to the manager, to an unknown id, to a label, and to
// a sibling spawned only after the send is refused as a tool result
// (each journaled once, the late sibling's inbox left empty); arguments
// that describe no message — wrong types, extra fields, an empty body,
// no object at all — are ErrMailArgs, never a panic, never journaled.
func TestPeerMailAddressingAndHostileArgs(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.RunDir = t.TempDir()
	o.PeerMail = &supervise.PeerMail{}
	ask := func(to string) map[string]any {
		return map[string]any{"to": to, "kind": "ask", "subject": "s", "body": "b"}
	}
	addressed := []struct {
		to, want string
	}{
		{"run1:s2", supervise.MailSelfAddressed},
		{"run1:s1", supervise.MailAlreadySettled},
		{"run1", supervise.MailUnknownWorker},
		{"run1:s99", supervise.MailUnknownWorker},
		{"peer", supervise.MailUnknownWorker},
		{"run1:s4", supervise.MailUnknownWorker}, // spawned after
	}
	hostile := []any{
		`{"to":5,"kind":"ask","subject":"s","body":"b"}`,
		`{"to":"run1:s3","kind":"ask","subject":"s","body":"b","from":"run1:s3"}`,
		`{"to":"run1:s3","kind":"ask","subject":"s","body":""}`,
		`{"to":"run1:s3","kind":"order","subject":"s","body":"b"}`,
		`{"to":"run1:s3","kind":"tell","subject":"s","body":"b","evidenceRefs":"sha256:x"}`,
		`{"to":"run1:s3","kind":"tell","subject":"s","body":"b","evidenceRefs":[""]}`,
		`[1,2]`, `null`, `"run1:s3"`, `{}`,
	}
	var got []string
	var hostileErrs []error
	var lateBox supervise.MailReadout
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("settle"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live", "label", "peer"))
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		for _, a := range addressed {
			out, _, err := sendAs(ctx, c, "run1:s2", ask(a.to))
			if err != nil {
				t.Errorf("to %s: %v", a.to, err)
			}
			got = append(got, out)
		}
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		for _, h := range hostile {
			_, _, err := sendAs(ctx, c, "run1:s2", h)
			hostileErrs = append(hostileErrs, err)
		}
		// No args at all (an absent value).
		_, err := c.SendMail(ctx, "run1:s2", canonjson.Value{})
		hostileErrs = append(hostileErrs, err)
		if lateBox, err = c.ReadMail("run1:s4"); err != nil {
			return supervise.BrainReport{}, err
		}
		close(exec.gate)
		for range 3 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, a := range addressed {
		want = append(want, a.want)
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	for i, err := range hostileErrs {
		if !errors.Is(err, supervise.ErrMailArgs) {
			t.Errorf("hostile args %d: %v, want ErrMailArgs", i, err)
		}
	}
	if len(lateBox.Inbox) != 0 {
		t.Errorf("the sibling spawned after the send holds %+v", lateBox.Inbox)
	}
	if _, order := mailLog(t, o.RunDir); len(order) != len(addressed) {
		t.Errorf("%d mail records, want %d (hostile arguments journal nothing)", len(order), len(addressed))
	}
}

// §9 peer mail across resume, with and without the option: a run whose
// worker A mailed B (two delivered, one refused) is cut; a resume
// WITHOUT Options.PeerMail offers no mail tools and ReadMail says peer
// mail is off, and it journals nothing of mail; a further resume WITH
// it rebuilds the mailboxes from the records of the first process —
// B's two messages once, A's three attempts counted — and numbers the
// next attempt after them.
func TestPeerMailResumeWithoutThenWith(t *testing.T) {
	dir := t.TempDir()
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	ask := func(kind string) map[string]any {
		return map[string]any{"to": "run1:s1", "kind": kind, "subject": "s", "body": "b-" + kind}
	}
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.RunDir, o.PeerMail = dir, &supervise.PeerMail{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var first []string
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		for _, k := range []string{"ask", "tell", "ask"} {
			out, _, err := sendAs(ctx, c, "run1:s2", ask(k))
			if err != nil {
				t.Error(err)
			}
			first = append(first, out)
		}
		cancel()
		<-ctx.Done()
		return supervise.BrainReport{}, context.Cause(ctx)
	})
	if _, err := supervise.Supervise(ctx, mgr, "mail", o); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut run: %v", err)
	}
	if diff := cmp.Diff([]string{supervise.MailDelivered, supervise.MailEvidenceRequired, supervise.MailDelivered}, first); diff != "" {
		t.Fatalf("the cut run's sends (-want +got):\n%s", diff)
	}

	// Resumed without peer mail.
	exec2 := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	close(exec2.gate)
	o = baseOptions(t, exec2, nil)
	o.RunDir, o.Resume = dir, true
	// The resume says its workers lose the channel (3 mail records kept).
	var logged bytes.Buffer
	o.Logger = slog.New(slog.NewTextHandler(&logged, &slog.HandlerOptions{Level: slog.LevelWarn}))
	var offErr error
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		_, offErr = c.ReadMail("run1:s1")
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("settle"))
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), mgr, "mail", o); err != nil {
		t.Fatalf("the resume without peer mail: %v", err)
	}
	if offErr == nil {
		t.Error("ReadMail in a resume without peer mail answered, want peer mail off")
	}
	if got := logged.String(); !strings.Contains(got, "resumed without Options.PeerMail") || !strings.Contains(got, "mailRecords=3") {
		t.Errorf("the resume without peer mail logged %q, want a warning naming its 3 mail records", got)
	}
	exec2.mu.Lock()
	if tools := exec2.kept["settle"]; len(tools) != 0 {
		t.Errorf("a worker of the resume without peer mail was offered %d mail tools", len(tools))
	}
	exec2.mu.Unlock()

	// Resumed with it again.
	exec3 := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o = baseOptions(t, exec3, nil)
	o.RunDir, o.Resume, o.PeerMail = dir, true, &supervise.PeerMail{}
	var boxB, boxA supervise.MailReadout
	var next, nextID string
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		var err error
		if boxB, err = c.ReadMail("run1:s1"); err != nil {
			return supervise.BrainReport{}, err
		}
		if boxA, err = c.ReadMail("run1:s2"); err != nil {
			return supervise.BrainReport{}, err
		}
		a := tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		b := tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		from, _ := a["workerId"].(string)
		to, _ := b["workerId"].(string)
		next, nextID, err = sendAs(ctx, c, supervise.NodeID(from), map[string]any{"to": to, "kind": "ask", "subject": "s", "body": "b"})
		if err != nil {
			t.Error(err)
		}
		close(exec3.gate)
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), mgr, "mail", o); err != nil {
		t.Fatalf("the resume with peer mail: %v", err)
	}
	var got []string
	for _, m := range boxB.Inbox {
		got = append(got, m.MailID+" "+m.Body)
	}
	if diff := cmp.Diff([]string{"mail-1 b-ask", "mail-3 b-ask"}, got); diff != "" {
		t.Errorf("B's mailbox after the resumes (-want +got):\n%s", diff)
	}
	if boxA.Sent != 3 || boxA.SendQuotaLeft != supervise.DefaultMailSent-3 {
		t.Errorf("A's count after the resumes: sent %d left %d, want 3 and %d", boxA.Sent, boxA.SendQuotaLeft, supervise.DefaultMailSent-3)
	}
	if next != supervise.MailDelivered || nextID != "mail-4" {
		t.Errorf("the next attempt: %s %s, want mail-4 delivered", next, nextID)
	}
	if _, order := mailLog(t, dir); len(order) != 4 {
		t.Errorf("mail records: %v, want 4", order)
	}
}

// §9 peer mail under concurrency (run with -race): two workers mail
// each other at once from their own tool loops, while a third sibling
// settles as a fourth mails it; each attempt is one record with one
// id, and each mail — every one races its recipient's end — is
// delivered or refused already-settled, journaled as it was answered. A read racing the run's end answers or fails cleanly.
func TestPeerMailCrossingAndRacingSettlement(t *testing.T) {
	start := make(chan struct{})
	exec := newMailExecutor(map[string]*mailWorker{
		"x": {gate: start, turns: []scripted.ChatTurn{
			turn(mailCall("x1", supervise.VerbSendMail, map[string]any{"to": "run1:s2", "kind": "ask", "subject": "s", "body": "from x"})),
			turn(mailCall("x2", supervise.VerbReadMail, map[string]any{})),
			turn(scripted.Text("DONE")),
		}},
		"y": {gate: start, turns: []scripted.ChatTurn{
			turn(mailCall("y1", supervise.VerbSendMail, map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": "from y"})),
			turn(mailCall("y2", supervise.VerbReadMail, map[string]any{})),
			turn(scripted.Text("DONE")),
		}},
		"quit": {gate: start, turns: []scripted.ChatTurn{turn(scripted.Text("DONE"))}},
		"racer": {gate: start, turns: []scripted.ChatTurn{
			turn(mailCall("r1", supervise.VerbSendMail, map[string]any{"to": "run1:s3", "kind": "ask", "subject": "s", "body": "late?"})),
			turn(scripted.Text("DONE")),
		}},
	})
	o := baseOptions(t, exec, nil)
	o.RunDir, o.PeerMail = t.TempDir(), &supervise.PeerMail{}
	var coord *supervise.Coordinator
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		coord = c
		for _, task := range []string{"x", "y", "quit", "racer"} {
			tool(t, ctx, c, supervise.VerbSpawnWorker, writer(task))
		}
		close(start)
		for range 4 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
			t.Error(err)
		}
	}()
	waitMail(t, exec.workers["racer"].done, "the racer's loop")
	// A read racing the run's end.
	for {
		select {
		case <-done:
		default:
			if c := coord; c != nil {
				if _, err := c.ReadMail("run1:s1"); err != nil {
					t.Errorf("ReadMail racing the end: %v", err)
				}
			}
			continue
		}
		break
	}
	logged, order := mailLog(t, o.RunDir)
	if len(order) != 3 {
		t.Errorf("mail records %v, want 3", order)
	}
	for _, task := range []string{"x", "y", "racer"} {
		rows := exec.resultsOf(task)
		if len(rows) == 0 {
			t.Errorf("%s made no call", task)
			continue
		}
		// Each mail races its recipient's end: delivered or refused
		// already-settled, and journaled as answered.
		out := mailOutcome(rows[0])
		if out != supervise.MailDelivered && out != supervise.MailAlreadySettled {
			t.Errorf("%s's mail: %s", task, out)
		}
		if r, _ := rows[0]["result"].(map[string]any); logged[fmt.Sprint(r["mailId"])] != out {
			t.Errorf("%s's mail journaled %q, answered %q", task, logged[fmt.Sprint(r["mailId"])], out)
		}
	}
}

// §9 read_mail's wire shape: its limits object is spelled as the rest of
// its result is and as the reference's PeerMailLimits, in camelCase — a
// worker reads {maxBodyBytes, maxSubjectBytes, maxInboxPerWorker,
// maxInboxBytesPerWorker, maxSentPerWorker, maxThreadDepth}, not Go's
// field names.
func TestPeerMailReadLimitsWireNames(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	close(exec.gate)
	o := baseOptions(t, exec, nil)
	o.PeerMail = &supervise.PeerMail{MaxInbox: 5}
	var got map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("settle"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		exec.mu.Lock()
		tools := exec.kept["settle"]
		exec.mu.Unlock()
		for _, tl := range tools {
			if tl.Name == supervise.VerbReadMail {
				out, err := tl.Run(ctx, canonjson.Value{})
				if err != nil {
					return supervise.BrainReport{}, err
				}
				if err := json.Unmarshal(canonjson.Marshal(out), &got); err != nil {
					return supervise.BrainReport{}, err
				}
			}
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"maxBodyBytes": float64(supervise.DefaultMailBodyBytes), "maxSubjectBytes": float64(supervise.DefaultMailSubjectBytes),
		"maxInboxPerWorker": float64(5), "maxInboxBytesPerWorker": float64(supervise.DefaultMailInboxBytes), "maxSentPerWorker": float64(supervise.DefaultMailSent),
		"maxThreadDepth": float64(supervise.DefaultMailThreadDepth)}
	if diff := cmp.Diff(want, got["limits"]); diff != "" {
		t.Errorf("read_mail's limits (-want +got):\n%s", diff)
	}
}

// §9 peer mail is between workers: an analyst (run_analyst, here run by
// Options.AnalystModel, whose tool loop offers only trace tools) has no
// inbox anyone reads. While it runs it is no peer in a live sibling's
// read_mail, and mail to it is refused worker-has-no-inbox — as mail to
// a nested manager is — never "delivered" to nobody.
func TestPeerMailAnalystIsNoPeer(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	analystGate := make(chan struct{})
	o := baseOptions(t, exec, nil)
	o.PeerMail = &supervise.PeerMail{}
	o.AnalystModel = scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{{
		Expect: func([]contract.ChatMessage, []contract.Tool) error {
			select {
			case <-analystGate:
				return nil
			case <-time.After(30 * time.Second):
				return errors.New("the analyst's gate never opened")
			}
		},
		Events: []contract.ChatEvent{scripted.Text("finding: none")}}}})
	var peers []supervise.MailPeer
	var toAnalyst string
	var analyst string
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("settle"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		r := tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s1"})
		analyst, _ = r["analystWorkerId"].(string)
		box, err := c.ReadMail("run1:s2")
		if err != nil {
			return supervise.BrainReport{}, err
		}
		peers = box.Peers
		if toAnalyst, _, err = sendAs(ctx, c, "run1:s2", map[string]any{"to": analyst, "kind": "ask", "subject": "s", "body": "b"}); err != nil {
			t.Error(err)
		}
		close(analystGate)
		close(exec.gate)
		for range 4 {
			if r := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}); r["idle"] == true {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbRunAnalyst), "t", o); err != nil {
		t.Fatal(err)
	}
	if analyst == "" {
		t.Fatal("run_analyst started no analyst")
	}
	for _, p := range peers {
		if string(p.WorkerID) == analyst {
			t.Errorf("the analyst %s is among a worker's peers: %+v", analyst, peers)
		}
	}
	if toAnalyst != supervise.MailWorkerHasNoInbox {
		t.Errorf("mail to the analyst: %q, want %s", toAnalyst, supervise.MailWorkerHasNoInbox)
	}
}

// An analyst run on the run's own Executor (no Options.AnalystModel) is
// given no peer mail tools: a lens over a settled worker's output does
// not mail the live workers.
func TestPeerMailAnalystOnTheRunsExecutorGetsNoTools(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	close(exec.gate)
	o := baseOptions(t, exec, nil)
	o.PeerMail = &supervise.PeerMail{}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("settle"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbRunAnalyst, map[string]any{"kind": "failure-triage", "workerId": "run1:s1"})
		for range 3 {
			if r := tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"timeoutMs": 60000}); r["idle"] == true {
				break
			}
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbRunAnalyst), "t", o); err != nil {
		t.Fatal(err)
	}
	exec.mu.Lock()
	defer exec.mu.Unlock()
	analysts := 0
	for task, tools := range exec.kept {
		if !strings.HasPrefix(task, "ANALYST LENS") {
			if len(tools) != 2 {
				t.Errorf("worker %q was given %d mail tools, want 2", task, len(tools))
			}
			continue
		}
		analysts++
		if len(tools) != 0 {
			t.Errorf("the analyst was given %d peer mail tools, want none", len(tools))
		}
	}
	if analysts != 1 {
		t.Errorf("%d analysts ran on the executor, want 1", analysts)
	}
}

// §3.6 tolerant readers, peer mail: a run killed while appending a mail
// record leaves a torn last line in the coordination log. The resume
// repairs it and rebuilds the mailboxes from the whole records before
// it — the torn attempt was never answered, so it counts nowhere — and
// the next attempt is numbered after the last whole one, readable by a
// later resume.
func TestPeerMailTornLastRecord(t *testing.T) {
	dir := t.TempDir()
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent)
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.RunDir, o.PeerMail = dir, &supervise.PeerMail{}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		for _, body := range []string{"one", "two"} {
			if out, _, err := sendAs(ctx, c, "run1:s2", map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": body}); err != nil || out != supervise.MailDelivered {
				t.Errorf("send %s: %s %v", body, out, err)
			}
		}
		cancel()
		<-ctx.Done()
		return supervise.BrainReport{}, context.Cause(ctx)
	})
	if _, err := supervise.Supervise(ctx, mgr, "mail", o); err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("the cut run: %v", err)
	}
	path := filepath.Join(dir, supervise.CoordinationLogFile)
	f, err := os.OpenFile(path, os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.WriteString(`{"kind":"mail","mail":{"envelope":{"mailId":"mail-3","from":"run1:s2","to":"run1:s1","kind":"ask","subj`); err != nil {
		t.Fatal(err)
	}
	f.Close()

	resumed := func(probe func(ctx context.Context, c *supervise.Coordinator) error) {
		t.Helper()
		exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
		o := baseOptions(t, exec, nil)
		o.RunDir, o.Resume, o.PeerMail = dir, true, &supervise.PeerMail{}
		o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			defer close(exec.gate)
			return supervise.BrainReport{}, probe(ctx, c)
		})
		if _, err := supervise.Supervise(context.Background(), mgr, "mail", o); err != nil {
			t.Fatalf("the resume: %v", err)
		}
	}
	var box, sender supervise.MailReadout
	var nextID string
	resumed(func(ctx context.Context, c *supervise.Coordinator) error {
		var err error
		if box, err = c.ReadMail("run1:s1"); err != nil {
			return err
		}
		if sender, err = c.ReadMail("run1:s2"); err != nil {
			return err
		}
		a := tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		b := tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		from, _ := a["workerId"].(string)
		to, _ := b["workerId"].(string)
		var out string
		out, nextID, err = sendAs(ctx, c, supervise.NodeID(from), map[string]any{"to": to, "kind": "ask", "subject": "s", "body": "three"})
		if err == nil && out != supervise.MailDelivered {
			err = fmt.Errorf("the send after the repair: %s", out)
		}
		return err
	})
	if len(box.Inbox) != 2 || box.Inbox[0].Body != "one" || box.Inbox[1].Body != "two" {
		t.Errorf("the recipient's inbox after the repair: %+v", box.Inbox)
	}
	if sender.Sent != 2 {
		t.Errorf("the sender's count after the repair: %d, want 2", sender.Sent)
	}
	if nextID != "mail-3" {
		t.Errorf("the next attempt's id: %s, want mail-3", nextID)
	}
	var ids []string
	resumed(func(context.Context, *supervise.Coordinator) error {
		_, ids = mailLog(t, dir)
		return nil
	})
	if diff := cmp.Diff([]string{"mail-1", "mail-2", "mail-3"}, ids); diff != "" {
		t.Errorf("mail records after two resumes (-want +got):\n%s", diff)
	}
}

// §9 peer mail in a nested tree: two workers of one lead are siblings
// and mail each other (delivered, in the recipient's read_mail, the
// other its peer), while the lead's worker mailing its cousin — the
// root's other worker — and its own manager are refused unknown-worker.
func TestPeerMailNestedSiblings(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := nestedOptions(t, exec, nil, nil)
	o.PeerMail = &supervise.PeerMail{}
	var outcomes []string
	var box supervise.MailReadout
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			a, _ := tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))["workerId"].(string)
			b, _ := tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))["workerId"].(string)
			lead, _ := supervise.NodeID(a).Parent()
			for _, to := range []string{b, "run1:s1", string(lead)} {
				out, _, err := sendAs(ctx, c, supervise.NodeID(a), map[string]any{"to": to, "kind": "ask", "subject": "s", "body": "b"})
				if err != nil {
					t.Error(err)
				}
				outcomes = append(outcomes, out)
			}
			var err error
			if box, err = c.ReadMail(supervise.NodeID(b)); err != nil {
				return supervise.BrainReport{}, err
			}
			close(exec.gate)
			for range 2 {
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
			}
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead", "label": "lead",
			"budget": map[string]any{"maxTokens": 3000, "maxIterations": 5, "maxUsd": 0.5}})
		for range 2 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{supervise.MailDelivered, supervise.MailUnknownWorker, supervise.MailUnknownWorker}, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(box.Inbox) != 1 || len(box.Peers) != 1 {
		t.Errorf("the recipient's read_mail: inbox %+v peers %+v, want one message and one peer", box.Inbox, box.Peers)
	}
}
