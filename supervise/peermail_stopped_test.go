package supervise_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// teardownMailExecutor runs two workers that outlive their manager:
// "sender" sends one mail to its sibling once its context is cancelled
// (the run's teardown) or returned is closed (its manager returned),
// "holder" stays live until the sender's answer is in. Both report when
// they started.
type teardownMailExecutor struct {
	started  chan string
	returned chan struct{}
	sent     chan struct{}
	mu       sync.Mutex
	answer   canonjson.Value
	sendErr  error
}

func (e *teardownMailExecutor) Execute(ctx context.Context, w supervise.Work) (supervise.WorkResult, error) {
	res := supervise.WorkResult{Text: "DONE", Spent: ledger.Spend{Tokens: i64(0), Iterations: i64(1), MicroUSD: i64(0)}}
	e.started <- w.Task
	bound := time.NewTimer(30 * time.Second)
	defer bound.Stop()
	switch w.Task {
	case "sender":
		select {
		case <-ctx.Done():
		case <-e.returned:
		case <-bound.C:
			return res, errors.New("the run never tore its workers down")
		}
		send := toolNamed(w.PeerMail, supervise.VerbSendMail)
		args, _ := canonjson.ToValue(map[string]any{"to": "run1:s2", "kind": "ask", "subject": "still there?", "body": "the run is ending"})
		v, err := send.Run(context.WithoutCancel(ctx), args)
		e.mu.Lock()
		e.sendErr = err
		e.answer = v
		e.mu.Unlock()
		close(e.sent)
		return res, context.Cause(ctx) // nil within ChildSettleGrace
	default: // holder: live until the sender's attempt is answered
		select {
		case <-e.sent:
		case <-bound.C:
			return res, errors.New("the sender never sent")
		}
		return res, context.Cause(ctx)
	}
}

func toolNamed(tools []contract.Tool, name string) contract.Tool {
	for _, t := range tools {
		if t.Name == name {
			return t
		}
	}
	return contract.Tool{}
}

// §9 peer mail once the run stops: a worker's send_mail during its
// manager's teardown (the manager's brain returned, its workers are
// being cancelled) reaches a sibling that will never read it. The
// attempt is refused scope-stopped — the reference's refusal for mail
// once its scope stopped — journaled as every attempt is. Workers that
// run on through ChildSettleGrace after their manager returned are not
// torn down: their mail is delivered (their work can still win).
func TestPeerMailDuringTeardownRefusedScopeStopped(t *testing.T) {
	for _, tc := range []struct {
		name  string
		grace time.Duration
		want  string
	}{
		{"torn down", 0, supervise.MailScopeStopped},
		{"within ChildSettleGrace", 30 * time.Second, supervise.MailDelivered},
	} {
		t.Run(tc.name, func(t *testing.T) {
			exec := &teardownMailExecutor{started: make(chan string, 2), sent: make(chan struct{}), returned: make(chan struct{})}
			if tc.grace == 0 {
				exec.returned = nil // the sender waits for its cancellation
			}
			o := baseOptions(t, exec, nil)
			o.PeerMail, o.RunDir, o.ChildSettleGrace = &supervise.PeerMail{}, t.TempDir(), tc.grace
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "sender"})
				tool(t, ctx, c, supervise.VerbSpawnWorker, map[string]any{"profile": "writer", "task": "holder"})
				for range 2 {
					select {
					case <-exec.started:
					case <-time.After(30 * time.Second):
						return supervise.BrainReport{}, errors.New("the workers never started")
					}
				}
				if exec.returned != nil {
					close(exec.returned)
				}
				return supervise.BrainReport{}, nil // the manager returns with its workers live
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "mail", o); err != nil {
				t.Fatalf("the run: %v", err)
			}
			exec.mu.Lock()
			answer, sendErr := exec.answer, exec.sendErr
			exec.mu.Unlock()
			if sendErr != nil {
				t.Fatalf("send_mail: %v", sendErr)
			}
			delivered, _ := answer.Get("delivered")
			code, _ := answer.Get("error")
			got := code.Str()
			if delivered.Bool() {
				got = supervise.MailDelivered
			}
			if delivered.Kind() != canonjson.Bool || got != tc.want {
				t.Errorf("send_mail answered %s, want %s", canonjson.Marshal(answer), tc.want)
			}
			recs, _, err := supervise.ReadCoordinationLog(context.Background(), o.RunDir)
			if err != nil {
				t.Fatal(err)
			}
			var outcomes []string
			for _, r := range recs {
				if r.Kind == supervise.CoordMail {
					outcomes = append(outcomes, r.Mail.Outcome)
				}
			}
			if len(outcomes) != 1 || outcomes[0] != tc.want {
				t.Errorf("journaled mail outcomes %v, want [%s]", outcomes, tc.want)
			}
		})
	}
}
