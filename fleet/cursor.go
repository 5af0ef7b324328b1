package fleet

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/store"
)

// maxCursorBytes bounds a fleet cursor: "g", a generation, "/" and a
// store cursor fit in far less.
const maxCursorBytes = 64

// Cursor is the position of a fleet run's event: the generation of the
// attempt that recorded it and the store cursor of the event in that
// attempt's kernel run. Its text form, "g<generation>/<cursor>" (such as
// g2/c0000000000000000007), is what `agentrt runs events --json` prints
// as a fleet run's event cursor and takes back with --after.
type Cursor struct {
	// Generation is the attempt's generation (Attempt.Generation).
	Generation int64
	// Event is the event's cursor in the attempt's run (store.Event.Cursor).
	Event string
}

// String is the cursor's text form.
func (c Cursor) String() string { return "g" + strconv.FormatInt(c.Generation, 10) + "/" + c.Event }

// FleetCursor is the fleet cursor of e: following after it yields the events
// after e, this attempt's then the later attempts'.
func (e Event) FleetCursor() Cursor { return Cursor{Generation: e.Generation, Event: e.Event.Cursor} }

// CursorError is a fleet cursor that cannot be read, or that names no
// attempt of the run; it wraps ErrInvalid.
type CursorError struct {
	// Cursor is the text refused (clipped when written).
	Cursor string
	// Reason says what is wrong with it.
	Reason string
}

func (e *CursorError) Error() string {
	return fmt.Sprintf("fleet: cursor %q: %s (a fleet run's cursor is g<generation>/<event cursor>, as runs events --json prints it)", clipCursor(e.Cursor), e.Reason)
}

// Unwrap makes a CursorError an ErrInvalid.
func (e *CursorError) Unwrap() error { return ErrInvalid }

func clipCursor(s string) string {
	if len(s) > maxCursorBytes {
		return s[:maxCursorBytes] + "…"
	}
	return s
}

// ParseCursor reads a fleet cursor's text form (Cursor.String). It
// refuses, with a *CursorError, anything else: a store cursor alone
// names no attempt.
func ParseCursor(s string) (Cursor, error) {
	bad := func(why string) (Cursor, error) { return Cursor{}, &CursorError{Cursor: s, Reason: why} }
	if len(s) > maxCursorBytes {
		return bad(fmt.Sprintf("longer than %d bytes", maxCursorBytes))
	}
	gen, event, ok := strings.Cut(s, "/")
	digits, hasG := strings.CutPrefix(gen, "g")
	if !ok || !hasG {
		return bad("it names no attempt")
	}
	n, err := strconv.ParseInt(digits, 10, 64)
	if err != nil || n < 1 || strconv.FormatInt(n, 10) != digits {
		return bad("the generation is not a positive integer")
	}
	if seq, err := store.ParseCursor(event); err != nil || event == "" || store.CursorFor(seq) != event {
		return bad("the event cursor is not one the store wrote")
	}
	return Cursor{Generation: n, Event: event}, nil
}
