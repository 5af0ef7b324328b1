//go:build unix

package supervise_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// countingHandler is a slog.Handler counting the records whose message
// holds word.
type countingHandler struct {
	word string
	mu   sync.Mutex
	n    int
}

func (h *countingHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *countingHandler) Handle(_ context.Context, r slog.Record) error {
	if strings.Contains(r.Message, h.word) {
		h.mu.Lock()
		h.n++
		h.mu.Unlock()
	}
	return nil
}
func (h *countingHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *countingHandler) WithGroup(string) slog.Handler      { return h }
func (h *countingHandler) count() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.n
}

// answered waits, at most 20 s (a scan is every ControlScanInterval),
// for the supervisor's answer to steer op beyond its claim.
func answered(t *testing.T, dir, op string) supervise.SteerAck {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		ack, err := supervise.ReadSteerAck(context.Background(), dir, op)
		if err != nil {
			t.Fatalf("steer %s: %v", op, err)
		}
		if ack != nil && ack.Effect != supervise.SteerUnknown {
			return *ack
		}
		if time.Now().After(deadline) {
			t.Fatalf("steer %s: no answer within 20s", op)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Behaviour 48, §3.6 "Readers are tolerant": a steer request file the
// supervisor cannot read (not JSON, over MaxControlFileBytes, a FIFO
// no one writes — which must not block the scan, holding up every
// later steer and cancellation) is
// answered once, refused, naming why — so a steer waiting on it learns
// its fate rather than waiting out its bound — and is not read again
// every ControlScanInterval for the rest of the run (each read a
// warning in the log, up to a MiB parsed ten times a second).
func TestUnreadableSteerRequestAnsweredOnceBehaviour48(t *testing.T) {
	for _, tc := range []struct {
		name string
		body []byte // nil: a FIFO no one writes
	}{
		{"not-json", []byte(`{"operationId":"op-bad","worker":`)},
		{"oversized", append(append([]byte(`{"operationId":"op-bad","message":"`), bytes.Repeat([]byte("x"), supervise.MaxControlFileBytes)...), `"}`...)},
		{"fifo", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			logs := &countingHandler{word: "steer request"}
			run := startLiveRunOpts(t, newInboxExecutor(), 0, nil, func(o *supervise.Options) { o.Logger = slog.New(logs) }, "long")
			sum := sha256.Sum256([]byte("op-bad"))
			path := filepath.Join(run.dir, supervise.SteerRequestsDir, hex.EncodeToString(sum[:])+".json")
			if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
				t.Fatal(err)
			}
			if tc.body == nil {
				if err := syscall.Mkfifo(path, 0o600); err != nil {
					t.Fatal(err)
				}
			} else if err := os.WriteFile(path, tc.body, 0o600); err != nil {
				t.Fatal(err)
			}
			ack := answered(t, run.dir, "op-bad")
			if ack.Effect != supervise.SteerRefused || ack.Detail == "" {
				t.Errorf("the unreadable request was answered %q (%s); want refused, saying why", ack.Effect, ack.Detail)
			}
			// A good request after it is still answered.
			if _, err := supervise.WriteWorkerSteer(context.Background(), run.dir, "long", supervise.WorkerSteer{OperationID: "op-good", Message: "focus"}); err != nil {
				t.Fatal(err)
			}
			if ack := answered(t, run.dir, "op-good"); ack.Effect != supervise.SteerDelivered {
				t.Errorf("the good request after it was answered %q (%s); want delivered", ack.Effect, ack.Detail)
			}
			// Ten scans' time: the file is not read again.
			time.Sleep(10 * supervise.ControlScanInterval)
			if n := logs.count(); n > 1 {
				t.Errorf("%d warnings about the unreadable steer request in %v; want at most one", n, 10*supervise.ControlScanInterval)
			}
			run.finish(t)
		})
	}
}

// Behaviours 48 and 49: a FIFO in place of the cancellation requests
// log (cancellations/requests.ndjson) does not block the control scan:
// steers written after it are still answered.
func TestCancelRequestsFIFODoesNotBlockTheScanBehaviour49(t *testing.T) {
	run := startLiveRun(t, newInboxExecutor(), 0, "long")
	path := filepath.Join(run.dir, supervise.CancelRequestsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * supervise.ControlScanInterval)
	if _, err := supervise.WriteWorkerSteer(context.Background(), run.dir, "long", supervise.WorkerSteer{OperationID: "op-after", Message: "focus"}); err != nil {
		t.Fatal(err)
	}
	if ack := answered(t, run.dir, "op-after"); ack.Effect != supervise.SteerDelivered {
		t.Errorf("the steer was answered %q (%s); want delivered", ack.Effect, ack.Detail)
	}
	run.finish(t)
}
