package supervise

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// steerScanDir is a run dir whose steers/requests holds n requests,
// each acknowledged, all written long enough ago that the directory's
// modification time is trusted.
func steerScanDir(t testing.TB, n int) string {
	t.Helper()
	dir := t.TempDir()
	reqs, acks := filepath.Join(dir, SteerRequestsDir), filepath.Join(dir, SteerAcksDir)
	for _, d := range []string{reqs, acks} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n {
		name := fmt.Sprintf("%064x.json", i)
		for _, d := range []string{reqs, acks} {
			if err := os.WriteFile(filepath.Join(d, name), []byte("{}"), 0o600); err != nil {
				t.Fatal(err)
			}
		}
	}
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(reqs, old, old); err != nil {
		t.Fatal(err)
	}
	return dir
}

// A control scan of a run dir whose steer requests are all acknowledged
// does not list steers/requests again while the directory is unchanged:
// a listing costs an allocation or more per request (with 10^4 requests
// some 20 ms), and a run scans every ControlScanInterval (100 ms) for its
// whole life. 10^3 requests tell a skipped listing from a made one and
// keep the test's files few (it ran a CI machine's small disk out once).
// A request written after that is still delivered on the next scan
// (TestSteerScanSeesANewRequest).
func TestSteerScanSkipsAnUnchangedRequestsDir(t *testing.T) {
	const n = 1_000
	dir := steerScanDir(t, n)
	c := &Coordinator{core: &core{ctl: newControl(dir, false), logger: slog.New(slog.DiscardHandler), now: time.Now}}
	ctx := context.Background()
	c.checkSteers(ctx)
	if got := len(c.ctl.steersAcked); got != n {
		t.Fatalf("the first scan knew %d requests acknowledged, want %d", got, n)
	}
	if allocs := testing.AllocsPerRun(5, func() { c.checkSteers(ctx) }); allocs > 100 {
		t.Fatalf("a scan of an unchanged steers/requests made %.0f allocations, want at most 100", allocs)
	}
}

// A request written after a scan that skipped an unchanged
// steers/requests is taken by the next scan, and one written during the
// slack after a change is taken too: here a damaged request, refused
// with an acknowledgement. Run with -count to catch a request written
// within the directory's timestamp granularity.
func TestSteerScanSeesANewRequest(t *testing.T) {
	dir := steerScanDir(t, 100)
	c := &Coordinator{core: &core{ctl: newControl(dir, false), logger: slog.New(slog.DiscardHandler), now: time.Now}}
	ctx := context.Background()
	c.checkSteers(ctx)
	c.checkSteers(ctx) // skipped: unchanged
	for i := range 3 {
		name := fmt.Sprintf("%064x.json", 1000+i)
		if err := os.WriteFile(filepath.Join(dir, SteerRequestsDir, name), []byte("not json"), 0o600); err != nil {
			t.Fatal(err)
		}
		c.checkSteers(ctx)
		var ack SteerAck
		data, err := os.ReadFile(filepath.Join(dir, SteerAcksDir, name))
		if err != nil {
			t.Fatalf("request %d written after an unchanged scan: no acknowledgement: %v", i, err)
		}
		if err := json.Unmarshal(data, &ack); err != nil || ack.Effect != SteerRefused {
			t.Fatalf("request %d: acknowledgement %s (%v), want refused", i, data, err)
		}
	}
}

// A listing is trusted for at most steerRelist: after it, an unchanged
// steers/requests is listed again (a filesystem that keeps no directory
// times delays a request by at most that).
func TestSteerScanRelistsAfterSteerRelist(t *testing.T) {
	dir := steerScanDir(t, 10)
	c := &Coordinator{core: &core{ctl: newControl(dir, false), logger: slog.New(slog.DiscardHandler), now: time.Now}}
	c.checkSteers(context.Background())
	st, err := os.Stat(filepath.Join(dir, SteerRequestsDir))
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	if !c.ctl.steersUnchanged(st, now) {
		t.Fatal("a listing just taken of an unchanged directory is not trusted")
	}
	if c.ctl.steersUnchanged(st, now.Add(steerRelist)) {
		t.Fatalf("a listing %v old is still trusted", steerRelist)
	}
}
