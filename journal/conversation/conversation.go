package conversation

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"time"

	"golang.org/x/text/unicode/norm"
)

// Journal is the durable transcript of conversation runs: the runtime
// spec's ConversationJournal. Implementations are safe for concurrent use.
type Journal interface {
	// LoadRun returns what is recorded for runID, or nil (and no error)
	// when the run was never begun. The entry is the caller's to keep.
	LoadRun(ctx context.Context, runID string) (*Entry, error)
	// BeginRun records the run's start. Beginning a run again with the
	// same start time is a no-op; with another it fails with ErrConflict.
	BeginRun(ctx context.Context, runID string, startedAt time.Time) error
	// AppendTurn records a committed turn, which must be the run's next
	// (see the package doc for the rules and their errors).
	AppendTurn(ctx context.Context, runID string, t Turn) error
	// RecordHalt records why and when the run ended. After it the run
	// takes no more turns.
	RecordHalt(ctx context.Context, runID string, h Halt, endedAt time.Time) error
}

// Entry is what a journal holds for one run.
type Entry struct {
	// RunID names the run.
	RunID string
	// StartedAt is when the run began.
	StartedAt time.Time
	// Halt is why the run ended; nil while it has not.
	Halt *Halt
	// EndedAt is when the run ended; zero while it has not.
	EndedAt time.Time
	// Turns are the committed turns, in index order (Turns[i].Index == i).
	Turns []Turn
}

// NextIndex is the index of the run's first unrecorded turn, where a
// resumed run continues.
func (e *Entry) NextIndex() int {
	if e == nil {
		return 0
	}
	return len(e.Turns)
}

// Turn is one committed turn of a conversation.
type Turn struct {
	// Index is the turn's 0-based position in the run.
	Index int
	// Speaker is the participant that produced the turn.
	Speaker string
	// TurnID is TurnID(runID, Index, Speaker).
	TurnID string
	// SessionID is the backend session the turn used, when known.
	SessionID string
	// Text is what the speaker said.
	Text string
	// Usage is the turn's own usage, nil when the backend reported none.
	Usage *Usage
	// Attempts is how many attempts ran before the turn committed (≥ 1).
	Attempts int
	// StartedAt and EndedAt bound the turn.
	StartedAt time.Time
	EndedAt   time.Time
}

// Usage is what one turn consumed. Each field is nil (or empty) when the
// backend did not report it: unknown is never zero.
type Usage struct {
	// TokensIn and TokensOut count input and output tokens.
	TokensIn  *int64
	TokensOut *int64
	// CostUSD is the turn's cost in US dollars.
	CostUSD *float64
	// LatencyMS is the turn's latency in milliseconds.
	LatencyMS *float64
	// Model is the model that answered.
	Model string
}

// HaltKind says why a run ended.
type HaltKind string

// The halt kinds of the reference runner.
const (
	// HaltMaxTurns: the turn limit was reached (Halt.Turns).
	HaltMaxTurns HaltKind = "max_turns"
	// HaltMaxCredits: the spend cap was reached (Halt.SpentCents, Halt.CapCents).
	HaltMaxCredits HaltKind = "max_credits"
	// HaltPredicate: the caller's halt predicate fired (Halt.Reason).
	HaltPredicate HaltKind = "predicate"
	// HaltAbort: the caller cancelled the run.
	HaltAbort HaltKind = "abort"
	// HaltParticipantError: a participant failed (Halt.Participant, Halt.Message).
	HaltParticipantError HaltKind = "participant_error"
)

// Halt is why a run ended. Which fields are set depends on Kind; the
// others must be zero.
type Halt struct {
	// Kind is one of the Halt* constants.
	Kind HaltKind
	// Turns is the number of turns run (HaltMaxTurns).
	Turns int
	// SpentCents and CapCents are the spend and its cap (HaltMaxCredits).
	SpentCents float64
	CapCents   float64
	// Reason is the predicate's reason (HaltPredicate).
	Reason string
	// Participant and Message name the failing participant and its error
	// (HaltParticipantError).
	Participant string
	Message     string
}

// TurnID is the deterministic id of a run's turn: "<runID>.t<index>.<slug>",
// where slug is SpeakerSlug(speaker). A retry of the same logical turn
// has the same id.
func TurnID(runID string, index int, speaker string) string {
	return runID + ".t" + strconv.Itoa(index) + "." + SpeakerSlug(speaker)
}

// SpeakerSlug reduces a speaker name to ASCII letters, digits, '_' and
// '-', as the reference does: compatibility decomposition (NFKD), each run
// of other characters replaced by one '-', one leading and one trailing
// '-' removed, lower-cased; "anon" if nothing is left.
func SpeakerSlug(speaker string) string {
	var b strings.Builder
	dash := false
	for _, r := range norm.NFKD.String(speaker) {
		word := r == '_' || r == '-' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9'
		switch {
		case r == '-' || !word:
			// A run of non-word characters and dashes collapses to one dash.
			dash = true
		default:
			if dash {
				b.WriteByte('-')
				dash = false
			}
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			b.WriteRune(r)
		}
	}
	s := b.String()
	// A leading dash was never written: dash is set, then flushed before
	// the first word character, so trim it; a trailing one is never
	// flushed.
	s = strings.TrimPrefix(s, "-")
	if s == "" {
		return "anon"
	}
	return s
}

// Resume loads runID and, when the journal has no such run, begins it at
// startedAt. It returns the run's entry: empty for a new run; for a
// recorded one, what was recorded (its own start time), so the caller
// continues at e.NextIndex(), or does not continue if e.Halt is set.
func Resume(ctx context.Context, j Journal, runID string, startedAt time.Time) (*Entry, error) {
	e, err := j.LoadRun(ctx, runID)
	if err != nil || e != nil {
		return e, err
	}
	// Another process resuming the same run may begin it first, with its
	// own start time: then this begin conflicts, and the run it began is
	// the one to continue.
	if err := j.BeginRun(ctx, runID, startedAt); err != nil && !errors.Is(err, ErrConflict) {
		return nil, err
	}
	e, err = j.LoadRun(ctx, runID)
	if err == nil && e == nil {
		err = &RunError{Op: "resume", RunID: runID, Err: ErrUnknownRun, Detail: "begun but not found"}
	}
	return e, err
}
