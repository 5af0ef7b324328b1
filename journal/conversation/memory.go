package conversation

import (
	"context"
	"sync"
	"time"
)

// Memory is a Journal held in memory, for tests and single-process
// scratch runs: it forgets everything when the process ends. It follows
// the same rules and limits as the durable adapters; Limits bound each
// run, not how many runs it holds.
type Memory struct {
	lim    Limits
	mu     sync.Mutex
	runs   map[string]*memoryRun
	closed bool
}

type memoryRun struct {
	state runState
	halt  Halt
	turns []Turn
}

var _ Journal = (*Memory)(nil)

// NewMemory returns an empty in-memory journal with the given limits.
func NewMemory(lim Limits) *Memory {
	return &Memory{lim: lim.withDefaults(), runs: map[string]*memoryRun{}}
}

// Close makes every later call fail with ErrClosed.
func (m *Memory) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	return nil
}

// lock takes the journal's lock unless ctx is done or the journal closed.
func (m *Memory) lock(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return context.Cause(ctx)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return ErrClosed
	}
	return nil
}

func (m *Memory) state(runID string) *runState {
	if r := m.runs[runID]; r != nil {
		return &r.state
	}
	return nil
}

// LoadRun implements Journal.
func (m *Memory) LoadRun(ctx context.Context, runID string) (*Entry, error) {
	if err := checkRunID(runID, m.lim); err != nil {
		return nil, err
	}
	if err := m.lock(ctx); err != nil {
		return nil, err
	}
	defer m.mu.Unlock()
	r := m.runs[runID]
	if r == nil {
		return nil, nil
	}
	e := &Entry{RunID: runID, StartedAt: r.state.startedAt, EndedAt: r.state.endedAt, Turns: make([]Turn, len(r.turns))}
	for i, t := range r.turns {
		e.Turns[i] = cloneTurn(t)
	}
	if r.state.halted() {
		h := r.halt
		e.Halt = &h
	}
	return e, nil
}

// BeginRun implements Journal.
func (m *Memory) BeginRun(ctx context.Context, runID string, startedAt time.Time) error {
	if err := checkBegin(runID, startedAt, m.lim); err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	write, err := decideBegin(runID, m.state(runID), startedAt)
	if write {
		m.runs[runID] = &memoryRun{state: runState{startedAt: keptTime(startedAt)}}
	}
	return err
}

// AppendTurn implements Journal.
func (m *Memory) AppendTurn(ctx context.Context, runID string, t Turn) error {
	t, enc, err := prepareTurn(runID, t, m.lim)
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	write, err := decideTurn(runID, m.state(runID), t.Index, enc, &m.lim)
	if write {
		r := m.runs[runID]
		r.state.addTurn(enc)
		r.turns = append(r.turns, t)
	}
	return err
}

// RecordHalt implements Journal.
func (m *Memory) RecordHalt(ctx context.Context, runID string, h Halt, endedAt time.Time) error {
	enc, err := prepareHalt(runID, h, endedAt, m.lim)
	if err != nil {
		return err
	}
	if err := m.lock(ctx); err != nil {
		return err
	}
	defer m.mu.Unlock()
	write, err := decideHalt(runID, m.state(runID), enc, endedAt, &m.lim)
	if write {
		r := m.runs[runID]
		r.state.setHalt(enc, keptTime(endedAt))
		r.halt = h
	}
	return err
}

// keptTime is t as the journal keeps it: UTC, to the millisecond.
func keptTime(t time.Time) time.Time { return t.UTC().Truncate(time.Millisecond) }

func checkBegin(runID string, startedAt time.Time, lim Limits) error {
	if err := checkRunID(runID, lim); err != nil {
		return err
	}
	return checkTime(startedAt, "/startedAt")
}

// prepareTurn validates t as runID's next turn and returns it as the
// journal keeps it (times to the millisecond), with its canonical JSON.
func prepareTurn(runID string, t Turn, lim Limits) (Turn, []byte, error) {
	if err := checkRunID(runID, lim); err != nil {
		return Turn{}, nil, err
	}
	if err := checkTurn(runID, t, true); err != nil {
		return Turn{}, nil, err
	}
	t = cloneTurn(t)
	t.StartedAt, t.EndedAt = keptTime(t.StartedAt), keptTime(t.EndedAt)
	_, enc, err := encodeTurn(t)
	if err != nil {
		return Turn{}, nil, err
	}
	return t, enc, nil
}

// prepareHalt validates a halt of runID and returns its canonical JSON.
func prepareHalt(runID string, h Halt, endedAt time.Time, lim Limits) ([]byte, error) {
	if err := checkRunID(runID, lim); err != nil {
		return nil, err
	}
	if err := checkHalt(h); err != nil {
		return nil, err
	}
	if err := checkTime(endedAt, "/endedAt"); err != nil {
		return nil, err
	}
	return encodeHalt(h)
}

// cloneTurn copies t so that no caller shares its Usage with the journal.
func cloneTurn(t Turn) Turn {
	if u := t.Usage; u != nil {
		c := *u
		c.TokensIn, c.TokensOut, c.CostUSD, c.LatencyMS = clonePtr(u.TokensIn), clonePtr(u.TokensOut), clonePtr(u.CostUSD), clonePtr(u.LatencyMS)
		t.Usage = &c
	}
	return t
}

func clonePtr[T any](p *T) *T {
	if p == nil {
		return nil
	}
	v := *p
	return &v
}
