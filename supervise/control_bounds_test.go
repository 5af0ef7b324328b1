package supervise

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/scaletest"
)

// cancelLine is one line of the cancellation requests log.
func cancelLine(t testing.TB, op, worker string) string {
	data, err := json.Marshal(CancelRequest{OperationID: op, Worker: worker, Source: "test", At: 1})
	if err != nil {
		t.Fatal(err)
	}
	return string(data) + "\n"
}

func writeCancelLog(t testing.TB, dir, content string) string {
	path := filepath.Join(dir, CancelRequestsFile)
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func ops(reqs []CancelRequest) []string {
	var out []string
	for _, r := range reqs {
		out = append(out, r.OperationID)
	}
	return out
}

// TestCancelScanReadsOnlyWhatWasAppended (§15 behaviour 49's request
// log): a scan from the offset the last one returned reads only the
// lines appended since; a torn last line is read again once completed;
// a corrupt line is skipped without hiding the next; a log replaced by
// a shorter one is read whole again.
func TestCancelScanReadsOnlyWhatWasAppended(t *testing.T) {
	dir := t.TempDir()
	a, b, c := cancelLine(t, "op-a", "w1"), cancelLine(t, "op-b", "w2"), cancelLine(t, "op-c", "w3")
	torn := c[:len(c)/2]
	path := writeCancelLog(t, dir, a+"not json\n"+b+torn)

	got, off, err := readCancelRequestsFrom(dir, 0, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"op-a", "op-b"}, ops(got)); diff != "" {
		t.Errorf("first scan (-want +got):\n%s", diff)
	}
	if want := int64(len(a + "not json\n" + b)); off != want {
		t.Errorf("first scan offset %d, want %d (just past the last complete line)", off, want)
	}

	// The writer completes the torn line and appends another.
	d := cancelLine(t, "op-d", "w4")
	if err := os.WriteFile(path, []byte(a+"not json\n"+b+c+d), 0o600); err != nil {
		t.Fatal(err)
	}
	got, off2, err := readCancelRequestsFrom(dir, off, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"op-c", "op-d"}, ops(got)); diff != "" {
		t.Errorf("second scan (-want +got):\n%s", diff)
	}
	got, _, err = readCancelRequestsFrom(dir, off2, false)
	if err != nil || len(got) != 0 {
		t.Errorf("third scan = %v, %v; want nothing new", ops(got), err)
	}

	writeCancelLog(t, dir, b)
	got, _, err = readCancelRequestsFrom(dir, off2, false)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"op-b"}, ops(got)); diff != "" {
		t.Errorf("scan of a replaced log (-want +got):\n%s", diff)
	}
}

// TestCancelRequestsLimit: a requests log over MaxCancelRequestsBytes
// is refused with a *ControlFileError by the reader, and CancelWorker
// refuses to append a request that would take the log past it, naming
// the file; the log is left as it was.
func TestCancelRequestsLimit(t *testing.T) {
	ctx := context.Background()
	t.Run("reader", func(t *testing.T) {
		dir := t.TempDir()
		writeCancelLog(t, dir, strings.Repeat(" ", MaxCancelRequestsBytes)+"\n")
		_, _, err := readCancelRequestsFrom(dir, 0, false)
		var ce *ControlFileError
		if !errors.As(err, &ce) || ce.Limit != MaxCancelRequestsBytes || ce.Size != MaxCancelRequestsBytes+1 {
			t.Fatalf("readCancelRequestsFrom = %v, want a *ControlFileError of %d bytes", err, MaxCancelRequestsBytes+1)
		}
		if _, err := readCancelRequestList(dir); !errors.As(err, &ce) {
			t.Fatalf("readCancelRequestList = %v, want a *ControlFileError", err)
		}
	})
	t.Run("writer", func(t *testing.T) {
		dir := t.TempDir()
		line := cancelLine(t, "op-a", "w1")
		fill := strings.Repeat(line, (MaxCancelRequestsBytes-10)/len(line))
		path := writeCancelLog(t, dir, fill)
		_, err := CancelWorker(ctx, dir, "w9", "op-new", CancelOptions{})
		var ce *ControlFileError
		if !errors.As(err, &ce) || ce.Path != path {
			t.Fatalf("CancelWorker = %v, want a *ControlFileError for %s", err, path)
		}
		if !strings.Contains(err.Error(), "start a new run dir") {
			t.Errorf("error %q does not say what to do", err)
		}
		after, err := os.ReadFile(path)
		if err != nil || string(after) != fill {
			t.Errorf("the log changed (%d bytes, %v)", len(after), err)
		}
	})
}

// TestControlFileLimit: a steer request file over MaxControlFileBytes
// (something other than WriteWorkerSteer wrote it) is refused unread
// with a *ControlFileError.
func TestControlFileLimit(t *testing.T) {
	path := filepath.Join(t.TempDir(), "big.json")
	big := append([]byte(`{"message":"`), bytes.Repeat([]byte("x"), MaxControlFileBytes)...)
	if err := os.WriteFile(path, append(big, `"}`...), 0o600); err != nil {
		t.Fatal(err)
	}
	var req SteerRequest
	err := readJSON(path, &req)
	var ce *ControlFileError
	if !errors.As(err, &ce) || ce.Limit != MaxControlFileBytes {
		t.Fatalf("readJSON = %v, want a *ControlFileError", err)
	}
}

// BenchmarkCancelScan: what one 100 ms control scan costs reading the
// cancellation requests log once n requests were handled. full is the
// whole log re-read (every scan did that before); since is the scan from
// the last offset, flat whatever n is.
func BenchmarkCancelScan(b *testing.B) {
	for _, n := range []int{1_000, 10_000} {
		dir := b.TempDir()
		var log strings.Builder
		for i := range n {
			log.WriteString(cancelLine(b, fmt.Sprint("op-", i), "w"))
		}
		writeCancelLog(b, dir, log.String())
		b.Run(fmt.Sprintf("full/n=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			stop := scaletest.CPU(b)
			for b.Loop() {
				if reqs, err := readCancelRequestList(dir); err != nil || len(reqs) != n {
					b.Fatal(len(reqs), err)
				}
			}
			stop()
		})
		b.Run(fmt.Sprintf("since/n=%d", n), func(b *testing.B) {
			_, off, err := readCancelRequestsFrom(dir, 0, false)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			stop := scaletest.CPU(b)
			for b.Loop() {
				if reqs, _, err := readCancelRequestsFrom(dir, off, false); err != nil || len(reqs) != 0 {
					b.Fatal(len(reqs), err)
				}
			}
			stop()
		})
	}
}
