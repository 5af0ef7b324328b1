package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/graph"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// resumableRunDir refuses a --resume of where (its RunDir, RunID and
// SpawnStore) when there is no run to continue: the run dir does not
// exist, or holds files but nothing of a run (none of runDirMarkers, no
// blobs/), and no journal of the run is in the store either. Starting a
// new run there would spend again what the run the user meant (a
// mistyped --run-dir or --run-id) already spent, and write the journal
// among another directory's files. A run dir that is empty or holds a
// run's traces without a journal yet stays resumable: a process killed
// before its first record leaves one (RES-03), and --resume then starts
// the run; so does a journal in the store resumed on a machine without
// the dir. A run dir whose journal is not where the flags look for it
// is refused too (journalKeptElsewhere).
func resumableRunDir(ctx context.Context, where supervise.Options) error {
	dir := where.RunDir
	info, err := os.Stat(dir)
	const what = "check --run-dir (or --run-id and --workspace), or drop --resume to start a new run"
	var why string
	switch {
	case err == nil && !info.IsDir():
		return usage("--resume: the run dir %s is not a directory, so there is no run to continue: check --run-dir (or --run-id and --workspace)", dir)
	case errors.Is(err, fs.ErrNotExist):
		why = "the run dir " + dir + " does not exist"
	case err != nil:
		return nil // the run says why it cannot use the dir
	default:
		entries, err := os.ReadDir(dir)
		if err != nil || len(entries) == 0 {
			return nil
		}
		if err := journalKeptElsewhere(dir, where.SpawnStore != nil); err != nil {
			return err
		}
		for _, e := range entries {
			if e.Name() == supervise.BlobsDir || slices.Contains(runDirMarkers, e.Name()) {
				return nil
			}
		}
		why = dir + " holds no run (no journal, state or lock of one)"
	}
	if where.SpawnStore != nil {
		if _, err := supervise.ReadRunStarted(ctx, where); !errors.Is(err, fs.ErrNotExist) {
			return nil // the store holds the run's journal (or says why not)
		}
		why += fmt.Sprintf(" and the store holds no journal of run %q", where.RunID)
	}
	return usage("--resume: %s, so there is no run to continue: %s", why, what)
}

// resumedByThisCommand refuses, as a usage error, a --resume of a run
// the other command started: agentrt graph (graphCmd) at an agentrt
// supervise run, or agentrt supervise at a graph run (graph.IsGraphRun).
// Either would otherwise be refused for a budget, task or manager that
// differs, sending the user to change flags that cannot help, or (a
// supervise resume given the graph root's profile and budget) drive a
// graph run without its graph. started is the run's run-started record
// (nil: no journal yet, nothing to refuse), where names the run.
func resumedByThisCommand(started *supervise.Record, where supervise.Options, graphCmd bool) error {
	if started == nil || graph.IsGraphRun(*started) == graphCmd {
		return nil
	}
	name := where.RunDir
	if where.SpawnStore != nil {
		name = fmt.Sprintf("run %q in the store", where.RunID)
	}
	if graphCmd {
		return usage("--resume: %s holds an agentrt supervise run, not a graph run: resume it with agentrt supervise MANAGER-PROFILE --resume and the same --run-dir (or --run-id)", name)
	}
	return usage("--resume: %s holds an agentrt graph run, not a supervise run: resume it with agentrt graph GRAPH-FILE --resume and the same --run-dir (or --run-id)", name)
}

// Where a run dir's run keeps its journal (journalPlace).
const (
	journalInDir   = "dir"
	journalInStore = "store"
)

// journalPlace says where the run in dir keeps its spawn journal:
// journalInDir when dir holds spawn-journal.jsonl, journalInStore when
// it holds the run's coordination log and no spawn-journal.jsonl (a
// file journal is opened before the coordination log, a store's never
// is), "" when neither (no run yet, or dir unreadable).
func journalPlace(dir string) string {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return ""
	}
	has := func(name string) bool {
		return slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == name })
	}
	switch {
	case has(supervise.SpawnJournalFile):
		return journalInDir
	case has(supervise.CoordinationLogFile):
		return journalInStore
	}
	return ""
}

// journalKeptElsewhere refuses, as a usage error, a --resume that looks
// for the run's journal where the run in dir does not keep it: with
// --journal-in-store (inStore) a dir holding the file journal, without
// it the dir of a run journaled in the store. Either would start a new
// run beside the journaled one, running and spending its work again.
func journalKeptElsewhere(dir string, inStore bool) error {
	switch place := journalPlace(dir); {
	case inStore && place == journalInDir:
		return usage("--resume: %s keeps its run's journal in the dir (%s), not in the store: drop --journal-in-store to resume it", dir, supervise.SpawnJournalFile)
	case !inStore && place == journalInStore:
		return usage("--resume: %s is the dir of a run whose journal is in the store (it holds %s and no %s): add --journal-in-store, with the run's --run-id and the store it ran on (--db or --database)", dir, supervise.CoordinationLogFile, supervise.SpawnJournalFile)
	}
	return nil
}

// newRunDir refuses, as a usage error, a new run (no --resume) in dir
// when dir holds a run whose journal is kept elsewhere than inStore
// says: Supervise refuses a run id its journal holds already
// (RunExistsError), but it looks only where the flags say, so the run
// would start again under its id (spending again) or over the other
// run's state, progress and streams.
func newRunDir(dir string, inStore bool) error {
	const other = "or choose another --run-dir (or --run-id) to start a new run"
	switch place := journalPlace(dir); {
	case inStore && place == journalInDir:
		return usage("%s already holds a run journaled in the dir (%s): add --resume without --journal-in-store to continue it, %s", dir, supervise.SpawnJournalFile, other)
	case !inStore && place == journalInStore:
		return usage("%s already holds a run journaled in the store: add --resume --journal-in-store (with the store it ran on) to continue it, %s", dir, other)
	}
	return nil
}

// journaledStart is the run-started record of the run a --resume
// continues, read where the run's journal is (o's RunDir, or its
// SpawnStore and RunID); nil when the run has no journal yet, which
// --resume then starts.
func journaledStart(ctx context.Context, o supervise.Options) (*supervise.Record, error) {
	rec, err := supervise.ReadRunStarted(ctx, o)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: err}
	}
	return &rec, nil
}

// resumeBudgets are the budgets agentrt supervise --resume passes: only
// the flags the user gave, so that supervise adopts the journaled value
// of every other one (and refuses a given one that differs). A dollar
// flag or --worker-tokens given as 0 means its default, as on a new
// run, and is not a value to hold the journal to.
func resumeBudgets(cmd *cobra.Command, budgetTokens, iterations, workerTokens int64, budgetUSD, workerUSD float64) (budget, perWorker ledger.Budget) {
	f := cmd.Flags()
	if f.Changed("budget-tokens") {
		budget.Tokens = &budgetTokens
	}
	if f.Changed("iterations") {
		budget.Iterations = &iterations
	}
	if f.Changed("budget-usd") && budgetUSD > 0 {
		budget.MicroUSD = int64p(int64(math.Round(budgetUSD * 1e6)))
	}
	if f.Changed("worker-tokens") && workerTokens > 0 {
		perWorker.Tokens = &workerTokens
	}
	if f.Changed("worker-usd") && workerUSD > 0 {
		perWorker.MicroUSD = int64p(int64(math.Round(workerUSD * 1e6)))
	}
	return budget, perWorker
}

// superviseResumeFlags name the flag (or argument) of agentrt supervise
// behind each option a resume is held to.
var superviseResumeFlags = map[string]string{
	"Task": "--task", "manager": "MANAGER-PROFILE", "Deliverable": deliverableFlags,
	"Budget.Tokens": "--budget-tokens", "Budget.Iterations": "--iterations", "Budget.MicroUSD": "--budget-usd",
	"PerWorker.Tokens": "--worker-tokens", "PerWorker.MicroUSD": "--worker-usd", "PerWorker.Iterations": "the per-worker iterations",
}

// deliverableFlags are the flags of a run's deliverable check.
const deliverableFlags = "--expect, --check-cmd and --check-timeout"

// graphRunFlag is the key that marks graphResumeFlags as agentrt
// graph's: its other options live in the graph file, not in flags.
const graphRunFlag = "\x00graph"

// graphResumeFlags are superviseResumeFlags for agentrt graph, whose
// budget is the graph file's.
var graphResumeFlags = map[string]string{
	"Task": "--task", "manager": "the root node's profile", "Deliverable": deliverableFlags, graphRunFlag: "",
	"budget.tokens": "the graph's budget.tokens", "budget.iterations": "the graph's budget.iterations", "budget.usd": "the graph's budget.usd",
}

// resumeRefusal is err, when a resume was refused because an option
// differs from the run's journal, as a usage error (exit 2) saying which
// flag differs, what the journal holds and what to do; otherwise nil.
func resumeRefusal(err error, flags map[string]string) error {
	var m *supervise.ResumeMismatchError
	if !errors.As(err, &m) {
		return nil
	}
	name, ok := flags[m.Field]
	if !ok {
		name = m.Field
	}
	journaled, given := m.Journaled, m.Given
	if m.Field == "Budget.MicroUSD" || m.Field == "PerWorker.MicroUSD" {
		journaled, given = microDollars(journaled), microDollars(given)
	}
	if m.Field == "Deliverable" {
		return usage("%s: the run started with another deliverable check (the journal holds its digest %s; these flags give %s): a resumed run keeps the check its earlier results were judged by; resume with the check flags that started the run", name, journaled, given)
	}
	if m.Field == "manager" {
		return usage("%s is not the manager profile the run started with (its digest is %s, the journal holds %s): resume with the profile that started the run", name, given, journaled)
	}
	if _, graphRun := flags[graphRunFlag]; graphRun && m.Field != "Task" {
		// A graph file's budget, nodes and edges cannot be left out
		// (maxTokens and maxIterations are required; an edge without
		// maxTraversals takes the default), so the way on is the file
		// that started the run.
		at := ""
		if m.Pointer != "" {
			at = " (at " + m.Pointer + ")"
		}
		return usage("%s%s is %s but the run's journal holds %s: a resumed run keeps its budget and topology; resume with the graph file that started the run", name, at, given, journaled)
	}
	return usage("%s %s differs from the run's journal, which holds %s: a resumed run keeps its task and budget; omit %s to continue with the journaled value", name, given, journaled, name)
}

// perWorkerRefusal is err, when Supervise refused a per-worker ceiling
// the run's budget can never give, as a usage error (exit 2) naming the
// flags and what to do; otherwise nil.
func perWorkerRefusal(err error) error {
	var pw *supervise.PerWorkerExceedsBudgetError
	if !errors.As(err, &pw) {
		return nil
	}
	flagOf := func(field string) string {
		if name, ok := superviseResumeFlags[field]; ok {
			return name
		}
		return field
	}
	flag, budgetFlag := flagOf(pw.Field), flagOf("Budget"+strings.TrimPrefix(pw.Field, "PerWorker"))
	amount := func(v int64) string {
		s := strconv.FormatInt(v, 10)
		if pw.Field == "PerWorker.MicroUSD" {
			return microDollars(s)
		}
		return s
	}
	if pw.Budget == nil {
		return usage("%s %s asks each worker for what the run's budget does not cover, so every spawn would be refused: give %s too, or leave %s out",
			flag, amount(pw.PerWorker), budgetFlag, flag)
	}
	return usage("%s %s is more than the whole run's %s %s, so no worker could ever reserve it: lower %s or raise %s",
		flag, amount(pw.PerWorker), budgetFlag, amount(*pw.Budget), flag, budgetFlag)
}

// microDollars is a µUSD amount as text ("none" stays) in dollars.
func microDollars(s string) string {
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return s
	}
	return fmt.Sprintf("$%s", strconv.FormatFloat(float64(n)/1e6, 'f', -1, 64))
}

// maxFlagUSD is the largest dollar amount a dollar flag takes: the
// ledger holds dollars as micro-dollars, at most 2^53-1 of them.
const maxFlagUSD = 9007199254740991 / 1e6

// dollarFlag is one dollar flag's name and value.
type dollarFlag struct {
	name  string
	value float64
}

// usdFlag names one dollar flag's value for dollarFlags.
func usdFlag(name string, value float64) dollarFlag { return dollarFlag{name, value} }

// dollarFlags refuses a dollar flag that is not a finite amount the
// ledger can hold: NaN (which compares false against every bound and so
// would silently drop the cap), ±Inf, or more than maxFlagUSD. Negative
// amounts are left to the callers' own checks.
func dollarFlags(flags ...dollarFlag) error {
	for _, f := range flags {
		if math.IsNaN(f.value) || math.IsInf(f.value, 0) || f.value > maxFlagUSD {
			return usage("%s %v is not a dollar amount: give a finite number of dollars from 0 to %.6f", f.name, f.value, maxFlagUSD)
		}
	}
	return nil
}

// zeroDollarCap refuses --budget-usd given as 0. A left-out flag means
// no dollar ceiling, and the flag's zero value is how the commands tell
// the two apart, so an explicit 0 used to run uncapped: a run the
// caller meant to spend nothing could spend without bound. A ceiling of
// no dollars cannot be honoured either (any worker that reports a cost
// exceeds it), so it is a usage error naming both ways out.
func zeroDollarCap(given bool, usd float64) error {
	if given && usd == 0 {
		return usage("--budget-usd 0 would cap the run at no dollars, which a worker that reports a cost exceeds: give a positive amount, or leave the flag out for no dollar ceiling")
	}
	return nil
}
