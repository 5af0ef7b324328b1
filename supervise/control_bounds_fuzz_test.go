package supervise

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// firstPerOp keeps the first request of each operation id, in order.
func firstPerOp(reqs []CancelRequest) []CancelRequest {
	seen := map[string]bool{}
	var out []CancelRequest
	for _, r := range reqs {
		if !seen[r.OperationID] {
			seen[r.OperationID] = true
			out = append(out, r)
		}
	}
	return out
}

// FuzzCancelScan: the cancellation requests log is written by other
// processes, so its bytes are untrusted. Whatever it holds, and wherever
// an append split it between two scans (the first sees a prefix, the
// second starts where the first stopped), the scans never panic, never
// stop beyond what they read, and together find the same requests,
// first per operation id, as one read of the whole log: a line the
// first saw unterminated is decoded only once completed.
func FuzzCancelScan(f *testing.F) {
	a, b := cancelLine(f, "op-a", "w1"), cancelLine(f, "op-b", "w2")
	f.Add([]byte(a+b), uint16(len(a)))
	f.Add([]byte(a+b), uint16(len(a)/2))
	f.Add([]byte(a+"{\n"+a+b), uint16(3))
	f.Add([]byte("\n\n"+b+b[:10]), uint16(1))
	f.Fuzz(func(t *testing.T, log []byte, cut uint16) {
		split := min(int(cut), len(log))
		first, end := parseCancelLines(log[:split], false)
		if end < 0 || end > split || end > 0 && log[end-1] != '\n' {
			t.Fatalf("first scan stopped at %d of a %d-byte prefix", end, split)
		}
		second, _ := parseCancelLines(log[end:], true)
		whole, _ := parseCancelLines(log, true)
		if diff := cmp.Diff(firstPerOp(whole), firstPerOp(append(first, second...))); diff != "" {
			t.Errorf("two scans differ from one read (-one +two):\n%s", diff)
		}
	})
}
