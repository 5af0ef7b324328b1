package kernel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/store"
)

// ReasonAbandoned is the terminal reason CloseAbandoned records: the
// process holding the run stopped before it ended (its lease lapsed),
// and the run's judge settled it afterwards as unfinished work. Its
// spend is what the run recorded before it stopped, nothing more; it is
// never delivered.
const ReasonAbandoned = "abandoned"

// ErrNotAbandoned matches every *NotAbandonedError.
var ErrNotAbandoned = errors.New("kernel: the run is not an abandoned one its judge may close")

// NotAbandonedError is CloseAbandoned's refusal: the run is not an exact
// run whose lease lapsed before it recorded an end, or another judges
// it. Nothing was written. errors.Is(err, ErrNotAbandoned) matches it.
type NotAbandonedError struct {
	RunID string
	// Status is the run's status as readers see it.
	Status store.Status
	// Why says what stands in the way.
	Why string
}

func (e *NotAbandonedError) Error() string {
	return fmt.Sprintf("kernel: run %s (%s) is not closed as abandoned: %s", e.RunID, e.Status, e.Why)
}

// Is makes errors.Is(err, ErrNotAbandoned) match.
func (e *NotAbandonedError) Is(target error) bool { return target == ErrNotAbandoned }

// CloseAbandoned records the end of exact run runID whose holder
// stopped before it ended: a run that reads interrupted because its
// lease lapsed (store.Effective) while its record holds no end. Only
// the run's judge may close it (judgedBy must be the record's JudgedBy,
// Request.JudgedBy), so a run is never closed by someone who does not
// decide its outcome.
//
// The close takes the lapsed lease over as the store's rules allow: in
// one compare-and-set (store.UpdateRun) that holds only while the lease
// is still the lapsed one (a holder that renewed in between changes the
// run's revision, and the write is refused and the run read again), it
// raises the lease generation (so the old holder's fence is superseded),
// names this process as the owner, and records the run interrupted for
// good with the terminal reason ReasonAbandoned and detail, its lease
// cleared as every recorded end clears it. A lapsed run cannot be leased
// again (it reads interrupted, which is terminal), so taking it over and
// ending it are one write. Its usage and delivery are left as the run
// recorded them: usage unknown unless its ledger holds some, never
// delivered (a judged run's delivery is its judge's). A run that is
// already ended, still leased, of another kind, or judged by another is
// a *NotAbandonedError and nothing is written.
func CloseAbandoned(ctx context.Context, s store.Store, runID, judgedBy, detail string) (store.Run, error) {
	if judgedBy == "" {
		return store.Run{}, fmt.Errorf("%w: CloseAbandoned needs the run's judge", ErrInvalidOptions)
	}
	me := owner()
	closed, err := s.UpdateRun(ctx, runID, func(r *store.Run) error {
		refuse := func(why string) error { return &NotAbandonedError{RunID: r.ID, Status: r.Status, Why: why} }
		switch {
		case !IsExactKind(r.Kind):
			return refuse("it is a " + r.Kind + " run, not an exact run")
		case r.Status != store.StatusInterrupted:
			return refuse("only a run whose holder's lease lapsed is closed")
		case r.LeaseUntil.IsZero():
			return refuse("its end is recorded")
		}
		rec, err := DecodeRecord(r.Doc)
		switch {
		case err != nil:
			return refuse(err.Error())
		case rec.Terminal != nil:
			return refuse("its end is recorded")
		case rec.JudgedBy != judgedBy:
			return refuse(fmt.Sprintf("it is judged by %q, not by %q", rec.JudgedBy, judgedBy))
		}
		r.Generation++
		r.Owner = me
		r.Status, r.LeaseUntil = store.StatusInterrupted, time.Time{}
		r.Doc = r.Doc.With("terminal", terminalValue(store.StatusInterrupted, ReasonAbandoned, detail))
		return nil
	})
	if err != nil {
		return store.Run{}, fmt.Errorf("kernel: closing abandoned run %s: %w", runID, err)
	}
	return closed, nil
}
