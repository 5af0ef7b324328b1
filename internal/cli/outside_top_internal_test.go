package cli

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// top's cancel key on a run that ended after an earlier cancellation
// (behaviour 50, §3.6 "first abort cause wins"): the new request is not
// live (supervise.RunEndedError), and top reports the earlier
// operation's outcome, never "cancel unknown".
func TestOutsideTopCancelOfEndedRunBehaviour50(t *testing.T) {
	dir := t.TempDir()
	now := time.Now().UnixMilli()
	files := map[string]string{
		supervise.StateFile:            fmt.Sprintf(`{"schemaVersion":1,"runId":"r","status":"no-winner","reason":"cancelled","revision":3,"spawned":0,"live":0,"updatedAtMs":%d}`, now-1000),
		supervise.RunCancelRequestFile: fmt.Sprintf(`{"operationId":"first","at":%d,"source":"cli"}`, now-2000),
		supervise.RunCancellationFile:  fmt.Sprintf(`{"operationId":"first","effect":"cancelled","path":"fallback","requestedAt":%d,"observedAt":%d,"source":"cli"}`, now-2000, now-1500),
	}
	for name, body := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := &topSource{ackWait: 300 * time.Millisecond, newOperationID: func() string { return "second" }}
	got := s.cancelSupervised(context.Background(), topRun{ID: "r", dir: dir})
	if !strings.Contains(got, "cancelled earlier by operation first: cancelled") {
		t.Errorf("top's cancel of an ended run cancelled earlier: %q; want the earlier operation's outcome", got)
	}
}
