package cli

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/agentrt/agentrt/supervise"
)

// topFollows keeps one superviseFollow per run dir across looks, so a
// look at a run reads only what its journal gained since the last.
type topFollows struct {
	mu   sync.Mutex
	dirs map[string]*superviseFollow
}

// look reads run dir dir through its follow, made on its first look.
// Run dirs not looked at in seen are forgotten by sweep.
func (f *topFollows) look(ctx context.Context, dir string) (topRun, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.dirs == nil {
		f.dirs = map[string]*superviseFollow{}
	}
	fl, ok := f.dirs[dir]
	if !ok {
		fl = newSuperviseFollow(dir)
		f.dirs[dir] = fl
	}
	fl.seen = true
	return fl.look(ctx)
}

// sweep forgets the run dirs not looked at since the last sweep (a run
// dir removed, or no longer among the newest), so the follows stay as
// many as the runs shown.
func (f *topFollows) sweep() {
	f.mu.Lock()
	defer f.mu.Unlock()
	for dir, fl := range f.dirs {
		if !fl.seen {
			delete(f.dirs, dir)
		}
		fl.seen = false
	}
}

// superviseFollow follows one supervise run dir: a RunDirTail of its
// journal and the run folded from the records read so far. A journal
// that disappears is an error of that look (the fold is kept, so a dir
// that comes back is read on from where it was, or again from its start
// when it was replaced).
type superviseFollow struct {
	dir  string
	tail *supervise.RunDirTail
	fold superviseFold
	// logs follows the worker logs of the workers folded so far.
	logs workerLogs
	seen bool
}

func newSuperviseFollow(dir string) *superviseFollow {
	return &superviseFollow{dir: dir, tail: supervise.TailRunDir(dir), fold: newSuperviseFold()}
}

// look reads what the journal and the worker logs gained and returns
// the run as it now stands, its state file read anew.
func (fl *superviseFollow) look(ctx context.Context) (topRun, error) {
	recs, restarted, err := fl.tail.Next(ctx)
	if restarted {
		fl.fold, fl.logs = newSuperviseFold(), workerLogs{}
	}
	for _, r := range recs {
		fl.fold.apply(r)
	}
	if err != nil {
		return topRun{}, err
	}
	return fl.fold.run(ctx, fl.dir, fl.tail.Skipped(), &fl.logs), nil
}

// superviseFold is a supervise run folded from its journal's records in
// order, one record at a time.
type superviseFold struct {
	// recs are the records folded before the run's root was known from
	// a run-started record, kept to fold them again when one arrives;
	// once it has, none is kept (the fold holds the workers and a
	// bounded tail, not the journal).
	recs []supervise.Record
	// root is the run's root node: the first run-started record's run
	// id, or else the first parentless spawn.
	root supervise.NodeID
	// rootStarted says root came from a run-started record.
	rootStarted bool

	id, task, status string
	live             bool
	started          time.Time
	detail           []string
	index            map[supervise.NodeID]int
	workers          []topWorker
	spent            sumSpend
	// tail holds the latest journal lines, at most 2*topLogTail before
	// it is cut back to topLogTail.
	tail []string
}

func newSuperviseFold() superviseFold {
	return superviseFold{task: "unknown", status: "running", live: true, index: map[supervise.NodeID]int{}}
}

func (f *superviseFold) isRoot(n supervise.NodeID) bool {
	_, hasParent := n.Parent()
	return n == f.root || !hasParent
}

// apply folds r onto the run. A router manager's transcript record (its
// conversation, journaled for a resume) changes nothing top shows and is
// no event for people: it is neither folded nor kept.
func (f *superviseFold) apply(r supervise.Record) {
	if r.Kind == supervise.KindTranscript {
		return
	}
	if r.Kind == supervise.KindRunStarted && r.RunID != "" && !f.rootStarted {
		// The run's root is the first run-started record's run id, even
		// when records before it were folded without knowing it.
		prior := f.recs
		*f = newSuperviseFold()
		f.root, f.rootStarted = supervise.NodeID(r.RunID), true
		for _, p := range prior {
			f.applyOne(p)
		}
	}
	f.applyOne(r)
}

func (f *superviseFold) applyOne(r supervise.Record) {
	if !f.rootStarted {
		f.recs = append(f.recs, r)
	}
	f.tail = append(f.tail, journalText(r))
	if len(f.tail) >= 2*topLogTail {
		f.tail = append(f.tail[:0], f.tail[len(f.tail)-topLogTail:]...)
	}
	switch r.Kind {
	case supervise.KindRunStarted:
		f.id = r.RunID
		f.task = oneLine(orUnknown(r.Task))
		if r.StartedAtMS != 0 {
			f.started = time.UnixMilli(r.StartedAtMS)
			f.detail = append(f.detail, "started   "+time.UnixMilli(r.StartedAtMS).UTC().Format(time.RFC3339))
		}
		if r.DeadlineMS != 0 {
			f.detail = append(f.detail, "deadline  "+time.UnixMilli(r.DeadlineMS).UTC().Format(time.RFC3339))
		}
	case supervise.KindSpawned:
		if f.isRoot(r.Node) {
			// A root spawn (journals that record one) names the run.
			if f.root == "" {
				f.root = r.Node
			}
			if f.id == "" {
				f.id = string(r.Node)
			}
			if f.task == "unknown" && r.Task != "" {
				f.task = oneLine(r.Task)
			}
			return
		}
		w := topWorker{ID: string(r.Node), Label: orUnknown(labelOrProfile(r)), Parent: string(r.Parent),
			State: "running", Verdict: "unknown", Latency: "unknown", Spend: "unknown",
			Budget: budgetText(r.Reserved), Task: oneLine(r.Task)}
		w.budget = r.Reserved
		if r.Reserved == nil {
			w.Budget, w.budget = budgetText(r.Budget), r.Budget
		}
		w.Lead = string(leadOf(r.Node, f.root))
		w.logLabel = labelOrProfile(r)
		f.index[r.Node] = len(f.workers)
		f.workers = append(f.workers, w)
	case supervise.KindSettled:
		i, ok := f.index[r.Node]
		if !ok {
			return // a settlement whose spawn line was lost
		}
		w := &f.workers[i]
		w.State = string(r.State)
		w.Verdict = verdictText(r.Verdict)
		w.Spend, w.spent = spendText(r.Spent), r.Spent
		if r.Spent != nil {
			w.microUSD = r.Spent.MicroUSD
		}
		f.spent.add(r.Spent)
	case supervise.KindFinished:
		f.status, f.live = orUnknown(r.Outcome), false
		if r.Reason != "" {
			f.detail = append(f.detail, "why       "+r.Reason)
		}
	}
}

// run returns the run as folded so far, with its state file read now
// and what logs gained read on; skipped is how many journal lines were
// unreadable. The fold itself is not changed.
func (f *superviseFold) run(ctx context.Context, dir string, skipped int, logs *workerLogs) topRun {
	tr := topRun{ID: f.id, Kind: "supervise", Status: f.status, Live: f.live, Task: f.task,
		Budget: "unknown", dir: dir, started: f.started}
	tr.Detail = append([]string{"run dir   " + dir}, f.detail...)
	if skipped > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d journal line(s) unreadable, skipped", skipped))
	}
	tr.Tail = slices.Clone(f.tail[max(len(f.tail)-topLogTail, 0):])
	if tr.ID == "" {
		tr.ID = "unknown"
	}
	workers := slices.Clone(f.workers)
	spent := f.spent
	fromState := applyRunState(ctx, &tr, dir)
	if tr.Live {
		applyHolder(&tr, dir)
	}
	for i := range workers {
		if workers[i].State != "running" {
			continue
		}
		spent.inFlight = true
		if !tr.Live {
			// The run ended without settling it: its process stopped.
			workers[i].State = "down"
		}
	}
	n, logNotes := logs.read(ctx, dir, workers)
	if n > 0 {
		tr.Notes = append(tr.Notes, fmt.Sprintf("%d worker log line(s) unreadable, skipped", n))
	}
	tr.Notes = append(tr.Notes, logNotes...)
	tr.Workers = workers
	tr.Totals = totalsOf(workers, spent)
	if !fromState {
		tr.Spend, tr.spend = spent.text(), spent.numbers()
	}
	if tr.Live {
		tr.Detail = append(tr.Detail, "status    no finished record yet: running, or its process stopped")
	}
	return tr
}

// topStopped is the status of a run whose journal and state say running
// and whose supervisor is gone.
const topStopped = "stopped"

// applyHolder tells, from the run dir's supervise.lock and without
// taking it (supervise.ProbeRunDirLock), whether a run that reads as
// running still has its supervisor: one that is gone (SIGKILLed, its
// machine rebooted) made the run stopped, with how to resume it; one on
// another host is said not checked. A run dir without supervise.lock
// (its journal in a store, owned through the store's lease, or an older
// writer) is left as it reads.
func applyHolder(tr *topRun, dir string) {
	p, err := supervise.ProbeRunDirLock(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return
	case err != nil:
		tr.Notes = append(tr.Notes, "supervisor not checked: "+err.Error())
		return
	}
	tr.supervisor = &p
	tr.Detail = append(tr.Detail, "supervisor "+p.Why)
	switch p.State {
	case supervise.HolderGone:
		tr.Status, tr.Live = topStopped, false
		tr.Notes = append(tr.Notes, "stopped: "+p.Why, "resume with: "+resumeHint(dir))
		tr.Detail = append(tr.Detail, "resume    "+resumeHint(dir)+" (agentrt graph … --resume for a graph run)")
	case supervise.HolderRemote, supervise.HolderUnknown:
		tr.Notes = append(tr.Notes, p.Why)
	}
}

// resumeHint is the command that resumes the run of run dir dir; its
// other arguments are the ones it was started with, which the run dir
// does not record.
func resumeHint(dir string) string {
	return "agentrt supervise … --resume --run-dir " + shellWord(dir)
}

// shellWord is s as one POSIX shell word: as is when it holds only
// characters no shell reads specially, else single-quoted.
func shellWord(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:,@%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
