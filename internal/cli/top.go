package cli

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	tea "charm.land/bubbletea/v2"
	"charm.land/lipgloss/v2"

	"github.com/agentrt/agentrt/internal/termsafe"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// Limits of what top reads and shows.
const (
	// topStoreTimeout bounds every store call one refresh makes.
	topStoreTimeout = 5 * time.Second
	// topTail is how many events the overview shows of a run's tail.
	topTail = 12
	// topLogTail is how many lines a run's or a worker's log keeps, for
	// the log view.
	topLogTail = 200
	// topWidth is the frame width when the terminal's is not known.
	topWidth = 120
	// topRefresh is how often the live view reads again.
	topRefresh = time.Second
	// topAckWait is how long a steer or a cancel of a supervise run waits
	// for the supervisor's acknowledgement before reporting it unknown.
	topAckWait = 3 * time.Second
	// topSteerMax caps a steer message typed into top, in bytes.
	topSteerMax = 4000
	// topControlSource is the source top's steer and cancel requests are
	// recorded with: the reference's (runtime spec §11), so a reader of a
	// run dir sees one vocabulary whichever tool wrote it.
	topControlSource = "agent-runtime-top"
)

func newTopCmd(stdio IO) *cobra.Command {
	sf := storeFlags{existing: true}
	var runDirs []string
	var once, noColor, detail, logView, asJSON bool
	var limit int
	cmd := &cobra.Command{
		Use:   "top [ROOT]",
		Short: "Watch live runs: their status, budget, spend, workers and latest events",
		Long: `Show the runs of a run store (--db, --database), the supervise runs of
the workspace ROOT (default: the current directory), found under
ROOT/.agent/supervisor/ newest first and picked up as they appear, and
supervise run directories named with --run-dir (repeatable; a ROOT that
is itself a run's directory is watched as --run-dir would), refreshed
every second (a run both in the store and in a run directory shows once,
as its run directory's row): per run its
status, task, budget and spend, its workers with their state, verdict,
latency and spend, the totals of a supervise run (workers by state, in
flight and settled, tokens in and out, usd, the latency distribution), and
the tail of its events. Anything not recorded shows
as unknown, never as zero. A half-written journal line is passed over,
never repaired; top writes into a run directory only the steer and cancel
requests asked for.

Keys: up/down (or k/j, or a mouse click) select a run or a worker, enter
opens or closes its detail, o shows the overview, l the selected run's log,
tab moves the focus between runs, s steers it (type the message, enter sends,
esc abandons), c asks to cancel it, r reads again, q or esc quits. A store
run is cancelled through the store (as agentrt runs cancel does). A
supervise run or worker is steered, and the run or a direct worker
cancelled, through its run directory (a nested worker is cancelled with
its lead, which top names), as agentrt supervise steer and cancel do, each request under a
fresh operation id; top waits up to 3 seconds for the supervisor's
acknowledgement (delivered, cancelled, not_live, …) and otherwise says it
is not acknowledged yet. A steer on a run row goes to its manager.

--detail starts in the detail view of the newest run, --log in its log
view. --once prints one frame and exits, as it does when stdout is not a
terminal; the frame has no colours then (or with --no-color).

--json prints one snapshot as JSON and exits: {schemaVersion, runs, errors};
each run {id, kind, status, live, task, runDir, startedAt, budget {tokens,
microUsd}, spend {tokens, inputTokens, outputTokens, microUsd, floor},
supervisor {state, pid, host, detail}, resume, notes, workers, totals, tail};
each worker {id, label, parent, lead, state, verdict, task, latencyMs, budget,
spend, tokensIn, tokensOut}; totals {workers, states, inFlight, settled,
tokensIn, tokensOut, microUsd, floor, latencyMs {n, min, median, p90, max}}.
Every member is present; what is not known is null, never 0 (a null channel
of a known budget is uncapped); floor true says a number may be below the
truth (work in flight, a part unreported). Status "stopped": the run reads as
running and its supervisor is gone (supervisor.state "gone"; resume says how
to go on). Documented in docs/top.md.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if detail && logView {
				return usage("--detail and --log start in two different views; give one")
			}
			if asJSON && (detail || logView) {
				return usage("--json prints every run as data, not a view: leave out --detail and --log")
			}
			// A path shown in the frame and written into requests is
			// text: one that is not UTF-8 is refused, as every other
			// operand is (operand.go).
			for _, d := range runDirs {
				if err := checkPath("--run-dir", d); err != nil {
					return err
				}
				if fi, err := os.Stat(d); err != nil || !fi.IsDir() {
					return usage("--run-dir %q is not a directory: give a supervise run's directory (WORKSPACE/.agent/supervisor/RUN-ID), or the workspace as ROOT to watch its runs as they appear", d)
				}
			}
			root := "."
			if len(args) == 1 {
				root = args[0]
				if err := checkPath("ROOT", root); err != nil {
					return err
				}
				if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
					return usage("ROOT %q is not a directory: give the workspace whose supervise runs to show", root)
				}
				// A supervise run's own directory given as ROOT (it
				// holds no runs under .agent/supervisor) is watched as
				// --run-dir would watch it, rather than show nothing
				// of it.
				if isRunDirOnly(root) {
					runDirs, root = append(runDirs, root), "."
				}
			}
			src := &topSource{dirs: runDirs, root: root, limit: limit}
			if len(runDirs) == 0 || sf.path != "" || sf.database != "" {
				s, err := sf.open(ctx)
				if err != nil {
					return err
				}
				defer s.Close()
				src.store = s
			}
			tty := isTerminal(stdio.Out) && isTerminal(stdio.In)
			m := newTopModel(ctx, src)
			m.color = !noColor && isTerminal(stdio.Out) && os.Getenv("NO_COLOR") == ""
			switch {
			case detail:
				m.view = topViewDetail
			case logView:
				m.view = topViewLog
			}
			if asJSON {
				return writeTopJSON(stdio.Out, src.load(ctx))
			}
			if once || !tty {
				m.snap = src.load(ctx)
				m.sel = m.newestRow()
				// The frame escapes the run data it shows and may
				// carry its own colour sequences: it goes out as is.
				_, err := io.WriteString(machine(stdio.Out), m.frame())
				return err
			}
			m.interactive = true
			p := tea.NewProgram(m, tea.WithContext(ctx), tea.WithInput(stdio.In), tea.WithOutput(machine(stdio.Out)))
			if _, err := p.Run(); err != nil && !errors.Is(err, tea.ErrProgramKilled) {
				return &exitError{code: ExitFailed, err: err}
			}
			return nil
		},
	}
	sf.register(cmd)
	cmd.Flags().StringArrayVar(&runDirs, "run-dir", nil, "a supervise run directory to watch (read-only; repeatable)")
	cmd.Flags().BoolVar(&once, "once", false, "print one frame and exit")
	cmd.Flags().BoolVar(&noColor, "no-color", false, "no colours or other terminal styling")
	cmd.Flags().IntVar(&limit, "limit", 20, "at most this many store runs, and this many workspace runs, newest first")
	cmd.Flags().BoolVar(&detail, "detail", false, "start in the detail view of the newest run")
	cmd.Flags().BoolVar(&logView, "log", false, "start in the log view of the newest run")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one snapshot of the runs and workers as JSON and exit (unknown numbers null)")
	return cmd
}

// isTerminal reports whether f is a terminal.
func isTerminal(f any) bool {
	if w, ok := f.(io.Writer); ok {
		f = unwrap(w)
	}
	fd, ok := f.(interface{ Fd() uintptr })
	return ok && term.IsTerminal(int(fd.Fd()))
}

// topRun is one run as top shows it.
type topRun struct {
	ID     string
	Kind   string
	Status string
	Live   bool
	Task   string
	Budget string
	Spend  string
	// Workers are the run's workers; the root of a supervise run is the
	// run itself, never one of them.
	Workers []topWorker
	// Tail is the run's latest events, oldest first.
	Tail []string
	// Notes are facts about the reading: skipped lines, unreadable parts.
	Notes []string
	// Detail is extra lines the detail view shows.
	Detail []string
	// Totals sums a supervise run's workers; nil for a store run.
	Totals *topTotals
	// started is when the run started; zero when not recorded.
	started time.Time
	// startGuessed says started is when its run dir last changed (no
	// start recorded), which orders the runs and is no start.
	startGuessed bool
	// budget is the run's budget; nil when unknown (a channel nil in
	// it is uncapped).
	budget *supervise.BudgetRecord
	// spend is the run's spend as numbers; nil when unknown.
	spend *topSpend
	// dir is the run directory of a supervise run; empty for a store run.
	dir string
	// supervisor is what the run dir's supervise.lock tells of the
	// run's supervisor, for a run that reads as running; nil when not
	// checked (a store run, an ended run, no supervise.lock).
	supervisor *supervise.HolderProbe
}

// topWorker is one worker of a supervise run.
type topWorker struct {
	ID      string
	Label   string
	Parent  string
	State   string
	Verdict string
	Latency string
	Budget  string
	Spend   string
	// Lead is the direct child of the root this worker descends from;
	// empty for a direct child.
	Lead string
	// Task is what the worker was asked to do.
	Task string
	// Log is the worker's own log (its worker log's lines), oldest
	// first, at most topLogTail.
	Log []string
	// logLabel names the worker log the worker writes to.
	logLabel string
	// latency is from its log's spawned to its settled line; nil when
	// either is missing.
	latency *time.Duration
	// tokIn and tokOut sum the tokens its turns reported.
	tokIn, tokOut tokenSum
	// microUSD is its settled cost; nil when unknown or not settled.
	microUSD *int64
	// budget is what it was given (reserved, else its budget); nil
	// when unknown.
	budget *supervise.BudgetRecord
	// spent is its settled spend; nil when unknown or not settled.
	spent *supervise.SpendRecord
}

// topSpend is a spend as numbers, nil where unknown; floor says a
// number may be below the truth (work in flight, a part unreported).
type topSpend struct {
	Tokens, InputTokens, OutputTokens, MicroUSD *int64
	Floor                                       bool
}

// topSnapshot is everything one read found.
type topSnapshot struct {
	Runs   []topRun
	Errors []string
}

// topSource reads the runs top shows and carries out its cancels.
type topSource struct {
	store store.Store
	dirs  []string
	// root is the workspace whose supervise runs, under
	// root/.agent/supervisor, are discovered on every read; empty for
	// none.
	root  string
	limit int
	// now stamps cancel requests; time.Now when nil.
	now func() time.Time
	// ackWait bounds the wait for a supervisor's acknowledgement;
	// topAckWait when zero.
	ackWait time.Duration
	// newOperationID names each steer and cancel request;
	// rand.Text-based when nil.
	newOperationID func() string
	// follows keeps each run dir's journal tail across reads, so a read
	// costs what the runs wrote since the last.
	follows topFollows
}

func (s *topSource) operationID() string {
	if s.newOperationID != nil {
		return s.newOperationID()
	}
	return "top-" + rand.Text()
}

// awaitAck polls read every 100 ms until it reports done or the ack
// wait has passed; it returns whether read reported done. Running out of
// time is not an error: the request stays unacknowledged.
func (s *topSource) awaitAck(ctx context.Context, read func(context.Context) (bool, error)) (bool, error) {
	wait := s.ackWait
	if wait <= 0 {
		wait = topAckWait
	}
	deadline := time.NewTimer(wait)
	defer deadline.Stop()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		done, err := read(ctx)
		if err != nil || done {
			return done, err
		}
		select {
		case <-ctx.Done():
			return false, context.Cause(ctx)
		case <-deadline.C:
			return false, nil
		case <-tick.C:
		}
	}
}

// load reads every source once. A source that fails is reported in the
// snapshot; the others still show.
func (s *topSource) load(ctx context.Context) topSnapshot {
	var snap topSnapshot
	if s.store != nil {
		runs, err := s.storeRuns(ctx)
		if err != nil {
			snap.Errors = append(snap.Errors, "run store: "+err.Error())
		}
		snap.Runs = append(snap.Runs, runs...)
	}
	defer s.follows.sweep()
	for _, dir := range s.dirs {
		r, err := s.follows.look(ctx, dir)
		switch {
		case errors.Is(err, fs.ErrNotExist) && fileExists(filepath.Join(dir, supervise.CoordinationLogFile)):
			// A --journal-in-store run's dir: its run has journaled, in
			// the run store, which a run dir's frame does not read.
			snap.Errors = append(snap.Errors, "run dir "+dir+": journal kept in the run store (--journal-in-store), not in "+supervise.SpawnJournalFile)
			continue
		case errors.Is(err, fs.ErrNotExist):
			// A directory named before its run started (or after it
			// was removed): said plainly, and read again next frame.
			snap.Errors = append(snap.Errors, "run dir "+dir+": no "+supervise.SpawnJournalFile+" in it (yet): no run has journaled there")
			continue
		case err != nil:
			snap.Errors = append(snap.Errors, "run dir "+dir+": "+err.Error())
			continue
		}
		snap.Runs = append(snap.Runs, r)
	}
	runs, err := s.workspaceRuns(ctx)
	if err != nil {
		snap.Errors = append(snap.Errors, "workspace "+s.root+": "+err.Error())
	}
	snap.Runs = collapseRuns(append(snap.Runs, runs...))
	return snap
}

// collapseRuns folds the rows of one run read from two sources (a
// supervise or graph run is both a store record and a run directory)
// into one, at the place of its first: the run directory's row, which
// has its workers, totals and tail, wins; what it shows as unknown and
// the store knows (task, budget, spend, start) is taken from the store's.
// Two run directories of one id both show.
func collapseRuns(runs []topRun) []topRun {
	at := make(map[string]int, len(runs))
	out := runs[:0:0]
	for _, r := range runs {
		i, seen := at[r.ID]
		if !seen || (r.dir != "" && out[i].dir != "") {
			// Two directories of one run id (a copy, or a run moved
			// to another machine) are two places: both show.
			at[r.ID] = len(out)
			out = append(out, r)
			continue
		}
		out[i] = mergeRun(out[i], r)
	}
	return out
}

// mergeRun is the one row of a run read as a and as b: the run
// directory's (the richer) with the gaps the other fills.
func mergeRun(a, b topRun) topRun {
	rich, other := a, b
	if rich.dir == "" && other.dir != "" {
		rich, other = other, rich
	}
	fill := func(v *string, from string) {
		if *v == "" || *v == "unknown" {
			*v = from
		}
	}
	fill(&rich.Task, other.Task)
	fill(&rich.Budget, other.Budget)
	fill(&rich.Spend, other.Spend)
	if rich.budget == nil {
		rich.budget = other.budget
	}
	if rich.spend == nil {
		rich.spend = other.spend
	}
	if rich.started.IsZero() || (rich.startGuessed && !other.started.IsZero()) {
		rich.started, rich.startGuessed = other.started, other.startGuessed
	}
	rich.Notes = slices.Concat(rich.Notes, other.Notes)
	return rich
}

// workspaceRuns reads the supervise runs under root/.agent/supervisor,
// newest first: the limit most recently changed run dirs, ordered by
// when they started (or, without a run-started record, when they last
// changed). A run dir named with --run-dir is not read twice. A run dir
// without a journal yet (a run being set up) is passed over until the
// next read; a workspace without runs has none.
func (s *topSource) workspaceRuns(ctx context.Context) ([]topRun, error) {
	if s.root == "" {
		return nil, nil
	}
	base := filepath.Join(s.root, filepath.FromSlash(supervise.SupervisorDir))
	entries, err := os.ReadDir(base)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, d := range s.dirs {
		if abs, err := filepath.Abs(d); err == nil {
			named[abs] = true
		}
	}
	type found struct {
		dir     string
		changed time.Time
	}
	var dirs []found
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		dir := filepath.Join(base, e.Name())
		if abs, err := filepath.Abs(dir); err == nil && named[abs] {
			continue
		}
		info, err := e.Info()
		if err != nil {
			continue // removed since it was listed
		}
		dirs = append(dirs, found{dir, info.ModTime()})
	}
	slices.SortFunc(dirs, func(a, b found) int { return b.changed.Compare(a.changed) })
	if s.limit > 0 && len(dirs) > s.limit {
		dirs = dirs[:s.limit]
	}
	var runs []topRun
	for _, d := range dirs {
		r, err := s.follows.look(ctx, d.dir)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			continue
		case err != nil:
			return runs, fmt.Errorf("run dir %s: %w", d.dir, err)
		}
		if r.started.IsZero() {
			r.started, r.startGuessed = d.changed, true
		}
		runs = append(runs, r)
	}
	slices.SortStableFunc(runs, func(a, b topRun) int {
		if c := b.started.Compare(a.started); c != 0 {
			return c
		}
		return strings.Compare(a.ID, b.ID)
	})
	return runs, nil
}

// storeRuns reads the newest runs of the store, each call under its own
// deadline.
func (s *topSource) storeRuns(ctx context.Context) ([]topRun, error) {
	lctx, cancel := context.WithTimeout(ctx, topStoreTimeout)
	runs, err := s.store.ListRuns(lctx, store.ListOptions{Limit: s.limit})
	cancel()
	if err != nil {
		return nil, err
	}
	out := make([]topRun, 0, len(runs))
	for _, r := range runs {
		out = append(out, s.storeRun(ctx, r))
	}
	return out, nil
}

// storeRun reads one store run's record, spend and event tail; what it
// cannot read shows as unknown with a note.
func (s *topSource) storeRun(ctx context.Context, r store.Run) topRun {
	tr := topRun{ID: r.ID, Kind: r.Kind, Status: string(r.Status), Live: !r.Status.Terminal(),
		Task: "unknown", Budget: "unknown", Spend: "unknown", started: r.CreatedAt}
	rctx, cancel := context.WithTimeout(ctx, topStoreTimeout)
	rec, err := kernel.ReadRun(rctx, s.store, r.ID)
	cancel()
	if err != nil {
		tr.Notes = append(tr.Notes, "record unreadable: "+err.Error())
		return tr
	}
	var usage *kernel.Usage
	switch {
	case rec.Exact != nil:
		tr.Task, usage = rec.Exact.Task, rec.Exact.Usage
	case rec.Rounds != nil:
		tr.Task, usage = rec.Rounds.Task, rec.Rounds.Usage
	case rec.ToolLoop != nil:
		tr.Task, usage = rec.ToolLoop.User, rec.ToolLoop.Usage
	case rec.Seated != nil:
		tr.Task = rec.Seated.Task
	case rec.Kind == supervise.KindSupervise || rec.Kind == supervise.SpawnLogRunKind:
		// A supervised run's record (or its store journal's) is not an
		// exact run's: its task and its spend are the record's (a
		// journal not yet ended says so, as in runs list).
		switch sr, err := supervise.RunRecordOf(r); {
		case err != nil:
			tr.Task = summary(r)
		default:
			tr.Task = sr.Task
			if sr.Outcome != nil {
				tr.Spend, tr.spend = totalText(sr.Outcome.Spent), totalSpend(sr.Outcome.Spent)
			}
		}
	case rec.Kind == retained.Kind || rec.DocErr == nil:
		tr.Task = summary(r)
	default:
		tr.Notes = append(tr.Notes, "record unreadable: "+rec.DocErr.Error())
	}
	tr.Task = oneLine(orUnknown(tr.Task))
	switch {
	case rec.LedgerEntries > 0:
		tr.Spend, tr.spend = usageText(rec.Spend), usageSpend(rec.Spend)
	case usage != nil:
		tr.Spend, tr.spend = usageText(usage.Usage), usageSpend(usage.Usage)
	}
	tr.Detail = append(tr.Detail,
		"started   "+r.CreatedAt.UTC().Format(time.RFC3339),
		"updated   "+r.UpdatedAt.UTC().Format(time.RFC3339),
		fmt.Sprintf("recorded  %d events, %d ledger entries", rec.Events, rec.LedgerEntries))
	if !tr.Live {
		tr.Detail = append(tr.Detail, "latency   "+r.UpdatedAt.Sub(r.CreatedAt).Round(time.Millisecond).String())
	}
	from := max(rec.Events-topLogTail, 0)
	ectx, cancel := context.WithTimeout(ctx, topStoreTimeout)
	events, err := s.store.Events(ectx, r.ID, store.CursorFor(from), topLogTail)
	cancel()
	if err != nil {
		tr.Notes = append(tr.Notes, "events unreadable: "+err.Error())
	}
	for _, e := range events {
		tr.Tail = append(tr.Tail, fmt.Sprintf("%4d %-24s %s", e.Sequence, e.Type, eventText(e.Body)))
	}
	return tr
}

// usageText renders a usage for people, unknown channels as unknown.
func usageText(u ledger.Usage) string {
	if !u.InputTokens.Reported && !u.OutputTokens.Reported && !u.CostUSD.Reported {
		return "unknown"
	}
	return fmt.Sprintf("in %s out %s %s", u.InputTokens, u.OutputTokens, usd(u.CostUSD))
}

// oneLine flattens s onto one line.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// readSuperviseRun reads a supervise run directory without changing it,
// once. The run's id comes from its run-started record, or else from a
// parentless root spawn, which is the run and never a worker. A source
// that looks again keeps a superviseFollow instead (topSource.follows).
func readSuperviseRun(ctx context.Context, dir string) (topRun, error) {
	return newSuperviseFollow(dir).look(ctx)
}

// applyRunState takes the run's status, budget and spend from its
// state.json (§3.6 "Supervisor run layout") when the run writes one for
// this run, and reports whether it did; otherwise the journal alone
// speaks and the reason is noted.
func applyRunState(ctx context.Context, tr *topRun, dir string) bool {
	st, err := supervise.ReadRunState(ctx, dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		tr.Detail = append(tr.Detail, "budget    unknown: no state.json (an older writer); the journal does not record it")
		return false
	case err != nil:
		tr.Notes = append(tr.Notes, "state.json unreadable, shown from the journal: "+err.Error())
		return false
	case tr.ID != "unknown" && st.RunID != tr.ID:
		tr.Notes = append(tr.Notes, fmt.Sprintf("state.json is of run %s, not %s; shown from the journal", st.RunID, tr.ID))
		return false
	}
	if tr.ID == "unknown" {
		tr.ID = st.RunID
	}
	tr.Status, tr.Live = st.Status, st.Status == supervise.RunStatusRunning
	tr.Budget, tr.budget = budgetText(st.Budget), st.Budget
	tr.Spend = stateSpendText(st)
	if s := st.Spent; s != nil && (s.Tokens != nil || s.MicroUSD != nil) {
		tr.spend = &topSpend{Tokens: s.Tokens, MicroUSD: s.MicroUSD, Floor: st.Live > 0}
	}
	tr.Detail = append(tr.Detail,
		fmt.Sprintf("state     revision %d, updated %s", st.Revision, time.UnixMilli(st.UpdatedAtMS).UTC().Format(time.RFC3339)),
		fmt.Sprintf("workers   %d spawned, %d live", st.Spawned, st.Live))
	if st.ProgressTruncated {
		tr.Notes = append(tr.Notes, "progress.ndjson reached its size limit; later progress is in the journal only")
	}
	return true
}

// stateSpendText renders state.json's spend: a floor while workers are
// live (their spend is not committed yet), unknown channels as unknown.
func stateSpendText(st supervise.RunState) string {
	s := st.Spent
	if s == nil || (s.Tokens == nil && s.MicroUSD == nil) {
		return "unknown"
	}
	floor := floorMark(st.Live > 0)
	tok, cost := "tok unknown", "$unknown"
	if s.Tokens != nil {
		tok = "tok " + floor + strconv.FormatInt(*s.Tokens, 10)
	}
	if s.MicroUSD != nil {
		cost = floor + microUSD(*s.MicroUSD)
	}
	return tok + " " + cost
}

// labelOrProfile is a spawn's label, or its profile when it has none.
func labelOrProfile(r supervise.Record) string {
	if r.Label != "" {
		return r.Label
	}
	return r.Profile
}

// leadOf is the direct child of root that n descends from; empty when n
// is one.
func leadOf(n, root supervise.NodeID) supervise.NodeID {
	lead := n
	for {
		p, ok := lead.Parent()
		if !ok || p == root {
			break
		}
		if _, ok := p.Parent(); !ok {
			break // p is a root spawn of a journal without run-started
		}
		lead = p
	}
	if lead == n {
		return ""
	}
	return lead
}

// journalText is a one-line rendering of a spawn-journal record.
func journalText(r supervise.Record) string {
	switch r.Kind {
	case supervise.KindRunStarted:
		return "run-started " + r.RunID
	case supervise.KindSpawned:
		return fmt.Sprintf("spawned     %s %s", r.Node, labelOrProfile(r))
	case supervise.KindSettled:
		s := fmt.Sprintf("settled     %s %s", r.Node, r.State)
		if r.Reason != "" {
			s += " (" + oneLine(r.Reason) + ")"
		}
		return s
	case supervise.KindSubmitted:
		if r.Node != "" { // a nested manager's
			return fmt.Sprintf("submitted   %s verdict %s", r.Node, verdictText(r.Verdict))
		}
		return "submitted   verdict " + verdictText(r.Verdict)
	case supervise.KindFinished:
		s := "finished    " + r.Outcome
		if r.Reason != "" {
			s += " (" + oneLine(r.Reason) + ")"
		}
		return s
	}
	return r.Kind + " " + string(r.Node)
}

// verdictText renders a check's verdict.
func verdictText(v *kernel.Verdict) string {
	switch {
	case v == nil:
		return "none"
	case v.Passed:
		return "passed"
	}
	return "failed"
}

// budgetText renders a journaled budget; an absent channel is uncapped.
func budgetText(b *supervise.BudgetRecord) string {
	if b == nil {
		return "unknown"
	}
	var parts []string
	if b.Tokens != nil {
		parts = append(parts, "tok "+strconv.FormatInt(*b.Tokens, 10))
	}
	if b.MicroUSD != nil {
		parts = append(parts, microUSD(*b.MicroUSD))
	}
	if len(parts) == 0 {
		return "uncapped"
	}
	return strings.Join(parts, " ")
}

// spendText renders a journaled spend; an absent channel is unknown.
func spendText(s *supervise.SpendRecord) string {
	if s == nil {
		return "unknown"
	}
	tok, cost := "tok unknown", "$unknown"
	if s.Tokens != nil {
		tok = "tok " + strconv.FormatInt(*s.Tokens, 10)
	}
	if s.MicroUSD != nil {
		cost = microUSD(*s.MicroUSD)
	}
	if s.Tokens == nil && s.MicroUSD == nil {
		return "unknown"
	}
	return tok + " " + cost
}

// totalText renders a supervised run's recorded spend; a channel the
// record does not claim as known is unknown (what it charged for it is a
// ceiling, not a spend).
func totalText(t supervise.TotalRecord) string {
	if !t.TokensKnown && !t.USDKnown {
		return "unknown"
	}
	tok, cost := "tok unknown", "$unknown"
	if t.TokensKnown {
		tok = "tok " + strconv.FormatInt(t.Tokens, 10)
	}
	if t.USDKnown {
		cost = microUSD(t.MicroUSD)
	}
	return tok + " " + cost
}

// microUSD renders millionths of a dollar as dollars.
func microUSD(m int64) string {
	return "$" + strconv.FormatFloat(float64(m)/1e6, 'f', -1, 64)
}

// sumSpend adds settled spends; a channel any settlement left unknown,
// or a worker still in flight, makes the sum a floor.
type sumSpend struct {
	tokens, micro         int64
	anyTokens, anyMicro   bool
	partTokens, partMicro bool
	inFlight              bool
}

func (s *sumSpend) add(r *supervise.SpendRecord) {
	if r == nil || r.Tokens == nil {
		s.partTokens = true
	} else {
		s.tokens, s.anyTokens = s.tokens+*r.Tokens, true
	}
	if r == nil || r.MicroUSD == nil {
		s.partMicro = true
	} else {
		s.micro, s.anyMicro = s.micro+*r.MicroUSD, true
	}
}

func (s *sumSpend) text() string {
	if !s.anyTokens && !s.anyMicro {
		return "unknown"
	}
	tok, cost := "tok unknown", "$unknown"
	if s.anyTokens {
		tok = "tok " + floorMark(s.partTokens || s.inFlight) + strconv.FormatInt(s.tokens, 10)
	}
	if s.anyMicro {
		cost = floorMark(s.partMicro || s.inFlight) + microUSD(s.micro)
	}
	return tok + " " + cost
}

func floorMark(floor bool) string {
	if floor {
		return "≥ "
	}
	return ""
}

// cancel asks to cancel the selected run or worker and returns what
// happened, for the notice line. A direct worker of a supervise run, or
// the run, is asked through its run directory, under a fresh operation
// id, and the supervisor's acknowledgement is awaited (§15 behaviours
// 49, 50); a nested worker is refused with its lead named, since
// cancelling the lead takes its subtree (behaviour 71); a store run is
// cancelled through the store.
func (s *topSource) cancel(ctx context.Context, r topRun, w *topWorker) string {
	switch {
	case w != nil && w.Lead != "":
		return fmt.Sprintf("cancel refused: %s is a nested worker; cancel its top-level lead %s", w.ID, w.Lead)
	case w != nil:
		return s.cancelWorker(ctx, r, w)
	case r.dir != "":
		return s.cancelSupervised(ctx, r)
	case r.Kind == retained.Kind:
		return fmt.Sprintf("cancel refused: %s is a retained run, owned by its provider; use agentrt runs cancel %s --provider …", r.ID, r.ID)
	case s.store == nil:
		return "cancel refused: no run store"
	}
	now := time.Now
	if s.now != nil {
		now = s.now
	}
	cctx, cancel := context.WithTimeout(ctx, topStoreTimeout)
	defer cancel()
	effect, run, err := kernel.RequestCancel(cctx, s.store, r.ID, "cancelled from agentrt top", now())
	if err != nil {
		return fmt.Sprintf("run %s: cancel %s: %v", r.ID, effect, err)
	}
	return fmt.Sprintf("run %s: %s (status %s)", r.ID, effect, run.Status)
}

// cancelWorker asks the supervisor of r to cancel w and its subtree.
func (s *topSource) cancelWorker(ctx context.Context, r topRun, w *topWorker) string {
	op := s.operationID()
	rec, err := supervise.CancelWorker(ctx, r.dir, w.ID, op, supervise.CancelOptions{Reason: "cancelled from agentrt top", Source: topControlSource})
	if err != nil {
		return fmt.Sprintf("worker %s: cancel unknown: %v", w.ID, err)
	}
	_, err = s.awaitAck(ctx, func(ctx context.Context) (bool, error) {
		rec2, err := supervise.ReadWorkerCancellation(ctx, r.dir, op)
		if err != nil {
			return false, err
		}
		rec = rec2
		return rec.Effect == kernel.EffectCancelled || rec.Effect == kernel.EffectNotLive, nil
	})
	if err != nil {
		return fmt.Sprintf("worker %s: cancel %s (operation %s): %v", w.ID, rec.Effect, op, err)
	}
	if rec.Effect == kernel.EffectUnknown {
		return fmt.Sprintf("worker %s: cancel requested (operation %s), not acknowledged yet: is its supervisor running?", w.ID, op)
	}
	return fmt.Sprintf("worker %s: %s (operation %s)%s", w.ID, rec.Effect, op, detailSuffix(rec.Detail))
}

// cancelSupervised asks the supervisor of r to cancel the whole run. A
// run takes one cancellation: when an earlier one was written, its
// outcome is reported.
func (s *topSource) cancelSupervised(ctx context.Context, r topRun) string {
	op := s.operationID()
	earlier := ""
	_, err := supervise.CancelRun(ctx, r.dir, op, supervise.RunCancelOptions{Reason: "cancelled from agentrt top", Source: topControlSource})
	var conflict *supervise.ConflictError
	var ended *supervise.RunEndedError
	switch {
	case errors.As(err, &conflict):
		earlier = conflict.Detail
	case errors.As(err, &ended):
		earlier = "operation " + ended.FirstOperationID + ", before the run ended"
	case err != nil:
		return fmt.Sprintf("run %s: cancel unknown: %v", r.ID, err)
	}
	var ack *supervise.RunCancellation
	_, err = s.awaitAck(ctx, func(ctx context.Context) (bool, error) {
		a, err := supervise.ReadRunCancellation(ctx, r.dir)
		ack = a
		return a != nil && a.Effect != kernel.EffectCancelRequested && a.Effect != kernel.EffectUnknown, err
	})
	switch {
	case err != nil:
		return fmt.Sprintf("run %s: cancel unknown: %v", r.ID, err)
	case ack == nil && earlier != "":
		return fmt.Sprintf("run %s: an earlier cancel request (%s) is not acknowledged yet: is its supervisor running?", r.ID, earlier)
	case ack == nil:
		return fmt.Sprintf("run %s: cancel requested (operation %s), not acknowledged yet: is its supervisor running?", r.ID, op)
	case earlier != "":
		return fmt.Sprintf("run %s: cancelled earlier by operation %s: %s%s", r.ID, ack.OperationID, ack.Effect, detailSuffix(ack.Detail))
	}
	return fmt.Sprintf("run %s: %s (operation %s)%s", r.ID, ack.Effect, ack.OperationID, detailSuffix(ack.Detail))
}

// steer publishes msg for the selected worker (or, on a run row, the
// run's manager) of a supervise run and waits for the supervisor's
// acknowledgement (§15 behaviour 48).
func (s *topSource) steer(ctx context.Context, r topRun, w *topWorker, msg string) string {
	if r.dir == "" {
		return "steer refused: only supervise runs and their workers take steers"
	}
	target := r.ID
	if w != nil {
		target = w.ID
	}
	op := s.operationID()
	if _, err := supervise.WriteWorkerSteer(ctx, r.dir, target, supervise.WorkerSteer{OperationID: op, Message: msg, Source: topControlSource}); err != nil {
		return fmt.Sprintf("steer %s: unknown: %v", target, err)
	}
	var ack *supervise.SteerAck
	_, err := s.awaitAck(ctx, func(ctx context.Context) (bool, error) {
		a, err := supervise.ReadSteerAck(ctx, r.dir, op)
		ack = a
		return a != nil && a.Effect != supervise.SteerUnknown, err
	})
	switch {
	case err != nil:
		return fmt.Sprintf("steer %s: unknown (operation %s): %v", target, op, err)
	case ack == nil || ack.Effect == supervise.SteerUnknown:
		return fmt.Sprintf("steer %s: requested (operation %s), not acknowledged yet: is its supervisor running?", target, op)
	}
	return fmt.Sprintf("steer %s: %s (operation %s)%s", target, ack.Effect, op, detailSuffix(ack.Detail))
}

// detailSuffix is ": detail", or nothing without one.
func detailSuffix(d string) string {
	if d == "" {
		return ""
	}
	return ": " + oneLine(d)
}

// topRow is one selectable line: a run, or one of its workers.
type topRow struct {
	run    int
	worker int // -1 for the run itself
}

// topModel is top's Bubble Tea model.
type topModel struct {
	ctx    context.Context
	src    *topSource
	snap   topSnapshot
	sel    int
	view   topView
	notice string
	width  int
	height int
	color  bool
	// interactive is set when keys reach the model (not --once).
	interactive bool
	// tick numbers the refresh timer; a tick of an older timer (one a
	// manual read replaced) is dropped, so timers never pile up.
	tick int
	// steering is set while a steer message is typed for steerFor;
	// steerText is the message so far.
	steering  bool
	steerFor  topRow
	steerText string
}

// topView is which view the frame shows.
type topView int

// The views: the runs and the selected one's event tail; the same with
// the selected run's or worker's detail; the selected one's log.
const (
	topViewOverview topView = iota
	topViewDetail
	topViewLog
)

// Messages of the model.
type (
	topSnapshotMsg topSnapshot
	topTickMsg     int
	topNoticeMsg   string
)

func newTopModel(ctx context.Context, src *topSource) topModel {
	return topModel{ctx: ctx, src: src, width: topWidth}
}

// Init reads the sources once.
func (m topModel) Init() tea.Cmd { return m.loadCmd() }

func (m topModel) loadCmd() tea.Cmd {
	return func() tea.Msg { return topSnapshotMsg(m.src.load(m.ctx)) }
}

// rows lists the selectable lines in display order.
func (m topModel) rows() []topRow {
	var rows []topRow
	for i, r := range m.snap.Runs {
		rows = append(rows, topRow{run: i, worker: -1})
		for j := range r.Workers {
			rows = append(rows, topRow{run: i, worker: j})
		}
	}
	return rows
}

// selectedKey names the selected row by run and worker id, which
// survive a refresh that reorders the rows.
func (m topModel) selectedKey() [2]string {
	rows := m.rows()
	if m.sel >= len(rows) {
		return [2]string{}
	}
	r := m.snap.Runs[rows[m.sel].run]
	if w := rows[m.sel].worker; w >= 0 {
		return [2]string{r.ID, r.Workers[w].ID}
	}
	return [2]string{r.ID, ""}
}

// find is the row named by key; the old index, kept in range, when the
// row is gone.
func (m topModel) find(key [2]string) int {
	rows := m.rows()
	for i, row := range rows {
		r := m.snap.Runs[row.run]
		w := ""
		if row.worker >= 0 {
			w = r.Workers[row.worker].ID
		}
		if r.ID == key[0] && w == key[1] {
			return i
		}
	}
	return min(m.sel, max(len(rows)-1, 0))
}

// Update handles keys, mouse clicks, reads and notices.
func (m topModel) Update(msg tea.Msg) (tea.Model, tea.Cmd) {
	switch msg := msg.(type) {
	case topSnapshotMsg:
		key := m.selectedKey()
		m.snap = topSnapshot(msg)
		m.sel = m.find(key)
		if m.tick == 0 {
			// The first read: start on the newest run, whose detail or
			// log --detail and --log open.
			m.sel = m.newestRow()
		}
		m.tick++
		tick := m.tick
		return m, tea.Tick(topRefresh, func(time.Time) tea.Msg { return topTickMsg(tick) })
	case topTickMsg:
		if int(msg) != m.tick {
			return m, nil
		}
		return m, m.loadCmd()
	case topNoticeMsg:
		m.notice = string(msg)
		return m, m.loadCmd()
	case tea.WindowSizeMsg:
		m.width, m.height = msg.Width, msg.Height
	case tea.KeyPressMsg:
		if m.steering {
			return m.steerKey(msg)
		}
		return m.key(msg.String())
	case tea.MouseClickMsg:
		if row, ok := m.rowAt(msg.Y); ok {
			if row == m.sel {
				m.view = toggle(m.view, topViewDetail)
			} else {
				m.sel, m.view = row, topViewOverview
			}
		}
	case tea.MouseWheelMsg:
		switch msg.Button {
		case tea.MouseWheelUp:
			return m.key("up")
		case tea.MouseWheelDown:
			return m.key("down")
		}
	}
	return m, nil
}

func (m topModel) key(k string) (tea.Model, tea.Cmd) {
	n := len(m.rows())
	switch k {
	case "q", "ctrl+c":
		return m, tea.Quit
	case "esc":
		if m.view != topViewOverview {
			m.view = topViewOverview
			return m, nil
		}
		return m, tea.Quit
	case "up", "k":
		m.sel = max(m.sel-1, 0)
	case "down", "j":
		m.sel = max(min(m.sel+1, n-1), 0)
	case "enter":
		if n > 0 {
			m.view = toggle(m.view, topViewDetail)
		}
	case "o":
		m.view = topViewOverview
	case "l":
		if n > 0 {
			m.view = topViewLog
		}
	case "tab":
		m.sel = m.nextRun(1)
	case "shift+tab":
		m.sel = m.nextRun(-1)
	case "r":
		return m, m.loadCmd()
	case "c":
		if n == 0 {
			m.notice = "nothing selected"
			return m, nil
		}
		r, w := m.target(m.rows()[m.sel])
		m.notice = "cancelling…"
		src, ctx := m.src, m.ctx
		return m, func() tea.Msg { return topNoticeMsg(src.cancel(ctx, r, w)) }
	case "s":
		if n == 0 {
			m.notice = "nothing selected"
			return m, nil
		}
		row := m.rows()[m.sel]
		if r, _ := m.target(row); r.dir == "" {
			m.notice = "steer refused: only supervise runs and their workers take steers"
			return m, nil
		}
		m.steering, m.steerFor, m.steerText = true, row, ""
	}
	return m, nil
}

// toggle is v, or the overview when the view already is v.
func toggle(cur, v topView) topView {
	if cur == v {
		return topViewOverview
	}
	return v
}

// nextRun is the row of the run after (dir 1) or before (dir -1) the
// selected row's run, wrapping around: tab moves the focus from run to
// run past their workers.
func (m topModel) nextRun(dir int) int {
	rows := m.rows()
	if len(rows) == 0 {
		return 0
	}
	cur := rows[min(m.sel, len(rows)-1)].run
	next := (cur + dir + len(m.snap.Runs)) % len(m.snap.Runs)
	for i, r := range rows {
		if r.run == next && r.worker < 0 {
			return i
		}
	}
	return m.sel
}

// newestRow is the row of the run that started last; the first row
// when no run's start is known.
func (m topModel) newestRow() int {
	best, at := -1, time.Time{}
	for i, r := range m.snap.Runs {
		if !r.started.IsZero() && (best < 0 || r.started.After(at)) {
			best, at = i, r.started
		}
	}
	if best < 0 {
		return 0
	}
	for i, row := range m.rows() {
		if row.run == best && row.worker < 0 {
			return i
		}
	}
	return 0
}

// target is the run and (nil for the run itself) worker of row, copied
// so a refresh cannot change them under a running request.
func (m topModel) target(row topRow) (topRun, *topWorker) {
	r := m.snap.Runs[row.run]
	if row.worker < 0 {
		return r, nil
	}
	w := r.Workers[row.worker]
	return r, &w
}

// steerKey edits the steer message: enter sends it, esc abandons it.
func (m topModel) steerKey(k tea.KeyPressMsg) (tea.Model, tea.Cmd) {
	switch k.String() {
	case "enter":
		msg := strings.TrimSpace(m.steerText)
		m.steering = false
		if msg == "" {
			m.notice = "steer abandoned: empty message"
			return m, nil
		}
		if !utf8.ValidString(msg) {
			m.notice = "steer refused: the message is not valid UTF-8 (set the terminal's encoding to UTF-8 and type it again); nothing was sent"
			return m, nil
		}
		r, w := m.target(m.steerFor)
		m.notice = "steering…"
		src, ctx := m.src, m.ctx
		return m, func() tea.Msg { return topNoticeMsg(src.steer(ctx, r, w, msg)) }
	case "esc", "ctrl+c":
		m.steering = false
		m.notice = "steer abandoned"
	case "backspace":
		if _, size := utf8.DecodeLastRuneInString(m.steerText); size > 0 {
			m.steerText = m.steerText[:len(m.steerText)-size]
		}
	default:
		if k.Text != "" && len(m.steerText)+len(k.Text) <= topSteerMax {
			m.steerText += k.Text
		}
	}
	return m, nil
}

// View renders the current frame.
func (m topModel) View() tea.View {
	v := tea.NewView(m.frame())
	v.AltScreen = true
	v.MouseMode = tea.MouseModeCellMotion
	v.WindowTitle = "agentrt top"
	return v
}

// layout is the frame's lines and, for each, the row it selects (-1
// for none).
func (m topModel) layout() (lines []string, rowOf []int) {
	add := func(row int, s string) {
		lines = append(lines, s)
		rowOf = append(rowOf, row)
	}
	live := 0
	for _, r := range m.snap.Runs {
		if r.Live {
			live++
		}
	}
	add(-1, fmt.Sprintf("agentrt top: %d run(s), %d live", len(m.snap.Runs), live))
	for _, e := range m.snap.Errors {
		add(-1, "! "+e)
	}
	if m.steering {
		r, w := m.target(m.steerFor)
		to := "the manager of " + r.ID
		if w != nil {
			to = w.ID
		}
		add(-1, "steer "+to+": "+m.steerText+"█  (enter send · esc abandon)")
	} else if m.notice != "" {
		add(-1, "» "+m.notice)
	}
	add(-1, "")
	if len(m.snap.Runs) == 0 {
		add(-1, "no runs")
		return lines, rowOf
	}
	if m.view == topViewLog {
		m.logLayout(add)
		return lines, rowOf
	}
	add(-1, fmt.Sprintf("  %-24s %-11s %-9s %-9s %-26s %s", "RUN", "STATUS", "KIND", "BUDGET", "SPEND", "TASK"))
	row := 0
	for _, r := range m.snap.Runs {
		task := r.Task
		if task != "unknown" {
			task = strconv.Quote(clip(task, 60))
		}
		add(row, fmt.Sprintf("%s %-24s %-11s %-9s %-9s %-26s %s", m.mark(row), r.ID, r.Status, r.Kind, r.Budget, r.Spend, task))
		row++
		for _, n := range r.Notes {
			add(-1, "    ! "+n)
		}
		if len(r.Workers) > 0 {
			add(-1, fmt.Sprintf("    %-24s %-14s %-10s %-8s %-8s %-18s %s", "WORKER", "LABEL", "STATE", "VERDICT", "LATENCY", "BUDGET", "SPEND"))
		}
		for _, w := range r.Workers {
			id := w.ID
			if w.Lead != "" {
				id = "  " + id
			}
			add(row, fmt.Sprintf("  %s %-24s %-14s %-10s %-8s %-8s %-18s %s", m.mark(row), id, clip(w.Label, 14), w.State, w.Verdict, w.Latency, w.Budget, w.Spend))
			row++
		}
		if r.Totals != nil {
			for _, l := range r.Totals.lines() {
				add(-1, "    "+l)
			}
		}
	}
	rows := m.rows()
	if m.sel >= len(rows) {
		return lines, rowOf
	}
	sel := rows[m.sel]
	r := m.snap.Runs[sel.run]
	add(-1, "")
	if m.view == topViewDetail {
		if sel.worker >= 0 {
			w := r.Workers[sel.worker]
			add(-1, "worker "+w.ID+" of run "+r.ID)
			add(-1, "  label     "+w.Label)
			add(-1, "  parent    "+orDash(w.Parent, "the root"))
			add(-1, "  lead      "+orDash(w.Lead, "itself (a direct child of the root)"))
			add(-1, "  state     "+w.State)
			add(-1, "  verdict   "+w.Verdict)
			add(-1, "  latency   "+w.Latency+latencyWhy(w))
			add(-1, "  tokens    in "+w.tokIn.text(w.State == "running")+" out "+w.tokOut.text(w.State == "running"))
			add(-1, "  budget    "+w.Budget)
			add(-1, "  spend     "+w.Spend)
			add(-1, "  task      "+clip(w.Task, 200))
		} else {
			add(-1, "run "+r.ID)
			add(-1, "  task      "+clip(r.Task, 200))
			for _, d := range r.Detail {
				add(-1, "  "+d)
			}
		}
		add(-1, "")
	}
	tail := r.Tail[max(len(r.Tail)-topTail, 0):]
	add(-1, fmt.Sprintf("events of %s (last %d)", r.ID, len(tail)))
	if len(tail) == 0 {
		add(-1, "  none recorded")
	}
	for _, t := range tail {
		add(-1, "  "+t)
	}
	if m.interactive {
		add(-1, "")
		add(-1, "↑/↓ select · tab next run · enter detail · o overview · l log · s steer · c cancel · r refresh · q quit")
	}
	return lines, rowOf
}

// logLayout adds the log view: the selected worker's log, or the
// selected run's events (a supervise run's spawn journal), up to
// topLogTail lines, newest last.
func (m topModel) logLayout(add func(row int, s string)) {
	rows := m.rows()
	sel := rows[min(m.sel, len(rows)-1)]
	r := m.snap.Runs[sel.run]
	name, log, none := "run "+r.ID, r.Tail, "  none recorded"
	if sel.worker >= 0 {
		w := r.Workers[sel.worker]
		name, log = "worker "+w.ID+" of run "+r.ID, w.Log
		none = "  none recorded: no worker log (an older writer, or the worker has not started)"
	}
	add(-1, fmt.Sprintf("log of %s (last %d)", name, len(log)))
	if len(log) == 0 {
		add(-1, none)
	}
	for _, l := range log {
		add(-1, "  "+l)
	}
	if m.interactive {
		add(-1, "")
		add(-1, "↑/↓ select · tab next run · o overview · enter detail · q quit")
	}
}

// latencyWhy says why a worker's latency is unknown; empty when known.
func latencyWhy(w topWorker) string {
	switch {
	case w.latency != nil:
		return ""
	case w.State == "running":
		return " (not settled yet)"
	}
	return " (its worker log does not record both its spawn and its settlement)"
}

// orDash is s, or alt when s is empty.
func orDash(s, alt string) string {
	if s == "" {
		return alt
	}
	return s
}

func (m topModel) mark(row int) string {
	if row == m.sel {
		return ">"
	}
	return " "
}

// screen is the part of the layout the terminal shows: all of it, or,
// on a short terminal, a window that keeps the selected row in view.
func (m topModel) screen() (lines []string, rowOf []int) {
	lines, rowOf = m.layout()
	if m.height <= 0 || len(lines) <= m.height {
		return lines, rowOf
	}
	at := slices.Index(rowOf, m.sel)
	if m.view == topViewLog {
		at = len(lines) - 1 // the newest log lines
	}
	off := max(at-m.height+1, 0)
	return lines[off : off+m.height], rowOf[off : off+m.height]
}

// rowAt is the selectable row on screen line y.
func (m topModel) rowAt(y int) (int, bool) {
	_, rowOf := m.screen()
	if y < 0 || y >= len(rowOf) || rowOf[y] < 0 {
		return 0, false
	}
	return rowOf[y], true
}

// frame renders the lines clipped to the width, styled only in colour
// mode. Each line is escaped for the terminal (termsafe.Line) before it
// is styled: the run data in it cannot move the cursor, retitle the
// window or end a style, and lipgloss would pass its escapes through.
func (m topModel) frame() string {
	lines, rowOf := m.screen()
	width := m.width
	if width <= 0 {
		width = topWidth
	}
	head := lipgloss.NewStyle().Bold(true)
	selected := lipgloss.NewStyle().Reverse(true)
	warn := lipgloss.NewStyle().Foreground(lipgloss.Color("3"))
	var b strings.Builder
	for i, l := range lines {
		l = strings.TrimRight(clip(termsafe.Line(l), width), " ")
		if m.color {
			switch {
			case i == 0:
				l = head.Render(l)
			case rowOf[i] >= 0 && rowOf[i] == m.sel:
				l = selected.Render(l)
			case strings.HasPrefix(strings.TrimLeft(l, " "), "!"):
				l = warn.Render(l)
			}
		}
		b.WriteString(l)
		b.WriteByte('\n')
	}
	return b.String()
}

// noStoredRun is the failure of a command given run id that the store
// does not hold. An id that names a supervise run directory (a path
// given where a run id goes) is told where that run is shown.
func noStoredRun(id string) error {
	err := fmt.Errorf("no run %q in the store (agentrt runs list shows the recorded runs)", id)
	if isRunDirOnly(id) {
		err = fmt.Errorf("no run %q in the store: that is a supervise run directory (agentrt top --once --run-dir %s shows it; agentrt cancel %s cancels it)", id, id, id)
	}
	return &exitError{code: ExitFailed, err: err}
}

// isRunDirOnly reports whether dir is a supervise run directory (it holds
// one of runDirMarkers) and not a workspace of runs (no
// .agent/supervisor in it).
func isRunDirOnly(dir string) bool {
	if _, err := os.Lstat(filepath.Join(dir, ".agent", "supervisor")); err == nil {
		return false
	}
	for _, m := range runDirMarkers {
		if _, err := os.Lstat(filepath.Join(dir, m)); err == nil {
			return true
		}
	}
	return false
}
