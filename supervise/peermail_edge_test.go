package supervise_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// dirBytes is the total size of the regular files under dir.
func dirBytes(t *testing.T, dir string) int64 {
	t.Helper()
	var n int64
	err := filepath.WalkDir(dir, func(_ string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		n += info.Size()
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// §9 peer mail bounds against a hostile sender: a send_mail whose
// arguments are far over every bound (a 2 MiB body or subject, 10^5
// evidence refs, a 2 MiB recipient or replyTo) is answered as a tool
// result — refused, or an argument error — and never makes the run lose
// a journal record: the journal's 1 MiB record limit cannot be reached
// through one mail, and the run's journal stays small.
func TestPeerMailHostileSizesKeepTheJournal(t *testing.T) {
	huge := strings.Repeat("x", 2<<20)
	refs := make([]string, 100_000)
	for i := range refs {
		refs[i] = "sha256:0123456789abcdef"
	}
	cases := []struct {
		name string
		args map[string]any
	}{
		{"body", map[string]any{"to": "run1:s2", "kind": "ask", "subject": "s", "body": huge}},
		{"subject", map[string]any{"to": "run1:s2", "kind": "ask", "subject": huge, "body": "b"}},
		{"evidenceRefs", map[string]any{"to": "run1:s2", "kind": "tell", "subject": "s", "body": "b", "evidenceRefs": refs}},
		{"to", map[string]any{"to": huge, "kind": "ask", "subject": "s", "body": "b"}},
		{"replyTo", map[string]any{"to": "run1:s2", "kind": "answer", "subject": "s", "body": "b", "replyTo": huge}},
	}
	gate := make(chan struct{})
	exec := newMailExecutor(map[string]*mailWorker{
		"one": {gate: gate, turns: []scripted.ChatTurn{turn(scripted.Text("DONE"))}},
		"two": {gate: gate, turns: []scripted.ChatTurn{turn(scripted.Text("DONE"))}},
	})
	dir := t.TempDir()
	o := baseOptions(t, exec, nil)
	o.RunDir, o.PeerMail = dir, &supervise.PeerMail{MaxSent: len(cases) + 1}
	type got struct {
		err     error
		outcome any
	}
	results := map[string]got{}
	var box supervise.MailReadout
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "one"})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "two"})
		for _, tc := range cases {
			args, err := canonjson.ToValue(tc.args)
			if err != nil {
				t.Fatal(err)
			}
			out, err := c.SendMail(ctx, "run1:s1", args)
			var m map[string]any
			if err == nil {
				_ = json.Unmarshal(canonjson.Marshal(out), &m)
			}
			results[tc.name] = got{err: err, outcome: m["error"]}
		}
		var err error
		if box, err = c.ReadMail("run1:s2"); err != nil {
			return supervise.BrainReport{}, err
		}
		close(gate)
		for range 2 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "mail", o); err != nil {
		t.Fatalf("the run: %v", err)
	}
	for _, tc := range cases {
		r := results[tc.name]
		if r.err != nil && !strings.Contains(r.err.Error(), "arguments") {
			t.Errorf("%s: send_mail failed other than on its arguments: %v", tc.name, r.err)
		}
		if r.err == nil && r.outcome == nil {
			t.Errorf("%s: a hostile mail was delivered", tc.name)
		}
	}
	if len(box.Inbox) != 0 {
		t.Errorf("the recipient's inbox: %d messages, want none", len(box.Inbox))
	}
	if n := dirBytes(t, dir); n > 256<<10 {
		t.Errorf("the run dir holds %d bytes after %d refused mails, want under 256 KiB", n, len(cases))
	}
}

// §9 peer mail bounds: a PeerMail byte bound over its ceiling is
// refused before the run starts, at its JSON pointer, so no configured
// bound lets one delivered mail outgrow a journal record.
func TestPeerMailBoundOverCeilingRefused(t *testing.T) {
	cases := []struct {
		name string
		pm   supervise.PeerMail
		ptr  string
	}{
		{"body", supervise.PeerMail{MaxBodyBytes: supervise.MaxMailBodyBytesCeiling + 1}, "/peerMail/maxBodyBytes"},
		{"subject", supervise.PeerMail{MaxSubjectBytes: supervise.MaxMailSubjectBytesCeiling + 1}, "/peerMail/maxSubjectBytes"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			exec := newMailExecutor(map[string]*mailWorker{})
			o := baseOptions(t, exec, nil)
			o.PeerMail = &tc.pm
			o.Brain = supervise.BrainFunc(func(context.Context, *supervise.Coordinator, string) (supervise.BrainReport, error) {
				t.Error("the run started")
				return supervise.BrainReport{}, nil
			})
			_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "mail", o)
			var oe *supervise.OptionError
			if !errors.As(err, &oe) || oe.Pointer != tc.ptr {
				t.Fatalf("err = %v, want an OptionError at %s", err, tc.ptr)
			}
		})
	}
}

// keepToolsExecutor keeps every worker's peer mail tools past its end,
// as an executor holding its Go tools might: task "gone" ends at once,
// task "live" waits for gate (bounded).
type keepToolsExecutor struct {
	gate chan struct{}
	mu   sync.Mutex
	kept map[string][]contract.Tool
}

func (e *keepToolsExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	e.mu.Lock()
	e.kept[w.Task] = w.PeerMail
	e.mu.Unlock()
	res := supervise.WorkResult{Text: "DONE", Spent: ledger.Spend{Tokens: i64(0), Iterations: i64(1), MicroUSD: i64(0)}}
	if w.Task == "live" {
		select {
		case <-e.gate:
		case <-ctx.Done():
			return res, context.Cause(ctx)
		case <-time.After(30 * time.Second):
			return res, errors.New("the gate never opened")
		}
	}
	return res, nil
}

// §9 "sender bound to the capability": a worker's send_mail, kept by
// its executor and called after the worker settled, delivers nothing
// and journals nothing — the settled sender speaks for no live node,
// and nothing (no budget, no turn) would bound its calls.
func TestPeerMailSettledSenderRefused(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.PeerMail, o.RunDir = &supervise.PeerMail{}, t.TempDir()
	var sendErr error
	var box supervise.MailReadout
	var mailRows int
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "gone"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "live"})
		exec.mu.Lock()
		kept := exec.kept["gone"]
		exec.mu.Unlock()
		if len(kept) == 0 || kept[0].Name != supervise.VerbSendMail {
			t.Fatalf("the settled worker's tools: %v", kept)
		}
		args, _ := canonjson.ToValue(map[string]any{"to": "run1:s2", "kind": "ask", "subject": "s", "body": "after my end"})
		_, sendErr = kept[0].Run(ctx, args)
		var err error
		if box, err = c.ReadMail("run1:s2"); err != nil {
			return supervise.BrainReport{}, err
		}
		close(exec.gate)
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "mail", o); err != nil {
		t.Fatalf("the run: %v", err)
	}
	if !errors.Is(sendErr, supervise.ErrMailSenderSettled) {
		t.Errorf("the settled sender's send_mail: err = %v, want ErrMailSenderSettled", sendErr)
	}
	if len(box.Inbox) != 0 {
		t.Errorf("the live worker received %+v from a settled sender", box.Inbox)
	}
	recs, _, err := supervise.ReadCoordinationLog(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range recs {
		if r.Kind == supervise.CoordMail {
			mailRows++
		}
	}
	if mailRows != 0 {
		t.Errorf("%d mail coordination records, want none", mailRows)
	}
}

// §9 peer mail, concurrent senders: eight live workers each send two
// mails at once through their own send_mail; every attempt is
// delivered, the ids are mail-1..mail-16 with no repeat, and the
// coordination log holds them in id order (ids and the journal keep
// one order).
func TestPeerMailConcurrentSendersKeepOneOrder(t *testing.T) {
	const workers = 8
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.PeerMail, o.RunDir = &supervise.PeerMail{}, t.TempDir()
	errs := make(chan error, 2*workers)
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for range workers {
			tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "live"})
		}
		var wg sync.WaitGroup
		for i := 1; i <= workers; i++ {
			from, to := supervise.NodeID(fmt.Sprintf("run1:s%d", i)), fmt.Sprintf("run1:s%d", i%workers+1)
			for k := range 2 {
				wg.Go(func() {
					args, _ := canonjson.ToValue(map[string]any{"to": to, "kind": "ask", "subject": "s", "body": fmt.Sprint(k)})
					out, err := c.SendMail(ctx, from, args)
					if err == nil {
						var m map[string]any
						_ = json.Unmarshal(canonjson.Marshal(out), &m)
						if m["delivered"] != true {
							err = fmt.Errorf("%s: %v", from, m)
						}
					}
					errs <- err
				})
			}
		}
		wg.Wait()
		close(exec.gate)
		for range workers {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "mail", o); err != nil {
		t.Fatalf("the run: %v", err)
	}
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("a concurrent send: %v", err)
		}
	}
	recs, _, err := supervise.ReadCoordinationLog(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var ids, want []string
	for _, r := range recs {
		if r.Kind == supervise.CoordMail && r.Mail != nil {
			ids = append(ids, r.Mail.Envelope.MailID)
		}
	}
	for i := 1; i <= 2*workers; i++ {
		want = append(want, fmt.Sprintf("mail-%d", i))
	}
	if diff := cmp.Diff(want, ids); diff != "" {
		t.Errorf("mail ids in journal order (-want +got):\n%s", diff)
	}
}

// §9 peer mail bounds, per receiver in bytes as well as count (the
// reference's maxInboxBytesPerWorker, 32 KiB by default): with the
// defaults, eight 4000-byte bodies reach one worker (32000 bytes) and
// the ninth, which would take it past 32768, is refused mailbox-full,
// so N−1 siblings cannot fill one worker's read_mail past the bound.
func TestPeerMailInboxBytesBound(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := baseOptions(t, exec, nil)
	o.PeerMail = &supervise.PeerMail{}
	var outcomes []string
	var box supervise.MailReadout
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		for range 3 {
			tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "live"})
		}
		body := strings.Repeat("y", 4000)
		for i := range 9 {
			from := supervise.NodeID(fmt.Sprintf("run1:s%d", 2+i%2))
			args, _ := canonjson.ToValue(map[string]any{"to": "run1:s1", "kind": "ask", "subject": "s", "body": body})
			out, err := c.SendMail(ctx, from, args)
			if err != nil {
				return supervise.BrainReport{}, err
			}
			var m map[string]any
			_ = json.Unmarshal(canonjson.Marshal(out), &m)
			if m["delivered"] == true {
				outcomes = append(outcomes, supervise.MailDelivered)
			} else {
				outcomes = append(outcomes, fmt.Sprint(m["error"]))
			}
		}
		var err error
		if box, err = c.ReadMail("run1:s1"); err != nil {
			return supervise.BrainReport{}, err
		}
		close(exec.gate)
		for range 3 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "mail", o); err != nil {
		t.Fatalf("the run: %v", err)
	}
	want := []string{}
	for range 8 {
		want = append(want, supervise.MailDelivered)
	}
	want = append(want, supervise.MailMailboxFull)
	if diff := cmp.Diff(want, outcomes); diff != "" {
		t.Errorf("outcomes (-want +got):\n%s", diff)
	}
	if len(box.Inbox) != 8 {
		t.Errorf("the receiver holds %d mails, want 8", len(box.Inbox))
	}
}

// §9 peer mail among siblings of one manager only: a nested lead's
// worker (run1:s2:s3) and the root's worker (run1:s1) are not siblings,
// so mail either way is refused unknown-worker and neither lists the
// other among its peers; the lead itself (run1:s2), the root worker's
// sibling but a manager, is refused worker-has-no-inbox and is no peer.
func TestPeerMailAcrossManagersRefused(t *testing.T) {
	exec := &keepToolsExecutor{gate: make(chan struct{}), kept: map[string][]contract.Tool{}}
	o := nestedOptions(t, exec, nil, nil)
	o.PeerMail = &supervise.PeerMail{}
	spawned, sent := make(chan struct{}), make(chan struct{})
	o.ManagerBrain = func(*profile.Profile) supervise.Brain {
		return goLead(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
			tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
			close(spawned)
			waitMail(t, sent, "the root's sends")
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
			return supervise.BrainReport{Text: "lead DONE"}, nil
		})
	}
	outcome := func(ctx context.Context, c *supervise.Coordinator, from supervise.NodeID, to string) any {
		args, _ := canonjson.ToValue(map[string]any{"to": to, "kind": "ask", "subject": "s", "body": "b"})
		out, err := c.SendMail(ctx, from, args)
		if err != nil {
			return err.Error()
		}
		var m map[string]any
		_ = json.Unmarshal(canonjson.Marshal(out), &m)
		return m["error"]
	}
	var up, down, toLead any
	var rootPeers, leafPeers []supervise.MailPeer
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, writer("live"))
		tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "lead", "task": "lead", "label": "lead",
			"budget": map[string]any{"maxTokens": 3000, "maxIterations": 5, "maxUsd": 0.5}})
		waitMail(t, spawned, "the lead's spawn")
		up, down = outcome(ctx, c, "run1:s2:s3", "run1:s1"), outcome(ctx, c, "run1:s1", "run1:s2:s3")
		toLead = outcome(ctx, c, "run1:s1", "run1:s2")
		r, err := c.ReadMail("run1:s1")
		if err != nil {
			return supervise.BrainReport{}, err
		}
		rootPeers = r.Peers
		if r, err = c.ReadMail("run1:s2:s3"); err != nil {
			return supervise.BrainReport{}, err
		}
		leafPeers = r.Peers
		close(sent)
		close(exec.gate)
		for range 2 {
			tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		}
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent), "t", o); err != nil {
		t.Fatal(err)
	}
	if up != supervise.MailUnknownWorker || down != supervise.MailUnknownWorker {
		t.Errorf("lead's worker -> root's: %v; root's -> lead's: %v; want both %s", up, down, supervise.MailUnknownWorker)
	}
	// The lead is the root worker's sibling, but a manager: its router
	// brain takes no mail (no read_mail, no inbox for it), so mail to
	// it is refused as the reference refuses a recipient without an
	// inbox, and it is no peer.
	if toLead != supervise.MailWorkerHasNoInbox {
		t.Errorf("root's worker -> the lead: %v, want %s", toLead, supervise.MailWorkerHasNoInbox)
	}
	for _, p := range append(rootPeers, leafPeers...) {
		if p.WorkerID == "run1:s1" || p.WorkerID == "run1:s2:s3" || p.WorkerID == "run1:s2" {
			t.Errorf("a peer across managers: %+v (root's %+v, leaf's %+v)", p, rootPeers, leafPeers)
		}
	}
}
