package contract

import (
	"errors"

	"github.com/agentrt/agentrt/canonjson"
)

// ErrDestroyed is wrapped by the error of every operation on a destroyed
// environment, whichever provider made it: a turn, a session, a
// workspace read. A provider may keep its own sentinel as long as it
// wraps this one, so that errors.Is(err, ErrDestroyed) holds everywhere.
var ErrDestroyed = errors.New("the environment was destroyed")

// ErrLeaseLost is matched (errors.Is) by the cause of a context that
// ended because its process no longer holds the run it worked for: its
// lease lapsed (the process was paused past it) or another process took
// the run over, and with it, on a provider whose work outlives its
// caller (a remote server's), the run's environment and live turn. A
// provider whose turn's context ends with this cause stops reading and
// leaves the turn alone: it does not cancel it, since the turn may now
// be the new holder's.
var ErrLeaseLost = errors.New("the caller no longer holds the run's lease")

// ErrTurnGone is matched (errors.Is) by the error of re-attaching to a
// turn by id that the provider no longer holds (it ended and was
// forgotten, or its server restarted): its events and its end are gone,
// and it was not started again.
var ErrTurnGone = errors.New("the provider no longer holds the turn")

// The types of the terminal environment events the constructors below
// make, as every provider in this module spells them.
const (
	evTypeDone      = "done"
	evTypeError     = "error"
	evTypeCancelled = "execution.cancelled"
)

// CompletedEvent returns the terminal event of a turn that completed:
// type done, data status "completed" plus data's members (the turn's
// "text", its "effectiveBackend", a "result"), and a normalized status
// event completed, so that EnvironmentEventTerminal reports
// TerminalCompleted. data may be nil; otherwise it becomes the event's
// Data and is not copied. The caller sets ID when its events carry ids.
func CompletedEvent(data map[string]canonjson.Value) EnvironmentEvent {
	data = terminalData(data)
	data["status"] = canonjson.StringValue(StreamStatusCompleted)
	return terminalEvent(evTypeDone, data, StreamStatusCompleted, nil)
}

// FailedEvent returns the terminal event of a turn that failed in band
// (the provider ran it and it failed; a broken stream is an error, not
// an event): type error, data "error" message plus data's members, and a
// normalized status event failed whose detail is message, so that
// EnvironmentEventTerminal reports TerminalFailed. data is used as
// CompletedEvent uses it.
func FailedEvent(message string, data map[string]canonjson.Value) EnvironmentEvent {
	data = terminalData(data)
	data["error"] = canonjson.StringValue(message)
	return terminalEvent(evTypeError, data, StreamStatusFailed, &message)
}

// CancelledEvent returns the terminal event of a turn its caller
// cancelled: type execution.cancelled, data status "cancelled" plus
// data's members, and a normalized status event cancelled, so that
// EnvironmentEventTerminal reports TerminalCancelled (never failed).
// data is used as CompletedEvent uses it.
func CancelledEvent(data map[string]canonjson.Value) EnvironmentEvent {
	data = terminalData(data)
	data["status"] = canonjson.StringValue(StreamStatusCancelled)
	return terminalEvent(evTypeCancelled, data, StreamStatusCancelled, nil)
}

func terminalData(data map[string]canonjson.Value) map[string]canonjson.Value {
	if data == nil {
		return map[string]canonjson.Value{}
	}
	return data
}

func terminalEvent(typ string, data map[string]canonjson.Value, status string, detail *string) EnvironmentEvent {
	norm := StatusStreamEvent(status, detail)
	return EnvironmentEvent{Type: typ, Data: data, Normalized: &norm}
}
