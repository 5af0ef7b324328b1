package graph

import (
	"context"
	"errors"
	"io/fs"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/supervise"
)

// briefHeader opens the graph brief appended to the root's task.
const briefHeader = "AGENT GRAPH: "

// JournaledTask returns the caller's task (Options.Task) of the graph
// run whose journal so names (its RunDir, WorkspaceRoot and RunID, or
// SpawnStore and RunID), read from its run-started record: the journaled
// root task without the graph brief. A run with no journal gives an
// error matching fs.ErrNotExist. RunGraph checks the value against the
// graph's own brief when it resumes; this reads it for a caller that
// needs the task before it can build its options (a scripted plan).
func JournaledTask(ctx context.Context, so supervise.Options) (string, error) {
	rec, err := supervise.ReadRunStarted(ctx, so)
	if err != nil {
		return "", err
	}
	if strings.HasPrefix(rec.Task, briefHeader) {
		return "", nil
	}
	if i := strings.LastIndex(rec.Task, "\n\n"+briefHeader); i >= 0 {
		return rec.Task[:i], nil
	}
	return rec.Task, nil
}

// IsGraphRun reports whether started, a run's run-started record, is a
// graph run's: RunGraph journals the root's task as the caller's task
// followed by the graph brief (or the brief alone), which no other run's
// task carries. A resume by another command than the one that started
// the run is refused with it, before anything of the run is written.
func IsGraphRun(started supervise.Record) bool {
	return strings.HasPrefix(started.Task, briefHeader) || strings.Contains(started.Task, "\n\n"+briefHeader)
}

// checkStarted holds a resume to what the run's run-started record
// fixed (spec runtime P7 "restart never mints capacity", §3.6): the
// graph's budget must be the journaled one exactly — a changed budget
// is refused like a changed topology — and the journaled root task must
// be this graph's brief after the caller's task; an empty Options.Task
// adopts the journaled one, another is refused. Each refusal is a
// *supervise.ResumeError wrapping a *supervise.ResumeMismatchError when
// one value differs. A run with no journal yet is a new run.
func (r *run) checkStarted(ctx context.Context, so supervise.Options, budget ledger.Budget, legacyKeys bool) error {
	rec, err := supervise.ReadRunStarted(ctx, so)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	where := so.RunDir
	if so.SpawnStore != nil {
		where = "run " + so.RunID + " in the store"
	}
	if err != nil {
		var re *supervise.ResumeError
		if errors.As(err, &re) {
			return err
		}
		return &supervise.ResumeError{RunDir: where, Reason: "reading the journal's run-started record", Err: err}
	}
	if rec.Budget != nil {
		if m := budgetChange(rec.Budget.Ledger(), budget, legacyKeys); m != nil {
			return &supervise.ResumeError{RunDir: where, Reason: "the graph's budget is not the one the run journaled; resume with the graph that started the run", Err: m}
		}
	}
	brief := r.brief()
	var journaled string
	switch {
	case rec.Task == brief:
	case strings.HasSuffix(rec.Task, "\n\n"+brief):
		journaled = strings.TrimSuffix(rec.Task, "\n\n"+brief)
	default:
		return &supervise.ResumeError{RunDir: where, Reason: "the journaled root task does not end with this graph's brief (its nodes, caps or descriptions differ); resume with the graph that started the run"}
	}
	switch {
	case r.opts.Task == "":
		r.opts.Task = journaled
	case r.opts.Task != journaled:
		return &supervise.ResumeError{RunDir: where, Reason: "the options differ from the journal", Err: &supervise.ResumeMismatchError{
			Field: "Task", Pointer: "/task", Journaled: strconv.Quote(clip(journaled)), Given: strconv.Quote(clip(r.opts.Task))}}
	}
	return nil
}

// budgetChange is the first channel in which a graph's budget differs
// from the journaled one, named as the graph file names it (the spec's
// keys, maxTokens, maxIterations, maxUsd in dollars, or with legacyKeys
// the old tokens, iterations, usd), both ways (a cap dropped is a change
// too), or nil when they are equal. The journal holds the pool, not the
// keys, so either form resumes a run the other started.
func budgetChange(journaled, given ledger.Budget, legacyKeys bool) *supervise.ResumeMismatchError {
	keys := [3]string{"maxTokens", "maxIterations", "maxUsd"}
	if legacyKeys {
		keys = [3]string{"tokens", "iterations", "usd"}
	}
	for i, ch := range []struct {
		key  string
		j, g *int64
	}{{keys[0], journaled.Tokens, given.Tokens}, {keys[1], journaled.Iterations, given.Iterations}, {keys[2], journaled.MicroUSD, given.MicroUSD}} {
		if (ch.j == nil) != (ch.g == nil) || ch.j != nil && *ch.j != *ch.g {
			m := &supervise.ResumeMismatchError{Field: "budget." + ch.key, Pointer: "/budget/" + ch.key, Journaled: amount(ch.j), Given: amount(ch.g)}
			if i == 2 {
				m.Journaled, m.Given = dollars(ch.j), dollars(ch.g)
			}
			return m
		}
	}
	names := slices.Sorted(maps.Keys(journaled.Resources))
	for name := range given.Resources {
		if _, ok := journaled.Resources[name]; !ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		j, jok := journaled.Resources[name]
		g, gok := given.Resources[name]
		if jok != gok || j != g {
			return &supervise.ResumeMismatchError{Field: "budget.resources." + name, Pointer: "/budget/resources/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(name),
				Journaled: amountIf(j, jok), Given: amountIf(g, gok)}
		}
	}
	return nil
}

func amount(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatInt(*v, 10)
}

// dollars is a µUSD cap in the graph file's unit, dollars.
func dollars(v *int64) string {
	if v == nil {
		return "none"
	}
	return strconv.FormatFloat(float64(*v)/1e6, 'f', -1, 64)
}

func amountIf(v int64, ok bool) string {
	if !ok {
		return "none"
	}
	return strconv.FormatInt(v, 10)
}

// clip cuts a task quoted in an error to 200 bytes.
func clip(s string) string {
	if len(s) <= 200 {
		return s
	}
	return strings.ToValidUTF8(s[:200], "") + "…"
}
