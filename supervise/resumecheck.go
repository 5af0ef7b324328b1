package supervise

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/store"
)

// ResumeMismatchError is a resume refused because the caller gave a
// value the run's journal already fixed otherwise: its run-started
// record holds the run's budget, its per-worker default, its task and
// its manager profile's digest, and a restart never mints capacity
// (spec runtime §6) nor drives the run toward another task (§3.6
// "Persistence & resume"). Supervise returns it inside a *ResumeError;
// nothing ran and nothing was journaled. Pass nothing (a zero budget, an
// empty task) to adopt the journaled value.
type ResumeMismatchError struct {
	// Field names the option that differs: "Task", "manager" (the
	// manager profile), "Deliverable" (its Identity), "Budget.Tokens",
	// "Budget.Iterations", "Budget.MicroUSD", "Budget.Resources[NAME]",
	// or the same under "PerWorker.".
	Field string
	// Pointer is the JSON pointer of the value in the journal's
	// run-started record ("/budget/tokens", "/task", "/managerDigest",
	// "/deliverableDigest").
	Pointer string
	// Journaled and Given are the two values as text; an uncapped
	// channel is "none".
	Journaled, Given string
}

func (e *ResumeMismatchError) Error() string {
	return fmt.Sprintf("supervise: %s (%s) is %s in the run's journal but %s was given: a resumed run keeps what its journal holds (give the same value, or none to adopt it)",
		e.Field, e.Pointer, e.Journaled, e.Given)
}

// maxShownTask bounds how much of a task a ResumeMismatchError quotes.
const maxShownTask = 200

// shownTask is task quoted for an error, cut to maxShownTask bytes on a
// character boundary.
func shownTask(task string) string {
	if len(task) <= maxShownTask {
		return strconv.Quote(task)
	}
	cut := maxShownTask
	for cut > 0 && !validCut(task, cut) {
		cut--
	}
	return strconv.Quote(task[:cut]) + "…"
}

// validCut says task[:i] ends on a character boundary.
func validCut(task string, i int) bool {
	return i == len(task) || task[i]&0xC0 != 0x80
}

// resumedRun is what a resume runs with: the journal's values where it
// holds them, the caller's where it predates them.
type resumedRun struct {
	budget, perWorker ledger.Budget
	task              string
}

// adoptJournaled checks a resume's options against the journal's
// run-started record first and returns what the run continues with. A
// value the caller left out (a nil budget channel, an empty task) is
// adopted from the journal; one it gave must equal the journaled one,
// else a *ResumeMismatchError. A journal written before run-started
// records held the budget, the per-worker default and the manager's
// digest resumes with the caller's values for those, as it did, which
// the logger is told; its budget must then be complete.
func adoptJournaled(first Record, o *Options, task, managerDigest string, logger *slog.Logger) (resumedRun, error) {
	out := resumedRun{budget: o.Budget, perWorker: o.PerWorker, task: task}
	switch {
	case task == "":
		out.task = first.Task
	case task != first.Task:
		return out, &ResumeMismatchError{Field: "Task", Pointer: "/task", Journaled: shownTask(first.Task), Given: shownTask(task)}
	}
	if first.ManagerDigest == "" {
		logger.Warn("supervise: the run's journal predates journaled manager digests; resuming with the given manager profile unchecked", "run", first.RunID)
	} else if managerDigest != first.ManagerDigest {
		return out, &ResumeMismatchError{Field: "manager", Pointer: "/managerDigest", Journaled: first.ManagerDigest, Given: managerDigest}
	}
	// The check's rule: compared when both the journal and the caller
	// identify it (Deliverable.Identity).
	if given := o.Deliverable.identityDigest(); given != "" && first.DeliverableDigest != "" && given != first.DeliverableDigest {
		return out, &ResumeMismatchError{Field: "Deliverable", Pointer: "/deliverableDigest", Journaled: first.DeliverableDigest, Given: given}
	}
	if first.Budget == nil {
		logger.Warn("supervise: the run's journal predates journaled budgets; resuming with the given Budget and PerWorker", "run", first.RunID)
		if o.Budget.Tokens == nil || o.Budget.Iterations == nil {
			return out, fmt.Errorf("%w: the run's journal does not hold its budget (it predates journaled budgets): give Budget with token and iteration ceilings", ErrInvalidOptions)
		}
		return out, nil
	}
	var err error
	if out.budget, err = adoptBudget("Budget", "/budget", first.Budget.budget(), o.Budget); err != nil {
		return out, err
	}
	if out.perWorker, err = adoptBudget("PerWorker", "/perWorker", first.PerWorker.budget(), o.PerWorker); err != nil {
		return out, err
	}
	return out, nil
}

// adoptBudget is journaled with given's channels checked against it:
// each channel (and named resource) given must equal the journaled one,
// and each not given is the journaled one.
func adoptBudget(field, pointer string, journaled, given ledger.Budget) (ledger.Budget, error) {
	for _, ch := range []struct {
		name, member string
		j, g         *int64
	}{
		{"Tokens", "tokens", journaled.Tokens, given.Tokens},
		{"Iterations", "iterations", journaled.Iterations, given.Iterations},
		{"MicroUSD", "microUsd", journaled.MicroUSD, given.MicroUSD},
	} {
		if ch.g != nil && (ch.j == nil || *ch.j != *ch.g) {
			return journaled, &ResumeMismatchError{Field: field + "." + ch.name, Pointer: pointer + "/" + ch.member,
				Journaled: quantity(ch.j), Given: quantity(ch.g)}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(given.Resources)) {
		g := given.Resources[name]
		if j, ok := journaled.Resources[name]; !ok || j != g {
			var jp *int64
			if ok {
				jp = &j
			}
			return journaled, &ResumeMismatchError{Field: field + ".Resources[" + name + "]", Pointer: pointer + "/resources/" + escapePointer(name),
				Journaled: quantity(jp), Given: quantity(&g)}
		}
	}
	return journaled, nil
}

// quantity is a budget channel as text: "none" when uncapped.
func quantity(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

// escapePointer escapes a JSON-pointer reference token (RFC 6901).
func escapePointer(s string) string {
	out := make([]byte, 0, len(s))
	for i := range len(s) {
		switch s[i] {
		case '~':
			out = append(out, '~', '0')
		case '/':
			out = append(out, '~', '1')
		default:
			out = append(out, s[i])
		}
	}
	return string(out)
}

// ReadRunStarted returns the run-started record of the journal o names
// (as Supervise finds it: the SpawnStore's run RunID, else RunDir, else
// RunDirIn(WorkspaceRoot, RunID)), without locking or changing
// anything: what a resume of that run will continue with — its task,
// its budget (Budget, PerWorker; nil in a journal written before they
// were journaled) and its manager's digest. A run with no journal yet
// gives an error matching fs.ErrNotExist; a journal that does not start
// with run-started is a *ResumeError, and so is a store journal whose
// first page holds a row that does not decode (as Supervise refuses it).
func ReadRunStarted(ctx context.Context, o Options) (Record, error) {
	var first []Record
	where := o.RunDir
	switch {
	case o.SpawnStore != nil:
		where = storeJournalName(o.RunID)
		recs, _, err := ReadStoreSpawnLog(ctx, o.SpawnStore, o.RunID, "")
		if errors.Is(err, store.ErrNotFound) {
			// A process stopped before it created the run's journal
			// left no run: the run has no journal yet, as an empty run
			// dir has none.
			return Record{}, fmt.Errorf("supervise: %s holds no journal: %w (%w)", where, fs.ErrNotExist, err)
		}
		if undecodable(err) {
			return Record{}, &ResumeError{RunDir: where, Reason: "reading the journal", Err: err}
		}
		if err != nil {
			return Record{}, err
		}
		first = recs
	default:
		if where == "" && o.WorkspaceRoot != "" {
			where = RunDirIn(o.WorkspaceRoot, o.RunID)
		}
		if where == "" {
			return Record{}, fmt.Errorf("%w: ReadRunStarted needs a RunDir, a WorkspaceRoot and RunID, or a SpawnStore", ErrInvalidOptions)
		}
		// Only the first line is read: the journal may be long.
		for e, err := range journal.Read(ctx, filepath.Join(where, SpawnJournalFile), 1, journal.Options{}) {
			if err != nil {
				return Record{}, err
			}
			var r Record
			if err := canonjson.FromValue(e.Value, &r); err != nil {
				return Record{}, &ResumeError{RunDir: where, Reason: "the journal's first record does not decode", Err: err}
			}
			first = append(first, r)
			break
		}
	}
	if len(first) == 0 {
		return Record{}, fmt.Errorf("supervise: %s holds no journal: %w", where, fs.ErrNotExist)
	}
	if first[0].Kind != KindRunStarted {
		return Record{}, &ResumeError{RunDir: where, Reason: "the journal does not start with run-started"}
	}
	return first[0], nil
}

// zeroBudget says b sets no channel.
func zeroBudget(b ledger.Budget) bool {
	return b.Tokens == nil && b.Iterations == nil && b.MicroUSD == nil && len(b.Resources) == 0
}

// Ledger is the journaled budget as a ledger.Budget (zero for nil).
func (b *BudgetRecord) Ledger() ledger.Budget { return b.budget() }

// PerWorkerExceedsBudgetError: Options.PerWorker caps a channel above the
// run's Budget on that channel, or names a channel (dollars, a named
// resource) the Budget does not budget. No worker could ever reserve
// that from the conserved pool (§6), so the per-worker ceiling would be
// a knob that looks effective while every spawn is refused by the pool:
// Supervise refuses the options instead, before anything runs or is
// journaled. It matches ErrInvalidOptions.
type PerWorkerExceedsBudgetError struct {
	// Field names the option: "PerWorker.Tokens", "PerWorker.Iterations",
	// "PerWorker.MicroUSD" or "PerWorker.Resources[NAME]".
	Field string
	// Pointer is its JSON pointer as a run-started record holds it
	// ("/perWorker/tokens").
	Pointer string
	// PerWorker is the per-worker ceiling; Budget is the run's ceiling
	// on the same channel, nil when the Budget does not budget it.
	PerWorker int64
	Budget    *int64
}

func (e *PerWorkerExceedsBudgetError) Error() string {
	budget := "Budget" + strings.TrimPrefix(e.Field, "PerWorker")
	if e.Budget == nil {
		return fmt.Sprintf("%v: %s (%d) names a channel %s does not budget: no worker can reserve it from the run's pool (%s)",
			ErrInvalidOptions, e.Field, e.PerWorker, budget, e.Pointer)
	}
	return fmt.Sprintf("%v: %s (%d) exceeds %s (%d): no worker can reserve more than the run's pool (%s)",
		ErrInvalidOptions, e.Field, e.PerWorker, budget, *e.Budget, e.Pointer)
}

// Is makes the error match ErrInvalidOptions.
func (e *PerWorkerExceedsBudgetError) Is(target error) bool { return target == ErrInvalidOptions }

// perWorkerFits returns a *PerWorkerExceedsBudgetError for the first
// channel (tokens, iterations, microUSD, then resources by name) on
// which per asks more than budget can give: above its ceiling, or
// more than $0, or a named resource, that budget does not budget (the
// pool refuses those, ledger.ErrUSDUnbudgeted). Tokens and iterations left uncapped
// by budget fit any per-worker ceiling, as the pool reserves them.
func perWorkerFits(budget, per ledger.Budget) error {
	for _, ch := range []struct {
		name, member string
		b, p         *int64
		mustBudget   bool
	}{
		{"Tokens", "tokens", budget.Tokens, per.Tokens, false},
		{"Iterations", "iterations", budget.Iterations, per.Iterations, false},
		{"MicroUSD", "microUsd", budget.MicroUSD, per.MicroUSD, true},
	} {
		if ch.p == nil || (ch.b == nil && (!ch.mustBudget || *ch.p == 0)) {
			// $0 asks nothing of an uncapped dollar channel; the pool
			// admits it.
			continue
		}
		if ch.b == nil || *ch.p > *ch.b {
			var b *int64
			if ch.b != nil {
				v := *ch.b
				b = &v
			}
			return &PerWorkerExceedsBudgetError{Field: "PerWorker." + ch.name, Pointer: "/perWorker/" + ch.member, PerWorker: *ch.p, Budget: b}
		}
	}
	for _, name := range slices.Sorted(maps.Keys(per.Resources)) {
		p := per.Resources[name]
		b, ok := budget.Resources[name]
		if !ok || p > b {
			e := &PerWorkerExceedsBudgetError{Field: "PerWorker.Resources[" + name + "]", Pointer: "/perWorker/resources/" + escapePointer(name), PerWorker: p}
			if ok {
				e.Budget = &b
			}
			return e
		}
	}
	return nil
}
