package cli

import (
	"bytes"
	"context"
	"fmt"
	"github.com/agentrt/agentrt/supervise"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Set AGENTRT_UPDATE_GOLDEN=1 to rewrite testdata/top/*.golden.
const updateGoldenEnv = "AGENTRT_UPDATE_GOLDEN"

// topStore makes a SQLite store holding runs of several kinds: a live
// exact run with events and no usage yet, an ended exact run with usage,
// a rounds run, a tool loop, and a run whose record does not decode. Its
// clock is fixed, so frames do not depend on when the test runs.
func topStore(t *testing.T) (string, store.Store) {
	t.Helper()
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "runs.db")
	clock := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	s, err := sqlite.Open(ctx, path, sqlite.Options{Now: func() time.Time {
		clock = clock.Add(time.Second)
		return clock
	}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	doc := func(v any) canonjson.Value {
		d, err := canonjson.ToValue(v)
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	delivered := true
	text := "done"
	cost := ledger.ExactAmount(0.0125)
	runs := []store.Run{
		{ID: "run-ended", Kind: "execute", Status: store.StatusCompleted, Doc: doc(kernel.Record{Task: "summarise the report",
			Provider: "scripted", Delivered: &delivered, Text: &text,
			Usage: &kernel.Usage{Usage: ledger.Usage{InputTokens: ledger.ExactAmount[int64](1200), OutputTokens: ledger.ExactAmount[int64](300), CostUSD: cost}}})},
		{ID: "run-rounds", Kind: kernel.KindRounds, Status: store.StatusFailed, Doc: doc(kernel.RoundsRecord{Task: "plan the migration", Provider: "scripted", Agents: []kernel.RoundsAgent{}, MaxIterations: 3, MaxConcurrency: 1, Iterations: 2, Decision: "stop"})},
		{ID: "run-loop", Kind: kernel.KindToolLoop, Status: store.StatusInterrupted, Doc: doc(kernel.ToolLoopRecord{User: "list the files\nand count them", Tools: []string{}})},
		{ID: "run-broken", Kind: "execute", Status: store.StatusFailed, Doc: canonjson.ObjectValue([]canonjson.Member{{Name: "task", Value: canonjson.NumberValue(7)}})},
		{ID: "run-live", Kind: "execute", Status: store.StatusRunning, LeaseUntil: time.Date(2100, 1, 1, 0, 0, 0, 0, time.UTC), Doc: doc(kernel.Record{Task: "fix the failing test", Provider: "scripted"})},
	}
	for _, r := range runs {
		created, err := s.CreateRun(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		if r.ID != "run-live" {
			continue
		}
		var events []store.NewEvent
		for i, msg := range []string{"reading the test", "found the bug", "patching"} {
			events = append(events, store.NewEvent{ID: "e" + string(rune('a'+i)), Type: "message.part.updated", Time: clock,
				Body: canonjson.ObjectValue([]canonjson.Member{{Name: "text", Value: canonjson.StringValue(msg)}})})
		}
		if _, err := s.AppendEvents(ctx, created.Fence(), events); err != nil {
			t.Fatal(err)
		}
	}
	return path, s
}

// tornRunDir writes a supervise run dir as a crash leaves it: a root
// spawn (which is the run, not a worker), three workers (one nested,
// one settled, one in flight), the router manager's transcript records,
// a corrupt line and a torn last line.
func tornRunDir(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	lines := []string{
		`{"kind":"run-started","runId":"sup-1","startedAtMs":1772366400000,"task":"refactor the parser"}`,
		`{"kind":"spawned","label":"root","node":"sup-1","task":"refactor the parser"}`,
		`{"kind":"spawned","label":"lexer","node":"sup-1:s1","reserved":{"microUsd":500000,"tokens":20000},"task":"split the lexer"}`,
		`{"kind":"transcript","messages":[{"role":"assistant","toolCalls":[{"args":{"profile":"writer","task":"split the lexer"},"id":"c1","name":"agent_runtime_coordination_spawn_worker"}]}],"node":"sup-1"}`,
		`{"kind":"spawned","label":"tests","node":"sup-1:s2","reserved":{"tokens":10000},"task":"write tests"}`,
		`{"kind":"transcript","messages":[{"content":"- spawn_worker → ok: {\"workerId\":\"sup-1:s2\"}","role":"tool","toolCallId":"c2"}],"node":"sup-1"}`,
		`{"kind":"spawned","label":"lexer-docs","node":"sup-1:s1:s3","parent":"sup-1:s1","task":"document the lexer"}`,
		`this line is not JSON`,
		`{"kind":"settled","node":"sup-1:s2","spent":{"iterations":3,"microUsd":15000,"tokens":4200},"state":"done","verdict":{"passed":true}}`,
		`{"kind":"settled","node":"sup-1:s1:s3","spent":{"iterations":1},"state":"failed","reason":"worker-error"}`,
	}
	data := strings.Join(lines, "\n") + "\n" + `{"kind":"settled","node":"sup-1:s1","sta`
	if err := os.WriteFile(filepath.Join(dir, "spawn-journal.jsonl"), []byte(data), 0o600); err != nil {
		t.Fatal(err)
	}
	return dir
}

// checkGolden compares got with testdata/top/name.golden.
func checkGolden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "top", name+".golden")
	if os.Getenv(updateGoldenEnv) != "" {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run with %s=1 to write it)", err, updateGoldenEnv)
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("frame differs from %s (-want +got):\n%s", path, diff)
	}
}

// agentrt top --once prints one plain frame (stdout is no terminal
// here): store runs of every kind with unknowns spelled out, and a run
// dir's workers despite a corrupt and a torn journal line, the root
// spawn never among them (runtime spec §15 behaviour 71), and its events
// without the manager's transcript records (issue 13: the conversation
// is journaled for resume, not a line for people).
func TestTopOnceGolden(t *testing.T) {
	db, s := topStore(t)
	s.Close()
	dir := tornRunDir(t)
	tests := []struct {
		name string
		args []string
	}{
		{name: "store", args: []string{"--db", db}},
		{name: "rundir", args: []string{"--run-dir", dir}},
		{name: "both", args: []string{"--db", db, "--run-dir", dir}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			journal, _ := os.ReadFile(filepath.Join(dir, "spawn-journal.jsonl"))
			var out, errb bytes.Buffer
			code := Main(context.Background(), append([]string{"top", "--once"}, tt.args...), IO{In: strings.NewReader(""), Out: &out, Err: &errb})
			if code != 0 || errb.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, errb.String())
			}
			if strings.Contains(out.String(), "\x1b[") {
				t.Errorf("a frame for a non-terminal has escape sequences:\n%q", out.String())
			}
			checkGolden(t, tt.name, out.String())
			if after, _ := os.ReadFile(filepath.Join(dir, "spawn-journal.jsonl")); !bytes.Equal(after, journal) {
				t.Error("top changed the run dir's journal")
			}
		})
	}
}

// A run dir that holds no run yet (made before its supervisor starts)
// is reported in the frame, plainly (not as an open error), not a crash, and the command still
// succeeds so a script can read what it shows. One that does not exist
// at all is a usage error (TestTopRunDirMissingIsUsageError), as a
// missing ROOT is.
func TestTopOnceMissingRunDir(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	code := Main(context.Background(), []string{"top", "--once", "--run-dir", dir}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if want := "! run dir " + dir + ": no spawn-journal.jsonl in it (yet): no run has journaled there"; code != 0 || !strings.Contains(out.String(), want) {
		t.Errorf("exit %d, want 0 and %q in the frame:\n%s", code, want, out.String())
	}
}

// A store-journal run's dir (agentrt supervise --journal-in-store) holds
// its coordination log but no spawn-journal.jsonl: its run has
// journaled, in the run store, and the frame says so rather than that
// no run journaled there.
func TestTopOnceStoreJournalRunDir(t *testing.T) {
	var out, errb bytes.Buffer
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, supervise.CoordinationLogFile), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	code := Main(context.Background(), []string{"top", "--once", "--run-dir", dir}, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	want := "! run dir " + dir + ": journal kept in the run store"
	if code != 0 || !strings.Contains(out.String(), want) || strings.Contains(out.String(), "no run has journaled there") {
		t.Errorf("exit %d, want 0 and %q in the frame:\n%s", code, want, out.String())
	}
}

func press(m tea.Model, keys ...string) (tea.Model, tea.Cmd) {
	var cmd tea.Cmd
	for _, k := range keys {
		var msg tea.KeyPressMsg
		switch k {
		case "up":
			msg = tea.KeyPressMsg{Code: tea.KeyUp}
		case "down":
			msg = tea.KeyPressMsg{Code: tea.KeyDown}
		case "enter":
			msg = tea.KeyPressMsg{Code: tea.KeyEnter}
		case "esc":
			msg = tea.KeyPressMsg{Code: tea.KeyEscape}
		default:
			msg = tea.KeyPressMsg{Code: rune(k[0]), Text: k}
		}
		m, cmd = m.Update(msg)
	}
	return m, cmd
}

// isQuit reports whether cmd quits the program.
func isQuit(cmd tea.Cmd) bool {
	if cmd == nil {
		return false
	}
	_, ok := cmd().(tea.QuitMsg)
	return ok
}

// The model is driven with key and mouse messages, no terminal: select,
// open detail, cancel (a store run through the store; a nested supervise
// worker refused with its lead named; a direct one refused with the
// reason), quit.
func TestTopModelKeys(t *testing.T) {
	ctx := context.Background()
	_, s := topStore(t)
	dir := tornRunDir(t)
	ops := 0
	src := &topSource{store: s, dirs: []string{dir}, limit: 20, now: func() time.Time { return time.Date(2026, 3, 1, 13, 0, 0, 0, time.UTC) },
		ackWait: 50 * time.Millisecond, newOperationID: func() string { ops++; return fmt.Sprintf("op-%d", ops) }}
	start := newTopModel(ctx, src)
	start.snap = src.load(ctx)
	// Rows: five store runs (newest first: run-live is row 0), then
	// sup-1 (row 5) and its workers s1, s2, s1:s3 (rows 6-8).
	cancelWith := func(m tea.Model) string {
		t.Helper()
		m, cmd := press(m, "c")
		if cmd == nil {
			t.Fatal("c returned no command")
		}
		m, _ = m.Update(cmd())
		return m.(topModel).notice
	}
	tests := []struct {
		name       string
		keys       []string
		wantSel    int
		wantDetail bool
		wantQuit   bool
		wantCancel string // a substring of the notice after c
		wantFrame  string // a substring of the frame
	}{
		{name: "starts on the newest run", wantSel: 0, wantFrame: "> run-live"},
		{name: "down moves", keys: []string{"down", "j"}, wantSel: 2},
		{name: "up stops at the top", keys: []string{"down", "up", "up", "k"}, wantSel: 0},
		{name: "down stops at the bottom", keys: strings.Fields(strings.Repeat("down ", 20)), wantSel: 8},
		{name: "enter opens run detail", keys: []string{"enter"}, wantDetail: true, wantFrame: "recorded  3 events, 0 ledger entries"},
		{name: "enter on a worker opens its detail", keys: []string{"down", "down", "down", "down", "down", "down", "enter"}, wantSel: 6, wantDetail: true, wantFrame: "worker sup-1:s1 of run sup-1"},
		{name: "esc closes detail", keys: []string{"enter", "esc"}},
		{name: "cancel a live store run", wantCancel: "run run-live: cancel_requested (status running)"},
		{name: "cancel an ended store run", keys: []string{"down"}, wantSel: 1, wantCancel: "not_live"},
		// The torn run dir has no supervisor: requests are written and
		// reported as not acknowledged, never as done.
		{name: "cancel a nested worker is refused naming its lead", keys: strings.Fields(strings.Repeat("down ", 8)), wantSel: 8,
			wantCancel: "cancel refused: sup-1:s1:s3 is a nested worker; cancel its top-level lead sup-1:s1"},
		{name: "cancel a direct worker is requested through the run dir", keys: strings.Fields(strings.Repeat("down ", 6)), wantSel: 6,
			wantCancel: "worker sup-1:s1: cancel requested (operation op-"},
		{name: "cancel a supervise run is requested through the run dir", keys: strings.Fields(strings.Repeat("down ", 5)), wantSel: 5,
			wantCancel: "run sup-1: cancel requested (operation op-"},
		{name: "q quits", keys: []string{"q"}, wantQuit: true},
		{name: "esc quits without detail", keys: []string{"esc"}, wantQuit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var m tea.Model = start
			m, cmd := press(m, tt.keys...)
			tm := m.(topModel)
			if tm.sel != tt.wantSel || (tm.view == topViewDetail) != tt.wantDetail {
				t.Errorf("selected row %d, detail %v; want %d, %v", tm.sel, (tm.view == topViewDetail), tt.wantSel, tt.wantDetail)
			}
			if got := isQuit(cmd); got != tt.wantQuit {
				t.Errorf("quit %v, want %v", got, tt.wantQuit)
			}
			if tt.wantFrame != "" && !strings.Contains(tm.frame(), tt.wantFrame) {
				t.Errorf("frame lacks %q:\n%s", tt.wantFrame, tm.frame())
			}
			if tt.wantCancel != "" {
				if got := cancelWith(m); !strings.Contains(got, tt.wantCancel) {
					t.Errorf("cancel notice %q, want it to contain %q", got, tt.wantCancel)
				}
			}
		})
	}
	r, err := s.GetRun(ctx, "run-live")
	if err != nil {
		t.Fatal(err)
	}
	if rec, err := kernel.DecodeRecord(r.Doc); err != nil || rec.CancelRequested == nil {
		t.Errorf("the store run has no cancel request recorded: %v", err)
	}
}

// A mouse click selects the row under it; a second click opens its
// detail; the wheel moves the selection.
func TestTopModelMouse(t *testing.T) {
	ctx := context.Background()
	src := &topSource{dirs: []string{tornRunDir(t)}}
	m := newTopModel(ctx, src)
	m.snap = src.load(ctx)
	lines, rowOf := m.layout()
	y := -1
	for i, l := range lines {
		if strings.Contains(l, "sup-1:s2") {
			y = i
			break
		}
	}
	if y < 0 {
		t.Fatalf("no line for sup-1:s2:\n%s", strings.Join(lines, "\n"))
	}
	var tm tea.Model = m
	tm, _ = tm.Update(tea.MouseClickMsg{X: 4, Y: y, Button: tea.MouseLeft})
	if got := tm.(topModel); got.sel != rowOf[y] || (got.view == topViewDetail) {
		t.Fatalf("after one click: row %d, detail %v; want row %d, no detail", got.sel, (got.view == topViewDetail), rowOf[y])
	}
	tm, _ = tm.Update(tea.MouseClickMsg{X: 4, Y: y, Button: tea.MouseLeft})
	if !(tm.(topModel).view == topViewDetail) {
		t.Error("a second click did not open the detail")
	}
	tm, _ = tm.Update(tea.MouseClickMsg{X: 0, Y: 0, Button: tea.MouseLeft})
	if got := tm.(topModel); got.sel != rowOf[y] {
		t.Errorf("a click on the header moved the selection to %d", got.sel)
	}
	tm, _ = tm.Update(tea.MouseWheelMsg{Button: tea.MouseWheelUp})
	if got := tm.(topModel).sel; got != rowOf[y]-1 {
		t.Errorf("wheel up: row %d, want %d", got, rowOf[y]-1)
	}
}

// A refresh keeps the selection on the same run or worker even when
// the rows move, and only the newest refresh timer reads again.
func TestTopModelRefresh(t *testing.T) {
	ctx := context.Background()
	src := &topSource{dirs: []string{tornRunDir(t)}}
	m := newTopModel(ctx, src)
	first := src.load(ctx)
	var tm tea.Model = m
	tm, _ = tm.Update(topSnapshotMsg(first))
	tm, _ = press(tm, "down", "down") // sup-1:s2
	if got := tm.(topModel).selectedKey(); got != [2]string{"sup-1", "sup-1:s2"} {
		t.Fatalf("selected %v", got)
	}
	moved := first
	moved.Runs = append([]topRun{{ID: "new-run", Status: "running", Live: true}}, first.Runs...)
	tm, cmd := tm.Update(topSnapshotMsg(moved))
	if got := tm.(topModel).selectedKey(); got != [2]string{"sup-1", "sup-1:s2"} {
		t.Errorf("after a refresh that added a run above: selected %v", got)
	}
	if cmd == nil {
		t.Fatal("a snapshot scheduled no refresh")
	}
	tick := tm.(topModel).tick
	tests := []struct {
		name     string
		msg      topTickMsg
		wantRead bool
	}{
		{name: "the current timer reads again", msg: topTickMsg(tick), wantRead: true},
		{name: "an older timer is dropped", msg: topTickMsg(tick - 1)},
	}
	for _, tt := range tests {
		if _, cmd := tm.Update(tt.msg); (cmd != nil) != tt.wantRead {
			t.Errorf("%s: read %v, want %v", tt.name, cmd != nil, tt.wantRead)
		}
	}
}

// On a short terminal the frame is a window that keeps the selected
// row in view, and a click maps through that window.
func TestTopModelShortTerminal(t *testing.T) {
	ctx := context.Background()
	src := &topSource{dirs: []string{tornRunDir(t)}}
	m := newTopModel(ctx, src)
	m.snap = src.load(ctx)
	var tm tea.Model = m
	tm, _ = tm.Update(tea.WindowSizeMsg{Width: 80, Height: 6})
	tm, _ = press(tm, "down", "down", "down") // sup-1:s1:s3
	got := tm.(topModel)
	frame := got.frame()
	if n := strings.Count(frame, "\n"); n != 6 {
		t.Errorf("frame has %d lines on a 6-line terminal:\n%s", n, frame)
	}
	if !strings.Contains(frame, ">   sup-1:s1:s3") {
		t.Errorf("the selected worker is out of view:\n%s", frame)
	}
	for _, l := range strings.Split(frame, "\n") {
		if len([]rune(l)) > 80 {
			t.Errorf("line wider than the terminal: %q", l)
		}
	}
	lines, _ := got.screen()
	for y, l := range lines {
		if strings.Contains(l, "sup-1:s2") {
			tm, _ = tm.Update(tea.MouseClickMsg{Y: y, Button: tea.MouseLeft})
			if k := tm.(topModel).selectedKey(); k != [2]string{"sup-1", "sup-1:s2"} {
				t.Errorf("a click on the sup-1:s2 line selected %v", k)
			}
		}
	}
}

// Behaviour 71 (spec §15): top --once over a run dir with a partial
// journal line renders all valid workers; a root spawn is never listed
// as a worker; cancel on a nested worker is refused with the lead named.
func TestTopBehaviour71(t *testing.T) {
	ctx := context.Background()
	dir := tornRunDir(t)
	var out, errb bytes.Buffer
	if code := Main(ctx, []string{"top", "--once", "--run-dir", dir}, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	for _, w := range []string{"sup-1:s1 ", "sup-1:s2 ", "sup-1:s1:s3 "} {
		if !strings.Contains(out.String(), w) {
			t.Errorf("worker %s is missing from the frame:\n%s", w, out.String())
		}
	}
	run, err := readSuperviseRun(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, w := range run.Workers {
		ids = append(ids, w.ID)
	}
	if diff := cmp.Diff([]string{"sup-1:s1", "sup-1:s2", "sup-1:s1:s3"}, ids); diff != "" {
		t.Errorf("workers (-want +got); the root spawn sup-1 must not be one:\n%s", diff)
	}
	src := &topSource{dirs: []string{dir}}
	if got, want := src.cancel(ctx, run, &run.Workers[2]), "cancel refused: sup-1:s1:s3 is a nested worker; cancel its top-level lead sup-1:s1"; got != want {
		t.Errorf("cancel of the nested worker: %q, want %q", got, want)
	}
	// A journal that records a root spawn but no run-started record
	// still names the run after the root, never as a worker.
	noStart := t.TempDir()
	journal := `{"kind":"spawned","label":"root","node":"sup-2","task":"t"}` + "\n" +
		`{"kind":"spawned","label":"w","node":"sup-2:s1","task":"u"}` + "\n" + `{"kind":"sett`
	if err := os.WriteFile(filepath.Join(noStart, "spawn-journal.jsonl"), []byte(journal), 0o600); err != nil {
		t.Fatal(err)
	}
	run, err = readSuperviseRun(ctx, noStart)
	if err != nil {
		t.Fatal(err)
	}
	if run.ID != "sup-2" || len(run.Workers) != 1 || run.Workers[0].ID != "sup-2:s1" || run.Workers[0].Lead != "" {
		t.Errorf("run %q with workers %+v; want run sup-2 with the one direct worker sup-2:s1", run.ID, run.Workers)
	}
}
