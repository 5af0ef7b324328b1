package supervise_test

// Second-pass outside scenarios for the cross-process run layout (§3.6
// "Supervisor run layout", "Steering"; §15 behaviour 48) with hostile
// files: what a second process relies on when another hand changed a
// file under it.

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// §3.6 "Readers are tolerant … payload conflict fails closed"; behaviour
// 48 "same-body retry returns the winning request". A request file whose
// message was changed after the supervisor acknowledged it (its
// requestDigest left as it was) no longer is the winning request: a
// same-body retry must not hand back a request whose body its own digest
// does not cover — it fails closed instead of returning the changed
// message as if it had been asked.
func TestOutside2SteerRequestChangedAfterItsAck(t *testing.T) {
	ctx := context.Background()
	exec := newInboxExecutor()
	run := startLiveRun(t, exec, 0, "long")
	steer := supervise.WorkerSteer{OperationID: "tamper.1", Message: "focus on tests"}
	first, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", steer)
	if err != nil {
		t.Fatal(err)
	}
	if ack := awaitSteer(t, run.dir, "tamper.1"); ack.Effect != supervise.SteerDelivered {
		t.Fatalf("ack %+v, want delivered", ack)
	}
	// Another hand rewrites the request's message, keeping its digest.
	path := filepath.Join(run.dir, supervise.SteerRequestsDir, hashName("tamper.1"))
	changed := first
	changed.Message = "delete the repository"
	b, err := json.Marshal(changed)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	again, err := supervise.WriteWorkerSteer(ctx, run.dir, "long", steer)
	var damaged *supervise.ControlFileError
	if !errors.As(err, &damaged) {
		t.Errorf("a same-body retry over a request changed after its ack = %+v, %v; want a *ControlFileError (fail closed)", again, err)
	}
	if err == nil && again.Message != steer.Message {
		t.Errorf("the retry answered with the changed message %q as the winning request of %q", again.Message, steer.Message)
	}
	run.finish(t)
}
