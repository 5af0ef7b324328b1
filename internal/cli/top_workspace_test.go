package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	tea "charm.land/bubbletea/v2"
	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// writeLines writes one JSON line per value of vs to path, and tail
// after them unterminated (a torn append) when it is not empty.
func writeLines(t testing.TB, path string, tail string, vs ...any) {
	t.Helper()
	var b bytes.Buffer
	for _, v := range vs {
		line, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		b.Write(line)
		b.WriteByte('\n')
	}
	b.WriteString(tail)
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b.Bytes(), 0o600); err != nil {
		t.Fatal(err)
	}
}

// topWorkspace makes a workspace as supervise leaves it under
// ROOT/.agent/supervisor: sup-old, finished, whose workers logged their
// turns (tokens) and settlements (latencies); sup-new, started later
// and running, one worker settled and one in flight; and a run dir
// being set up, with no journal yet.
func topWorkspace(t testing.TB) string {
	t.Helper()
	root := t.TempDir()
	base := filepath.Join(root, filepath.FromSlash(supervise.SupervisorDir))
	i64 := func(v int64) *int64 { return &v }
	t0 := int64(1772366400000) // 2026-03-01T12:00:00Z
	old := supervise.RunDirFor(root, "sup-old")
	writeLines(t, filepath.Join(old, supervise.SpawnJournalFile), "",
		supervise.Record{Kind: supervise.KindRunStarted, RunID: "sup-old", StartedAtMS: t0, Task: "port the parser"},
		supervise.Record{Kind: supervise.KindSpawned, Node: "sup-old:s1", Label: "lexer", Task: "port the lexer", Reserved: &supervise.BudgetRecord{Tokens: i64(20000)}},
		supervise.Record{Kind: supervise.KindSpawned, Node: "sup-old:s2", Label: "lexer", Task: "port the lexer again"},
		supervise.Record{Kind: supervise.KindSpawned, Node: "sup-old:s3", Label: "tests", Task: "write the tests"},
		supervise.Record{Kind: supervise.KindSettled, Node: "sup-old:s1", State: "done", Spent: &supervise.SpendRecord{Tokens: i64(900), MicroUSD: i64(3000)}},
		supervise.Record{Kind: supervise.KindSettled, Node: "sup-old:s2", State: "cancelled", Spent: &supervise.SpendRecord{Tokens: i64(100), MicroUSD: i64(500)}},
		supervise.Record{Kind: supervise.KindSettled, Node: "sup-old:s3", State: "done", Spent: &supervise.SpendRecord{Tokens: i64(50)}},
		supervise.Record{Kind: supervise.KindFinished, Outcome: "winner"},
	)
	writeLines(t, supervise.WorkerLogPath(old, "lexer"), "",
		supervise.StreamRecord{Kind: supervise.StreamSpawned, AtMS: t0 + 1000, Node: "sup-old:s1", Text: "port the lexer"},
		supervise.StreamRecord{Kind: supervise.StreamSpawned, AtMS: t0 + 1000, Node: "sup-old:s2", Text: "port the lexer again"},
		supervise.StreamRecord{Kind: supervise.StreamTurnEnded, AtMS: t0 + 3000, Node: "sup-old:s1", Terminal: "completed", InputTokens: i64(700), OutputTokens: i64(200)},
		supervise.StreamRecord{Kind: supervise.StreamTurnEnded, AtMS: t0 + 3500, Node: "sup-old:s2", Terminal: "aborted", InputTokens: i64(100)},
		supervise.StreamRecord{Kind: supervise.StreamSettled, AtMS: t0 + 4000, Node: "sup-old:s2", State: "cancelled"},
		supervise.StreamRecord{Kind: supervise.StreamSettled, AtMS: t0 + 6000, Node: "sup-old:s1", State: "done"},
	)
	writeLines(t, supervise.WorkerLogPath(old, "tests"), `{"kind":"settled","atMs":17723`,
		supervise.StreamRecord{Kind: supervise.StreamSpawned, AtMS: t0 + 2000, Node: "sup-old:s3"},
		supervise.StreamRecord{Kind: supervise.StreamSettled, AtMS: t0 + 4000, Node: "sup-old:s3", State: "done"},
	)
	// A corrupt line in a worker log hides none of the lines around it.
	testsLog := supervise.WorkerLogPath(old, "tests")
	data, err := os.ReadFile(testsLog)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(testsLog, append([]byte("this line is not JSON\n"), data...), 0o600); err != nil {
		t.Fatal(err)
	}
	neu := supervise.RunDirFor(root, "sup-new")
	writeLines(t, filepath.Join(neu, supervise.SpawnJournalFile), `{"kind":"settled","node":"sup-new:s2","sta`,
		supervise.Record{Kind: supervise.KindRunStarted, RunID: "sup-new", StartedAtMS: t0 + 60_000, Task: "fix the flaky test"},
		supervise.Record{Kind: supervise.KindSpawned, Node: "sup-new:s1", Label: "probe", Task: "find the flake"},
		supervise.Record{Kind: supervise.KindSpawned, Node: "sup-new:s2", Label: "fix", Task: "fix it"},
		supervise.Record{Kind: supervise.KindSettled, Node: "sup-new:s1", State: "done", Spent: &supervise.SpendRecord{Tokens: i64(300)}},
	)
	writeLines(t, supervise.WorkerLogPath(neu, "probe"), "",
		supervise.StreamRecord{Kind: supervise.StreamSpawned, AtMS: t0 + 61_000, Node: "sup-new:s1"},
		supervise.StreamRecord{Kind: supervise.StreamTurnEnded, AtMS: t0 + 62_000, Node: "sup-new:s1", Terminal: "completed"},
		supervise.StreamRecord{Kind: supervise.StreamSettled, AtMS: t0 + 63_500, Node: "sup-new:s1", State: "done"},
	)
	if err := os.MkdirAll(filepath.Join(base, "sup-setting-up"), 0o755); err != nil {
		t.Fatal(err)
	}
	// The old run's dir changed last: order is by start, not by mtime.
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(old, later, later); err != nil {
		t.Fatal(err)
	}
	return root
}

// agentrt top ROOT finds the workspace's supervise runs under
// ROOT/.agent/supervisor, newest first by start, passes over a run dir
// that has no journal yet, and picks up a run that appears on the next
// read (runtime spec §11: per supervisor run under the workspace's run
// root, newest first; reads are tolerant).
func TestTopWorkspaceDiscovery(t *testing.T) {
	ctx := context.Background()
	root := topWorkspace(t)
	src := &topSource{root: root, limit: 20}
	ids := func(s topSnapshot) []string {
		var out []string
		for _, r := range s.Runs {
			out = append(out, r.ID)
		}
		return out
	}
	var open tea.Model = newTopModel(ctx, src)
	open, _ = open.Update(open.Init()())
	snap := open.(topModel).snap
	if k := open.(topModel).selectedKey(); k != [2]string{"sup-new", ""} {
		t.Errorf("top opened on %v, want the newest run sup-new", k)
	}
	if len(snap.Errors) != 0 {
		t.Fatalf("errors: %q", snap.Errors)
	}
	if diff := cmp.Diff([]string{"sup-new", "sup-old"}, ids(snap)); diff != "" {
		t.Errorf("runs (-want +got):\n%s", diff)
	}
	// The run being set up writes its journal: the next read shows it.
	later := `{"kind":"run-started","runId":"sup-setting-up","startedAtMs":1772366500000,"task":"t"}` + "\n"
	if err := os.WriteFile(filepath.Join(root, ".agent", "supervisor", "sup-setting-up", supervise.SpawnJournalFile), []byte(later), 0o600); err != nil {
		t.Fatal(err)
	}
	// The open top's next refresh tick reads again and shows it.
	_, read := open.Update(topTickMsg(open.(topModel).tick))
	if read == nil {
		t.Fatal("the refresh tick read nothing")
	}
	open, _ = open.Update(read())
	if diff := cmp.Diff([]string{"sup-setting-up", "sup-new", "sup-old"}, ids(open.(topModel).snap)); diff != "" {
		t.Errorf("after a run appeared (-want +got):\n%s", diff)
	}
	// --limit bounds how many run dirs one read opens.
	src.limit = 1
	if got := len(src.load(ctx).Runs); got != 1 {
		t.Errorf("--limit 1 read %d workspace runs", got)
	}
	// A run dir named with --run-dir is shown once.
	src.limit, src.dirs = 20, []string{supervise.RunDirFor(root, "sup-old")}
	if diff := cmp.Diff([]string{"sup-old", "sup-setting-up", "sup-new"}, ids(src.load(ctx))); diff != "" {
		t.Errorf("with --run-dir of a workspace run (-want +got):\n%s", diff)
	}
	// A workspace without supervise runs has none, and no error.
	if snap := (&topSource{root: t.TempDir()}).load(ctx); len(snap.Runs) != 0 || len(snap.Errors) != 0 {
		t.Errorf("empty workspace: %d runs, errors %q", len(snap.Runs), snap.Errors)
	}
}

// The totals of a supervise run (runtime spec §11): workers by state,
// in flight against settled, tokens in and out from the worker logs
// (unknown where no turn reported them, a floor where one did not),
// usd (unknown, never $0, when no settlement recorded a cost) and the
// latency distribution n/min/median/p90/max.
func TestTopTotals(t *testing.T) {
	ctx := context.Background()
	root := topWorkspace(t)
	type view struct {
		States            map[string]int
		InFlight, Settled int
		TokIn, TokOut     string
		USD               string
		Latency           string
		WorkerLatencies   []string
	}
	tests := []struct {
		run  string
		want view
	}{
		{run: "sup-old", want: view{
			States: map[string]int{"done": 2, "cancelled": 1}, Settled: 3,
			// s2's turn reported no output tokens; s3 ran no turn.
			TokIn: "≥ 800", TokOut: "≥ 200", USD: "≥ $0.0035",
			Latency:         "n=3 min 2s median 3s p90 5s max 5s",
			WorkerLatencies: []string{"5s", "3s", "2s"},
		}},
		{run: "sup-new", want: view{
			States: map[string]int{"done": 1, "running": 1}, InFlight: 1, Settled: 1,
			TokIn: "unknown", TokOut: "unknown", USD: "unknown",
			Latency:         "n=1 min 2.5s median 2.5s p90 2.5s max 2.5s",
			WorkerLatencies: []string{"2.5s", "unknown"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.run, func(t *testing.T) {
			r, err := readSuperviseRun(ctx, supervise.RunDirFor(root, tt.run))
			if err != nil {
				t.Fatal(err)
			}
			tot := r.Totals
			got := view{States: tot.States, InFlight: tot.InFlight, Settled: tot.Settled,
				TokIn: tot.TokIn.text(tot.InFlight > 0), TokOut: tot.TokOut.text(tot.InFlight > 0), USD: tot.USD,
				Latency: tot.latencyText()}
			for _, w := range r.Workers {
				got.WorkerLatencies = append(got.WorkerLatencies, w.Latency)
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("totals (-want +got):\n%s", diff)
			}
		})
	}
}

// The latency distribution takes nearest ranks: p90 of ten is the
// ninth, the median of four the second.
func TestTopLatencyDistribution(t *testing.T) {
	secs := func(ns ...int) []time.Duration {
		var out []time.Duration
		for _, n := range ns {
			out = append(out, time.Duration(n)*time.Second)
		}
		return out
	}
	tests := []struct {
		name string
		l    []time.Duration
		want string
	}{
		{"none known", nil, "n=0 (unknown)"},
		{"one", secs(4), "n=1 min 4s median 4s p90 4s max 4s"},
		{"four", secs(1, 2, 3, 4), "n=4 min 1s median 2s p90 4s max 4s"},
		{"ten", secs(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), "n=10 min 1s median 5s p90 9s max 10s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := (&topTotals{Latencies: tt.l}).latencyText(); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// agentrt top ROOT --once prints the workspace's runs with their
// totals; --detail starts in the newest run's detail, --log in its log;
// the two together are a usage error.
func TestTopWorkspaceOnceGolden(t *testing.T) {
	root := topWorkspace(t)
	tests := []struct {
		name string
		args []string
	}{
		{name: "workspace", args: []string{root}},
		{name: "workspace-detail", args: []string{root, "--detail"}},
		{name: "workspace-log", args: []string{root, "--log"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"top", "--once", "--db", topEmptyStore(t)}, tt.args...)
			if code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != 0 || errb.Len() != 0 {
				t.Fatalf("exit %d, stderr %q", code, errb.String())
			}
			checkGolden(t, tt.name, strings.ReplaceAll(out.String(), root, "ROOT"))
		})
	}
	var out, errb bytes.Buffer
	if code := Main(context.Background(), []string{"top", "--once", root, "--detail", "--log"}, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitUsage || !strings.Contains(errb.String(), "give one") {
		t.Errorf("--detail --log: exit %d, stderr %q", code, errb.String())
	}
	errb.Reset()
	if code := Main(context.Background(), []string{"top", "--once", filepath.Join(root, "nope")}, IO{In: strings.NewReader(""), Out: &out, Err: &errb}); code != ExitUsage || !strings.Contains(errb.String(), "not a directory") {
		t.Errorf("missing ROOT: exit %d, stderr %q", code, errb.String())
	}
}

// topEmptyStore is a SQLite store without runs, so a frame shows only
// the workspace's.
func topEmptyStore(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "empty.db")
	s, err := sqlite.Open(context.Background(), path, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

// The keys o (overview), l (log) and tab (next run) move between the
// views and the runs.
func TestTopViewKeys(t *testing.T) {
	ctx := context.Background()
	root := topWorkspace(t)
	src := &topSource{root: root, limit: 20}
	m := newTopModel(ctx, src)
	m.snap = src.load(ctx)
	// Rows: sup-new (0), its workers (1, 2), sup-old (3), its workers (4-6).
	tests := []struct {
		name      string
		keys      []string
		wantSel   int
		wantView  topView
		wantFrame string
	}{
		{name: "tab moves to the next run", keys: []string{"tab"}, wantSel: 3},
		{name: "tab wraps around", keys: []string{"tab", "tab"}, wantSel: 0},
		{name: "shift+tab moves back", keys: []string{"down", "shift+tab"}, wantSel: 3},
		{name: "l opens the run's log", keys: []string{"l"}, wantView: topViewLog, wantFrame: "log of run sup-new (last 4)"},
		{name: "l on a worker opens its log", keys: []string{"tab", "down", "l"}, wantSel: 4, wantView: topViewLog,
			wantFrame: "turn-ended   completed in 700 out 200"},
		{name: "o returns to the overview", keys: []string{"l", "o"}, wantFrame: "TOTALS  2 worker(s): 1 running · 1 done; 1 in flight, 1 settled"},
		{name: "enter from the log opens the detail", keys: []string{"l", "enter"}, wantView: topViewDetail},
		{name: "esc from the log returns to the overview", keys: []string{"l", "esc"}},
		{name: "worker detail shows tokens", keys: []string{"tab", "down", "enter"}, wantSel: 4, wantView: topViewDetail, wantFrame: "tokens    in 700 out 200"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tm tea.Model = m
			var cmd tea.Cmd
			for _, k := range tt.keys {
				switch k {
				case "tab":
					tm, cmd = tm.Update(tea.KeyPressMsg{Code: tea.KeyTab})
				case "shift+tab":
					tm, cmd = tm.Update(tea.KeyPressMsg{Code: tea.KeyTab, Mod: tea.ModShift})
				default:
					tm, cmd = press(tm, k)
				}
			}
			if isQuit(cmd) {
				t.Fatal("quit")
			}
			got := tm.(topModel)
			if got.sel != tt.wantSel || got.view != tt.wantView {
				t.Errorf("row %d view %d; want row %d view %d", got.sel, got.view, tt.wantSel, tt.wantView)
			}
			if tt.wantFrame != "" && !strings.Contains(got.frame(), tt.wantFrame) {
				t.Errorf("frame lacks %q:\n%s", tt.wantFrame, got.frame())
			}
		})
	}
}

// BenchmarkTopWorkspaceLoad measures one refresh of a workspace of two
// supervise runs with worker logs: discovery, journals, state, logs.
func BenchmarkTopWorkspaceLoad(b *testing.B) {
	b.ReportAllocs()
	root := topWorkspace(b)
	src := &topSource{root: root, limit: 20}
	ctx := context.Background()
	for b.Loop() {
		if snap := src.load(ctx); len(snap.Runs) != 2 {
			b.Fatalf("%d runs", len(snap.Runs))
		}
	}
}
