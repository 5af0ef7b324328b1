package conversation

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/journal"
)

// FileOptions configure OpenFile.
type FileOptions struct {
	// Limits bound what the journal accepts; the record limit of the
	// underlying file follows from them.
	Limits Limits
	// CreateDir creates the file's missing parent directories.
	CreateDir bool
	// Logger receives a note when Open truncated a torn tail; nil means
	// slog.Default().
	Logger *slog.Logger
}

// File is a Journal in one JSONL file, written through package journal:
// one record per line ({"kind":"begin","runId","startedAt"},
// {"kind":"turn","runId","turn"}, {"kind":"halt","runId","halted",
// "endedAt"}), each append fsynced before it returns, and the file locked
// against a second writer. A final line torn by a crash is skipped and
// truncated when the file is next opened.
//
// OpenFile reads the file once and keeps, for each run, only what it
// needs to decide a call (start, halt, a digest per turn); LoadRun reads
// the file again from the run's begin record on, so its cost grows with
// what was written since (BenchmarkLoadRun). Calls on different runs
// proceed concurrently and share fsyncs.
type File struct {
	j   *journal.Journal
	lim Limits

	mu     sync.Mutex
	runs   map[string]*fileRun
	closed bool
}

type fileRun struct {
	mu    sync.Mutex // held across a call's decision and its append
	begun bool
	state runState
	from  int64 // sequence number of the begin record
}

var _ Journal = (*File)(nil)

// OpenFile opens (creating if needed) the journal file at path, repairs a
// torn tail and reads it. A corrupt record or a record that breaks the
// rules (a turn before its run's begin, a gap in turn indexes) makes it
// fail with a *CorruptError: such a file lost something acknowledged, and
// resuming from it would redo or contradict it. Another open journal on
// the same file makes it fail with a *journal.LockedError.
func OpenFile(ctx context.Context, path string, opts FileOptions) (*File, error) {
	lim := opts.Limits.withDefaults()
	j, err := journal.Open(path, journal.Options{MaxRecordBytes: lim.recordBytes(), CreateDir: opts.CreateDir})
	if err != nil {
		return nil, fmt.Errorf("conversation journal: %w", err)
	}
	f := &File{j: j, lim: lim, runs: map[string]*fileRun{}}
	if err := f.replay(ctx); err != nil {
		j.Close()
		return nil, err
	}
	if torn := j.Recovery().TornBytes; torn > 0 {
		log := opts.Logger
		if log == nil {
			log = slog.Default()
		}
		log.InfoContext(ctx, "conversation journal: truncated a torn final line", "path", path, "bytes", torn)
	}
	return f, nil
}

// replay rebuilds the runs' states from the file.
func (f *File) replay(ctx context.Context) error {
	for e, err := range f.j.Read(ctx, 1) {
		if err != nil {
			var ce *journal.CorruptError
			if errors.As(err, &ce) {
				return &CorruptError{Source: f.j.Path(), Where: fmt.Sprintf("line %d", ce.Seq), Err: err}
			}
			return fmt.Errorf("conversation journal: reading %s: %w", f.j.Path(), err)
		}
		r, err := decodeRecord(e.Value)
		if err == nil {
			err = f.apply(r, e.Seq)
		}
		if err != nil {
			return &CorruptError{Source: f.j.Path(), Where: fmt.Sprintf("line %d", e.Seq), Err: err}
		}
	}
	return nil
}

// apply adds one stored record to its run's state. A record repeating
// what is recorded is skipped; anything else the rules refuse is an
// error (corruption, for the caller).
func (f *File) apply(r record, seq int64) error {
	run := f.runs[r.runID]
	var st *runState
	if run != nil {
		st = &run.state
	}
	switch r.kind {
	case kindBegin:
		write, err := decideBegin(r.runID, st, r.startedAt)
		if write {
			f.runs[r.runID] = &fileRun{begun: true, state: runState{startedAt: r.startedAt}, from: seq}
		}
		return err
	case kindTurn:
		_, enc, err := encodeTurn(r.turn)
		if err != nil {
			return err
		}
		write, err := decideTurn(r.runID, st, r.turn.Index, enc, nil)
		if write {
			run.state.addTurn(enc)
		}
		return err
	default:
		enc, err := encodeHalt(r.halt)
		if err != nil {
			return err
		}
		write, err := decideHalt(r.runID, st, enc, r.endedAt, nil)
		if write {
			run.state.setHalt(enc, r.endedAt)
		}
		return err
	}
}

// Recovery reports what opening repaired.
func (f *File) Recovery() journal.Recovery { return f.j.Recovery() }

// Close waits for appends in progress and releases the file.
func (f *File) Close() error {
	f.mu.Lock()
	f.closed = true
	f.mu.Unlock()
	return f.j.Close()
}

// run returns runID's state, locked, creating an unbegun one when create
// is set; nil (and nothing locked) when there is none.
func (f *File) run(ctx context.Context, runID string, create bool) (*fileRun, error) {
	if err := ctx.Err(); err != nil {
		return nil, context.Cause(ctx)
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, ErrClosed
	}
	run := f.runs[runID]
	if run == nil && create {
		run = &fileRun{}
		f.runs[runID] = run
	}
	f.mu.Unlock()
	if run != nil {
		run.mu.Lock()
	}
	return run, nil
}

func (r *fileRun) stateOrNil() *runState {
	if r == nil || !r.begun {
		return nil
	}
	return &r.state
}

// append writes one record durably.
func (f *File) append(ctx context.Context, r record) (int64, error) {
	v, err := encodeRecord(r)
	if err != nil {
		return 0, err
	}
	seq, err := f.j.Append(ctx, v)
	if errors.Is(err, journal.ErrClosed) {
		err = ErrClosed
	}
	return seq, err
}

// LoadRun implements Journal. It reads the run's records from the file.
func (f *File) LoadRun(ctx context.Context, runID string) (*Entry, error) {
	if err := checkRunID(runID, f.lim); err != nil {
		return nil, err
	}
	run, err := f.run(ctx, runID, false)
	if err != nil || run == nil {
		return nil, err
	}
	defer run.mu.Unlock()
	if !run.begun {
		return nil, nil
	}
	if run.state.bytes > f.lim.MaxRunBytes {
		return nil, &TooLargeError{What: "run", RunID: runID, Size: run.state.bytes, Limit: f.lim.MaxRunBytes}
	}
	e := &Entry{RunID: runID, StartedAt: run.state.startedAt, Turns: make([]Turn, 0, len(run.state.turns))}
	for item, err := range f.j.Read(ctx, run.from) {
		if err != nil {
			return nil, fmt.Errorf("conversation journal: reading %s: %w", f.j.Path(), err)
		}
		if id, _ := item.Value.Get("runId"); id.Kind() != canonjson.String || id.Str() != runID {
			continue
		}
		r, err := decodeRecord(item.Value)
		if err != nil {
			return nil, &CorruptError{Source: f.j.Path(), Where: fmt.Sprintf("line %d", item.Seq), Err: err}
		}
		switch {
		case r.kind == kindTurn && r.turn.Index == len(e.Turns):
			e.Turns = append(e.Turns, r.turn)
		case r.kind == kindHalt && e.Halt == nil:
			h := r.halt
			e.Halt, e.EndedAt = &h, r.endedAt
		}
	}
	if len(e.Turns) != len(run.state.turns) || (e.Halt != nil) != run.state.halted() {
		return nil, &CorruptError{Source: f.j.Path(), Where: fmt.Sprintf("run %q", runID),
			Err: fmt.Errorf("the file holds %d turns, %d were recorded", len(e.Turns), len(run.state.turns))}
	}
	return e, nil
}

// BeginRun implements Journal.
func (f *File) BeginRun(ctx context.Context, runID string, startedAt time.Time) error {
	if err := checkBegin(runID, startedAt, f.lim); err != nil {
		return err
	}
	run, err := f.run(ctx, runID, true)
	if err != nil {
		return err
	}
	defer run.mu.Unlock()
	write, err := decideBegin(runID, run.stateOrNil(), startedAt)
	if !write {
		return err
	}
	startedAt = keptTime(startedAt)
	seq, err := f.append(ctx, record{kind: kindBegin, runID: runID, startedAt: startedAt})
	if err != nil {
		return err
	}
	run.begun, run.state, run.from = true, runState{startedAt: startedAt}, seq
	return nil
}

// AppendTurn implements Journal.
func (f *File) AppendTurn(ctx context.Context, runID string, t Turn) error {
	t, enc, err := prepareTurn(runID, t, f.lim)
	if err != nil {
		return err
	}
	run, err := f.run(ctx, runID, false)
	if err != nil {
		return err
	}
	if run != nil {
		defer run.mu.Unlock()
	}
	write, err := decideTurn(runID, run.stateOrNil(), t.Index, enc, &f.lim)
	if !write {
		return err
	}
	if _, err := f.append(ctx, record{kind: kindTurn, runID: runID, turn: t}); err != nil {
		return err
	}
	run.state.addTurn(enc)
	return nil
}

// RecordHalt implements Journal.
func (f *File) RecordHalt(ctx context.Context, runID string, h Halt, endedAt time.Time) error {
	enc, err := prepareHalt(runID, h, endedAt, f.lim)
	if err != nil {
		return err
	}
	run, err := f.run(ctx, runID, false)
	if err != nil {
		return err
	}
	if run != nil {
		defer run.mu.Unlock()
	}
	write, err := decideHalt(runID, run.stateOrNil(), enc, endedAt, &f.lim)
	if !write {
		return err
	}
	endedAt = keptTime(endedAt)
	if _, err := f.append(ctx, record{kind: kindHalt, runID: runID, halt: h, endedAt: endedAt}); err != nil {
		return err
	}
	run.state.setHalt(enc, endedAt)
	return nil
}
