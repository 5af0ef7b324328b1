package cli_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// FD-08, RES-05, RES-06: the process that started a retained run is
// paused (SIGSTOP) mid-run, well past the run's turn and any lease a
// run of this runtime holds; two other processes recover it through the
// shared run store, and the run is recovered exactly once: both re-attach
// to the one dispatched run (the same control reference, never a second
// dispatch), a third reads its events once each and its result, and the
// paused starter, continued, ends with the same run's result. The store
// holds one retained record, settled completed.
func TestRetainedStarterPausedPastItsLeaseIsRecoveredOnce(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	db := []string{"--db", filepath.Join(t.TempDir(), "agentrt.db")}
	script := writeFile(t, "slow.json", `{"turns":[{"repeat":true,"steps":[{"text":"first part "},{"delayMs":1500},{"text":"second part"}]}]}`)
	url := startServe(t, "--provider", "scripted", "--script", script)
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	starter := startChild(t, func(c *exec.Cmd) { c.Stdout = w }, append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--json",
		"--provider", "remote", "--base-url", url}, db...)...)
	w.Close()
	lines := bufio.NewScanner(r)
	var ref canonjson.Value
	var starterLines []string
	for lines.Scan() {
		starterLines = append(starterLines, lines.Text())
		v := decode(t, lines.Text())
		if c, ok := v.Get("controlRef"); ok {
			ref = c
			continue
		}
		if strings.Contains(lines.Text(), "first part") {
			break
		}
	}
	if !ref.IsValid() {
		t.Fatalf("the starter printed no control ref (%v)", lines.Err())
	}
	if err := starter.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	defer starter.Process.Signal(syscall.SIGCONT)
	// Paused past the turn's end (1.5 s) and past a lease of 2 s.
	time.Sleep(3 * time.Second)

	record := member(ref, "record").Str()
	for i := range 2 {
		out, errOut, code := run(t, "", append([]string{"runs", "recover", record, "--provider", "remote", "--base-url", url, "--json"}, db...)...)
		if code != 0 {
			t.Fatalf("recovery %d while the starter is paused: exit %d\n%s%s", i+1, code, out, errOut)
		}
		v := decode(t, out)
		if member(v, "outcome").Str() != string(retained.Recovered) || member(v, "via").Str() != retained.ViaReattached ||
			!canonjson.Equal(member(v, "controlRef"), ref) {
			t.Fatalf("recovery %d: %s; want the starter's run re-attached (%s)", i+1, out, canonjson.Marshal(ref))
		}
	}
	out, errOut, code := run(t, "", append([]string{"runs", "attach", record, "--provider", "remote", "--base-url", url, "--json"}, db...)...)
	if code != 0 {
		t.Fatalf("runs attach while the starter is paused: exit %d\n%s%s", code, out, errOut)
	}
	// One environment, one turn: every event is turn 1 of environment 1
	// (the scripted provider numbers both), sequences run 1, 2, 3… and
	// the text streamed is the turn's once.
	got := jsonLines(t, out)
	var deltas strings.Builder
	starts := 0
	for i, ev := range got[:len(got)-1] {
		if seq := int(member(ev, "sequence").Float()); seq != i+1 {
			t.Errorf("event %d has sequence %d", i+1, seq)
		}
		if c := member(ev, "cursor").Str(); !strings.HasPrefix(c, "scripted-env-1-t1-") {
			t.Errorf("event %s is not of the one turn dispatched (scripted-env-1-t1-)", c)
		}
		body := member(ev, "event")
		if member(body, "type").Str() == "execution.started" {
			starts++
		}
		if d, ok := member(body, "data").Get("delta"); ok {
			deltas.WriteString(d.Str())
		}
	}
	if starts != 1 || deltas.String() != "first part second part" {
		t.Errorf("%d executions started, text streamed %q; want one execution streaming %q", starts, deltas.String(), "first part second part")
	}
	if res := got[len(got)-1]; member(res, "text").Str() != "first part second part" || member(res, "record").Str() != record {
		t.Errorf("the attached result %s", canonjson.Marshal(res))
	}

	if err := starter.Process.Signal(syscall.SIGCONT); err != nil {
		t.Fatal(err)
	}
	for lines.Scan() {
		starterLines = append(starterLines, lines.Text())
	}
	if err := starter.Wait(); err != nil {
		t.Fatalf("the continued starter: %v\n%s", err, strings.Join(starterLines, "\n"))
	}
	r.Close()
	result := decode(t, starterLines[len(starterLines)-1])
	if !member(result, "success").Bool() || !strings.Contains(member(result, "text").Str(), "second part") {
		t.Errorf("the continued starter's result: %s", starterLines[len(starterLines)-1])
	}

	st, err := sqlite.Open(ctx, db[1], sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.ListOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	var kept []string
	for _, run := range runs {
		if run.Kind == retained.Kind {
			kept = append(kept, run.ID+"/"+string(run.Status))
		}
	}
	if want := record + "/" + string(store.StatusCompleted); len(kept) != 1 || kept[0] != want {
		t.Errorf("retained records %v; want only %s", kept, want)
	}
}
