package supervise

import (
	"context"
	"errors"
	"fmt"
	"strings"
)

// MaxLostNamed is the most lost records a JournalLossError names one
// by one; it counts them all.
const MaxLostNamed = 16

// ErrJournalIncomplete matches the error Supervise returns beside a
// result when records of state changes the run made could not be
// journaled (see JournalLossError).
var ErrJournalIncomplete = errors.New("supervise: the run's journal is incomplete")

// LostRecord names one record a run could not journal.
type LostRecord struct {
	Kind string `json:"kind"`
	Node NodeID `json:"node,omitzero"`
}

// JournalLossError is returned beside a run's result (errors.As) when
// the spawn journal failed to take records of state changes the run
// had already made — a worker's settlement, the manager's metered
// spend, a submitted result, a control acknowledgement, a settlement
// hook's end, a layer above's note (a graph edge traversal), an
// unconfirmed teardown — or the coordination log failed to take a
// question asked, a decision delivered or an analyst's finding, while
// the run went on.
//
// The spec's journal is the run's durable truth (§3.6: one fsynced
// record per event, appended once the event is committed; §6: a
// restore debits committed spend exactly once and charges a started
// but unsettled worker its ceiling). A journal missing such a record
// no longer reproduces the run on resume, so the run's success is not
// reported silently: the result is still what this process observed
// (its winner passed the deliverable check and its blob is stored),
// and this error says which records are missing. Records whose write
// was refused before anything changed (a spawn, a defined analyst, a
// requested analysis) are not losses: the verb returned the error and
// nothing happened.
type JournalLossError struct {
	// Count is how many records were lost; Lost names the first
	// MaxLostNamed of them in the order they were lost.
	Count int
	Lost  []LostRecord
	// Err is the first append failure.
	Err error
}

func (e *JournalLossError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "supervise: %d journal record(s) lost (", e.Count)
	for i, r := range e.Lost {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(r.Kind)
		if r.Node != "" {
			b.WriteString(" of " + string(r.Node))
		}
	}
	if e.Count > len(e.Lost) {
		fmt.Fprintf(&b, ", and %d more", e.Count-len(e.Lost))
	}
	b.WriteString("); a resume of this run cannot reproduce it: keep this result where its caller records results")
	if e.Err != nil {
		b.WriteString(": " + e.Err.Error())
	}
	return b.String()
}

// Unwrap returns ErrJournalIncomplete and the first append failure.
func (e *JournalLossError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrJournalIncomplete}
	}
	return []error{ErrJournalIncomplete, e.Err}
}

// appendOrLose appends r, a record of a state change already made, and
// counts it lost when the append fails; it returns the failure for the
// caller to log or return.
func (l *runLog) appendOrLose(ctx context.Context, r Record) error {
	err := l.append(ctx, r)
	if err != nil {
		l.lose(r.Kind, r.Node, err)
	}
	return err
}

// appendCoordOrLose appends r, a coordination record of something that
// already happened (a question asked, a decision delivered, a finding
// made), and counts it lost, under its kind and node, when the append
// fails: the coordination log is the run's evidence of them (§3.6).
func (l *runLog) appendCoordOrLose(ctx context.Context, r CoordRecord, node NodeID) error {
	err := l.appendCoord(ctx, r)
	if err != nil {
		l.lose(r.Kind, node, err)
	}
	return err
}

// lose counts a lost record of kind about node.
func (l *runLog) lose(kind string, node NodeID, err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loss == nil {
		l.loss = &JournalLossError{Err: err}
	}
	l.loss.Count++
	if len(l.loss.Lost) < MaxLostNamed {
		l.loss.Lost = append(l.loss.Lost, LostRecord{Kind: kind, Node: node})
	}
}

// lossError is the run's JournalLossError so far, nil when none was
// lost (a copy: the run may still lose more).
func (l *runLog) lossError() *JournalLossError {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.loss == nil {
		return nil
	}
	e := *l.loss
	e.Lost = append([]LostRecord(nil), l.loss.Lost...)
	return &e
}
