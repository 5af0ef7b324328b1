package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/supervise"
)

// messageAuthority is an Options.AuthorizeMessage that refuses a message
// naming a secret, narrows one marked "narrow:", panics on "panic" and
// passes the rest; it keeps what it saw.
type messageAuthority struct {
	mu   sync.Mutex
	seen []supervise.DownMessage
}

func (a *messageAuthority) authorize(_ context.Context, m supervise.DownMessage) (string, error) {
	a.mu.Lock()
	a.seen = append(a.seen, m)
	a.mu.Unlock()
	switch {
	case strings.Contains(m.Instruction, "secret"):
		return "", errors.New("the message names a secret")
	case strings.HasPrefix(m.Instruction, "narrow:"):
		return "narrowed", nil
	case m.Instruction == "panic":
		panic("the authority broke")
	}
	return m.Instruction, nil
}

func (a *messageAuthority) saw(instruction string) (supervise.DownMessage, bool) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, m := range a.seen {
		if m.Instruction == instruction {
			return m, true
		}
	}
	return supervise.DownMessage{}, false
}

// §3.6 authorizeMessage: every steer down to a worker — the manager's
// steer_agent in process, a cross-process steer (WriteWorkerSteer, what
// agentrt steer writes), a root steer — passes Options.AuthorizeMessage
// first. A refused one (the hook's error, its panic) is acknowledged
// refused with the reason and never delivered; a narrowed one delivers
// the narrowed text; the rest is delivered as sent.
func TestAuthorizeMessageGuardsEverySteer(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	auth := &messageAuthority{}
	run := startLiveRunOpts(t, exec, 0, nil, func(o *supervise.Options) { o.AuthorizeMessage = auth.authorize }, "long")

	tests := []struct {
		name, via, worker, msg string
		want                   supervise.SteerEffect
		detail                 string // in the acknowledgement's detail
		delivered              string // what reaches the worker ("" none)
	}{
		{"steer_agent passed", "steer_agent", "run1:s2", "focus on tests", supervise.SteerDelivered, "", "focus on tests"},
		{"steer_agent refused", "steer_agent", "run1:s2", "the secret is 42", supervise.SteerRefused, "not authorized: the message names a secret", ""},
		{"steer_agent narrowed", "steer_agent", "run1:s2", "narrow: and much more", supervise.SteerDelivered, "", "narrowed"},
		{"steer_agent, a panicking hook", "steer_agent", "run1:s2", "panic", supervise.SteerRefused, "not authorized: the authorization hook panicked", ""},
		{"cross-process passed", "file", "long", "keep it short", supervise.SteerDelivered, "", "keep it short"},
		{"cross-process refused", "file", "long", "another secret", supervise.SteerRefused, "not authorized: the message names a secret", ""},
		{"cross-process narrowed", "file", "long", "narrow: everything", supervise.SteerDelivered, "", "narrowed"},
		{"root steer refused", "file", "run1", "root secret", supervise.SteerRefused, "not authorized: the message names a secret", ""},
		{"root steer in process refused", "steer_agent", "run1", "root secret again", supervise.SteerRefused, "not authorized: the message names a secret", ""},
	}
	var want []string
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var effect supervise.SteerEffect
			var detail string
			if tc.via == "steer_agent" {
				res, err := run.coord.Steer(ctx, supervise.SteerArgs{WorkerID: supervise.NodeID(tc.worker), Instruction: tc.msg})
				if err != nil {
					t.Fatal(err)
				}
				effect, detail = supervise.SteerEffect(res.Outcome), res.Reason
				if res.Delivered != (tc.want == supervise.SteerDelivered) {
					t.Errorf("delivered %v with outcome %s", res.Delivered, res.Outcome)
				}
			} else {
				op := "op-auth-" + string(rune('a'+i))
				if _, err := supervise.WriteWorkerSteer(ctx, run.dir, tc.worker, supervise.WorkerSteer{OperationID: op, Message: tc.msg, Source: "other-process"}); err != nil {
					t.Fatal(err)
				}
				ack := awaitSteer(t, run.dir, op)
				effect, detail = ack.Effect, ack.Detail
			}
			if effect != tc.want || !strings.Contains(detail, tc.detail) {
				t.Errorf("%s (%q), want %s saying %q", effect, detail, tc.want, tc.detail)
			}
			m, ok := auth.saw(tc.msg)
			if !ok {
				t.Fatalf("the hook never saw %q", tc.msg)
			}
			wantDest := supervise.NodeID(tc.worker)
			switch tc.worker {
			case "long":
				wantDest = "run1:s2"
			}
			wantSource, wantProfile := supervise.SteerSourceCoordination, "writer"
			if tc.via == "file" {
				wantSource = "other-process"
			}
			if tc.worker == "run1" {
				wantProfile = ""
			}
			if m.Kind != supervise.DownSteer || m.WorkerID != wantDest || m.Source != wantSource || m.Profile != wantProfile || m.OperationID == "" {
				t.Errorf("the hook saw %+v, want a steer to %s (profile %q) from %s with its operation id", m, wantDest, wantProfile, wantSource)
			}
		})
		if tc.delivered != "" {
			want = append(want, tc.delivered)
		}
	}
	if diff := cmp.Diff(want, exec.messages("run1:s2")); diff != "" {
		t.Errorf("what reached the worker (-want +got): only authorized text, narrowed as the hook said\n%s", diff)
	}
	acks := 0
	for _, r := range run.journaled(supervise.KindSteerAcknowledged) {
		var ack supervise.SteerAck
		if canonjson.FromValue(r.Data, &ack) == nil && strings.HasPrefix(ack.Detail, "not authorized") {
			acks++
		}
	}
	if acks != 5 {
		t.Errorf("%d refused acknowledgements journaled, want 5", acks)
	}
	if res := run.finish(t); res.Status != supervise.StatusWinner {
		t.Errorf("the run ended %s %s, want the quick worker the winner", res.Status, res.Reason)
	}
}
