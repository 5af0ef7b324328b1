package graph

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// journaledRow is a ledger row as the run's journal keeps it (an edge
// record's Data): the row, and whether it spent a traversal of its
// edge's cap, so a resumed run restores the caps exactly.
type journaledRow struct {
	LedgerRow
	Charged bool `json:"charged,omitzero"`
	// Analyst is the analyst worker (an analyst node's or a lens's)
	// whose findings the row routes; "" for every other row.
	Analyst supervise.NodeID `json:"analyst,omitzero"`
	// Call is the tool call id of the root's steer_agent call, or of
	// its spawn_worker call supervise refused, the row ledgers ("" for
	// every other row), so a resumed root that runs the call again
	// ledgers it once.
	Call string `json:"call,omitzero"`
}

// decodeJournaledRow decodes an edge record's data. A record without a
// directive member (one that names none) decodes with Directive empty:
// its directive is unknown, and a resume compares what it has.
func decodeJournaledRow(v canonjson.Value) (journaledRow, error) {
	var jr journaledRow
	if _, ok := v.Get("directive"); !ok && v.Kind() == canonjson.Object {
		v = v.With("directive", canonjson.StringValue(""))
	}
	err := canonjson.FromValue(v, &jr)
	return jr, err
}

// restore rebuilds the graph's state from the run's journal before the
// brain drives: on a resumed run, the edge ledger and its traversal
// counts, the caps spent (charged rows, analyst spawns) and exhausted,
// and which workers each node and analyst ran. On a new run the journal
// holds none of these and nothing changes, but the graph's topology is
// journaled.
func (r *run) restore(ctx context.Context, c *supervise.Coordinator) error {
	edges := map[string]Edge{}
	for _, e := range r.delegatesTo {
		edges[e.ID()] = e
	}
	for _, e := range r.analyzes {
		edges[e.ID()] = e
	}
	r.spawnMu.Lock()
	defer r.spawnMu.Unlock()
	r.mu.Lock()
	defer r.mu.Unlock()
	var capped []Edge
	fixed := false
	var spawned []supervise.Record // worker nodes' spawns, in order
	rowed := map[supervise.NodeID]bool{}
	for since := 0; ; {
		page := c.ReadJournal(supervise.JournalArgs{SinceRow: since, Kinds: []string{supervise.KindEdge, supervise.KindSpawned, supervise.KindGraph}})
		for _, rec := range page.Rows {
			switch rec.Kind {
			case supervise.KindGraph:
				fixed = true
			case supervise.KindSpawned:
				if r.restoreSpawn(rec) {
					spawned = append(spawned, rec)
				}
			case supervise.KindEdge:
				jr, err := decodeJournaledRow(rec.Data)
				if err != nil {
					return fmt.Errorf("graph: resuming: an edge record does not decode: %w", err)
				}
				e, ok := edges[jr.Edge]
				if !ok {
					return fmt.Errorf("graph: resuming: the journal has edge %s, which this graph does not (resume with the graph that started the run)", jr.Edge)
				}
				if jr.Kind == Delegates && jr.Charged {
					rowed[jr.WorkerID] = true
				}
				if jr.Analyst != "" {
					r.analysed[jr.Analyst] = true
				}
				if jr.Kind == Analyzes && jr.Analyst == "" {
					// A settle the edge ledgered without an analyst
					// (past its cap, its analyst refused): the row
					// names the source worker.
					r.decided[lensRunKey(e, jr.WorkerID)] = true
				}
				switch {
				case jr.Call == "":
				case jr.Continuity == ContinuitySteer:
					r.steerCalls[jr.Call] = true
				case jr.Kind == Delegates && jr.Outcome == OutcomeUnpropagated:
					r.refusedCalls[jr.Call+"\x00"+jr.Edge]++
				}
				r.ledger = append(r.ledger, jr.LedgerRow)
				r.count[jr.Edge] = max(r.count[jr.Edge], jr.Traversal)
				if jr.Charged {
					r.spent[jr.Edge]++
				}
				if jr.Outcome == OutcomeUnpropagated && jr.Reason == capReason(e) {
					capped = append(capped, e)
					if jr.Kind == Delegates {
						r.refusals[jr.Edge]++
					}
				}
			}
		}
		if !page.More {
			break
		}
		since = page.NextRow
	}
	for _, e := range capped {
		r.markExhaustedLocked(e)
	}
	// A process that died between a worker's spawn and its delegates
	// row (two appends) left a traversal that happened, the task having
	// crossed with the spawn, and no row: it is ledgered and charged
	// now, once, so the edge's cap counts it.
	for _, rec := range spawned {
		if !rowed[rec.Node] {
			r.recordLocked(ctx, c, r.lostSpawnRow(rec), true)
		}
	}
	r.ledgerInDoubtAnalystsLocked(ctx, c)
	if !fixed {
		// A new run (or one whose journal predates topology records)
		// journals what it runs, for its resume to hold it to.
		v, err := canonjson.ToValue(r.topo)
		if err == nil {
			err = c.Note(context.WithoutCancel(ctx), supervise.KindGraph, "", v)
		}
		if err != nil {
			r.logger.Error("graph: journaling the graph's topology", "err", err)
		}
	}
	return nil
}

// ledgerInDoubtAnalystsLocked ledgers each analyst worker (node or lens) the dead
// process left running whose outcome the resume cannot recover (in
// doubt): it will route no findings, so its traversal, charged at its
// spawn, is ledgered unpropagated, once (the row names it), rather than
// missing from the ledger. Supervise marks a worker in doubt while it
// replays the journal (no execution journaled) or after OnResume (an
// execution it cannot recover), so this runs from restore and again
// when the brain starts. r.mu is held.
func (r *run) ledgerInDoubtAnalystsLocked(ctx context.Context, c *supervise.Coordinator) {
	runs := maps.Clone(r.analystRuns)
	maps.Copy(runs, r.lensRuns)
	for _, id := range slices.Sorted(maps.Keys(runs)) {
		if r.analysed[id] {
			continue
		}
		if o, ok := nodeOf(c, id); ok && o.InDoubt {
			r.journalLocked(ctx, c, inDoubtAnalystRow(id, runs[id]))
		}
	}
}

// inDoubtAnalystRow is the row of analyst worker id, left in doubt by
// the restart: its traversal happened and its findings are lost.
func inDoubtAnalystRow(id supervise.NodeID, ar analystRun) journaledRow {
	e := ar.edge
	return journaledRow{Analyst: id, LedgerRow: LedgerRow{Edge: e.ID(), Kind: Analyzes, From: strings.Join(e.Over, "+"), To: e.To, Directive: e.Directive,
		Continuity: ContinuitySteer, Outcome: OutcomeUnpropagated, WorkerID: ar.source,
		Reason: "analyst worker " + string(id) + " is in doubt after the restart; its findings are lost"}}
}

// lensRunKey keys the analysis of edge e over worker source (a lens
// run, or a settle the edge decided on: see run.decided).
func lensRunKey(e Edge, source supervise.NodeID) string { return e.ID() + "\x00" + string(source) }

// restoreSpawn binds a journaled spawn to its graph node; r.mu is held.
func (r *run) restoreSpawn(rec supervise.Record) (worker bool) {
	if lens, source, ok := supervise.ParseAnalystKey(rec.Key); ok {
		if e, ok := r.analyzeBy[lens]; ok && r.lenses[lens] {
			r.spent[e.ID()]++
			r.lensRuns[rec.Node] = analystRun{edge: e, source: source}
			r.lensBy[lensRunKey(e, source)] = rec.Node
		}
		return false
	}
	if _, ok := r.workers[rec.Profile]; ok && rec.Parent == "" {
		r.bound[rec.Profile] = append(r.bound[rec.Profile], rec.Node)
		return true
	}
	if e, ok := r.analyzeBy[rec.Profile]; ok && !r.lenses[rec.Profile] {
		source := analysisSource(r.directive(e), rec.Task)
		r.analystRuns[rec.Node] = analystRun{edge: e, source: source}
		r.spent[e.ID()]++
		if source != "" {
			r.decided[lensRunKey(e, source)] = true
		}
	}
	return false
}

// lostSpawnRow is the delegates row of worker spawn rec, journaled
// without one: what Driver.Spawn would have ledgered, read back from
// the spawn's composed task. Its continuity is the edge's rule (a
// resume edge's spawn after the node's first resumes), as the call's
// own is not journaled.
func (r *run) lostSpawnRow(rec supervise.Record) LedgerRow {
	e := r.delegatesTo[rec.Profile]
	row := LedgerRow{Edge: e.ID(), Kind: Delegates, From: e.From, To: e.To, Directive: e.Directive, WorkerID: rec.Node,
		Continuity: ContinuityFresh, Outcome: OutcomeDelivered}
	if e.Continuity == ContinuityResume && len(r.bound[e.To]) > 0 && r.bound[e.To][0] != rec.Node {
		row.Continuity = ContinuityResume
	}
	directive, payload := r.directive(e), rec.Task
	if directive != "" { // compose's inverse
		payload = strings.TrimPrefix(strings.TrimPrefix(payload, directive), "\n\n")
	}
	row.Bytes = len(directive) + len(payload)
	if row.Bytes == 0 {
		row.Outcome, row.Reason = OutcomeEmpty, "no directive text and no task payload"
	}
	return row
}

// markExhaustedLocked lists e as exhausted; r.mu is held.
func (r *run) markExhaustedLocked(e Edge) {
	id := e.ID()
	if !slices.Contains(r.exhausted, id) {
		r.exhausted = append(r.exhausted, id)
	}
	if e.Kind == Delegates && !slices.Contains(r.exhaustedDelegates, id) {
		r.exhaustedDelegates = append(r.exhaustedDelegates, id)
	}
}

// afterSettle is the supervised run's AfterSettle: a worker node that
// settled done runs each lens analyzes edge over it (one traversal of
// the edge, ledgered unpropagated when the cap is spent or the run
// refuses the analyst); a lens analyst that settled has its findings
// routed along its edge.
func (r *run) afterSettle(ctx context.Context, c *supervise.Coordinator, s supervise.Settled) {
	if f := s.Finding; f != nil && r.lenses[f.Lens] {
		if _, routes := r.analyzeBy[f.Lens]; routes {
			defer r.lensHookReturned(s.Node.ID)
		}
	}
	if r.ledgerEndedAnalyst(ctx, s) {
		return
	}
	if f := s.Finding; f != nil {
		r.mu.Lock()
		routed := r.analysed[s.Node.ID]
		r.mu.Unlock()
		// A resumed run runs again the hook the dead process left
		// unfinished: findings its journal shows routed are not routed
		// twice.
		if e, ok := r.analyzeBy[f.Lens]; ok && r.lenses[f.Lens] && !routed {
			if r.opts.beforeLensRoute != nil {
				r.opts.beforeLensRoute()
			}
			r.routeFindings(ctx, c, analystRun{edge: e, source: f.Source}, supervise.Output{Node: s.Node.ID, Text: f.Findings})
		}
		return
	}
	if _, ok := r.workers[s.Node.Profile]; !ok || s.Node.State != supervise.StateDone {
		return
	}
	// Analyst nodes over it, then lenses.
	r.analyze(ctx, c, s.Node.Profile, supervise.Output{Node: s.Node.ID, Text: s.Text})
	for _, e := range r.analyzesOver[s.Node.Profile] {
		if !r.lenses[e.Analyst] {
			continue
		}
		r.mu.Lock()
		id, journaled := r.lensBy[lensRunKey(e, s.Node.ID)]
		ledgered := (journaled && r.analysed[id]) || (!journaled && r.decided[lensRunKey(e, s.Node.ID)])
		r.mu.Unlock()
		if ledgered {
			// A resumed run's hook, run again: the journal holds this
			// analysis's row (its findings routed, or lost in doubt, or
			// the settle past the cap or refused its lens).
			continue
		}
		row := LedgerRow{Edge: e.ID(), Kind: Analyzes, From: strings.Join(e.Over, "+"), To: e.To, Directive: e.Directive,
			Continuity: ContinuitySteer, Outcome: OutcomeUnpropagated, WorkerID: s.Node.ID}
		// A journaled lens run was charged at its spawn (restore counts
		// it): it is this traversal, not one past the cap. Any other
		// reserves its traversal before it starts, so that another
		// source's hook deciding meanwhile sees the cap it leaves.
		if !journaled && !r.reserve(e) {
			row.Reason = capReason(e)
			r.record(ctx, row, false)
			continue
		}
		res, err := c.RunAnalyst(ctx, supervise.RunAnalystArgs{Kind: e.Analyst, WorkerID: s.Node.ID})
		if err != nil && !journaled {
			r.release(e)
		}
		if err != nil && journaled {
			// The dead process journaled this lens run: its one row
			// names it, whichever of this hook and the brain's start
			// (ledgerInDoubtAnalystsLocked) comes first.
			r.ledgerJournaledLens(ctx, c, id, analystRun{edge: e, source: s.Node.ID}, "analyst run refused: "+err.Error())
			continue
		}
		if err != nil {
			row.Reason = "analyst run refused: " + err.Error()
			r.record(ctx, row, false)
			continue
		}
		// A resumed analysis (the hook ran again after a crash) was
		// charged when its spawn was journaled (restore counts it).
		switch {
		case res.Resumed != "" && !journaled:
			r.release(e)
		case res.Resumed == "" && journaled:
			r.charge(e)
		}
	}
}

// ledgerJournaledLens ledgers lens run id, journaled before a restart,
// whose analysis the resumed hook could not run again (why says why),
// unless a row already names it. An in-doubt run gets the row
// ledgerInDoubtAnalystsLocked would give it, so the ledger is the same
// whichever ran first.
func (r *run) ledgerJournaledLens(ctx context.Context, c *supervise.Coordinator, id supervise.NodeID, ar analystRun, why string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.analysed[id] {
		return
	}
	jr := inDoubtAnalystRow(id, ar)
	if o, ok := nodeOf(c, id); !ok || !o.InDoubt {
		jr.Reason = why
	}
	r.journalLocked(ctx, c, jr)
}

// ledgerEndedAnalyst ledgers an analyst worker (node or lens) that
// settled other than done — failed or cancelled — and reports whether s
// was one. It routes no findings, but its traversal was charged at its
// spawn: the row (unpropagated, with the source worker and why) keeps
// that traversal from missing from the ledger, once (the row names the
// analyst, so a resumed run's hook, run again, does not ledger it twice).
func (r *run) ledgerEndedAnalyst(ctx context.Context, s supervise.Settled) bool {
	if s.Node.State == supervise.StateDone {
		return false
	}
	r.spawnMu.Lock()
	ar, ok := r.analystRuns[s.Node.ID]
	r.spawnMu.Unlock()
	r.mu.Lock()
	if !ok {
		ar, ok = r.lensRuns[s.Node.ID]
	}
	if !ok && s.Finding != nil {
		if e, lens := r.analyzeBy[s.Finding.Lens]; lens && r.lenses[s.Finding.Lens] {
			ar, ok = analystRun{edge: e, source: s.Finding.Source}, true
		}
	}
	routed := r.analysed[s.Node.ID]
	r.mu.Unlock()
	if !ok {
		return false
	}
	if routed {
		return true
	}
	e := ar.edge
	reason := "analyst worker " + string(s.Node.ID) + " " + string(s.Node.State)
	if st := s.Node.Settlement; st != nil && st.Reason != "" {
		reason += ": " + st.Reason
	}
	row := LedgerRow{Edge: e.ID(), Kind: Analyzes, From: strings.Join(e.Over, "+"), To: e.To, Directive: e.Directive,
		Continuity: ContinuitySteer, Outcome: OutcomeUnpropagated, WorkerID: ar.source, Reason: reason + "; no findings were routed"}
	r.recordOf(ctx, journaledRow{LedgerRow: row, Analyst: s.Node.ID})
	return true
}

// checkJournal refuses, before anything runs, to resume the run's
// journal (the run dir's file, or with so.SpawnStore the store's run
// so.RunID) with a graph whose edges are not the ones it journaled: the
// restored ledger and caps would belong to another topology. An edge is
// its id and its directive (a changed directive is a new version of
// the edge, spec runtime §3.7, not the one whose traversals the journal
// counted); a record that names no directive (a journal written before
// rows carried one) is compared by id alone. A missing or empty journal
// is a new run.
func (pl *plan) checkJournal(ctx context.Context, so supervise.Options, given topology) error {
	directive := map[string]string{} // by edge id
	for _, e := range pl.delegatesTo {
		directive[e.ID()] = e.Directive
	}
	for _, e := range pl.analyzes {
		directive[e.ID()] = e.Directive
	}
	where := so.RunDir
	if so.SpawnStore != nil {
		where = "run " + so.RunID + " in the store"
	}
	var fixed *topology
	for rec, err := range journaled(ctx, so) {
		if err != nil {
			return &supervise.ResumeError{RunDir: where, Reason: "reading the journal", Err: err}
		}
		if rec.Kind == supervise.KindGraph && fixed == nil {
			t, err := decodeTopology(rec.Data)
			if err != nil {
				return &supervise.ResumeError{RunDir: where, Reason: "the graph record does not decode", Err: err}
			}
			fixed = &t
		}
		if rec.Kind != supervise.KindEdge {
			continue
		}
		jr, err := decodeJournaledRow(rec.Data)
		if err != nil {
			return &supervise.ResumeError{RunDir: where, Reason: "an edge record does not decode", Err: err}
		}
		want, ok := directive[jr.Edge]
		if !ok {
			return &supervise.ResumeError{RunDir: where, Reason: fmt.Sprintf("the journal has edge %s, which this graph does not; resume with the graph that started the run", jr.Edge)}
		}
		if jr.Directive != "" && jr.Directive != want {
			return &supervise.ResumeError{RunDir: where, Reason: fmt.Sprintf("the journal's edge %s ran directive %s, and this graph gives it %s; resume with the graph that started the run (or start a new run for the new directive)", jr.Edge, jr.Directive, want)}
		}
	}
	// The journaled topology (a journal written before runs journaled
	// one has none): the edges above are what ran, this is what was
	// defined, nodes' profiles and directive texts included.
	if fixed != nil {
		if m := given.change(*fixed); m != nil {
			return &supervise.ResumeError{RunDir: where, Reason: "the graph is not the one the run journaled; resume with the graph (and directives) that started the run", Err: m}
		}
	}
	return nil
}

// journaled yields the records of the run's journal, where so keeps it:
// the store's run so.RunID a page at a time, or the run dir's file (none
// when it does not exist).
func journaled(ctx context.Context, so supervise.Options) iter.Seq2[supervise.Record, error] {
	return func(yield func(supervise.Record, error) bool) {
		if so.SpawnStore == nil {
			recs, _, err := supervise.ReadRunDir(ctx, so.RunDir)
			if errors.Is(err, fs.ErrNotExist) {
				return
			}
			if err != nil {
				yield(supervise.Record{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			return
		}
		for after := ""; ; {
			recs, next, err := supervise.ReadStoreSpawnLog(ctx, so.SpawnStore, so.RunID, after)
			if after == "" && errors.Is(err, store.ErrNotFound) {
				// No run in the store: a process stopped before it
				// created the run's journal, a new run, as a run dir
				// without a journal file is.
				return
			}
			if err != nil {
				yield(supervise.Record{}, err)
				return
			}
			for _, r := range recs {
				if !yield(r, nil) {
					return
				}
			}
			if next == after {
				return
			}
			after = next
		}
	}
}
