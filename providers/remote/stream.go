package remote

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// Stream runs one turn on the server and yields its events; in.TurnID,
// when set, is the turn's id (else one is minted). A dropped
// connection is resumed with the same turn id and Last-Event-ID (bounded
// reconnects), so no event is lost or repeated. What happens to a turn
// the stream leaves before it ended is leave's rule: a caller that
// cancels (ctx ends) or stops reading cancels it on the server; a stream
// lost for good, or a caller that lost its run's lease, leaves it
// running, in doubt, for whoever settles it.
func (e *environment) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.stream(ctx, in, "")
}

// turnIDOf is the turn's id on the server: the caller's, when it gives
// one — a process that knows it re-attaches to the same turn (the
// server replays it) instead of starting another — else a new one.
func turnIDOf(in *contract.TurnInput) string {
	if in != nil && in.TurnID != nil && *in.TurnID != "" {
		return *in.TurnID
	}
	return "turn-" + randomID()
}

// stream is Stream of the turn turnID names ("": turnIDOf's, chosen
// anew each time the sequence is read).
func (e *environment) stream(ctx context.Context, in *contract.TurnInput, turnID string) iter.Seq2[contract.EnvironmentEvent, error] {
	return e.streamFrom(ctx, in, turnID, false)
}

// TurnAttacher is implemented by every environment of this provider:
// AttachTurn follows a turn by id without ever starting it.
type TurnAttacher interface {
	AttachTurn(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error]
}

// AttachTurn follows the turn in.TurnID names from its first event,
// never starting it: a server that does not hold the turn (it ended and
// was forgotten, or the server restarted) answers 410 resume_gone, which
// is yielded as the error, and runs nothing. It is how a process settling
// or taking over work in doubt re-attaches to it (fleet): starting the
// turn again would repeat work that may have happened. in.TurnID is
// required.
func (e *environment) AttachTurn(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	if in == nil || in.TurnID == nil || *in.TurnID == "" {
		return func(yield func(contract.EnvironmentEvent, error) bool) {
			yield(contract.EnvironmentEvent{}, errors.New("remote: attaching to a turn needs its id"))
		}
	}
	return e.streamFrom(ctx, in, *in.TurnID, true)
}

// streamFrom is stream; attach only follows a turn the server holds.
func (e *environment) streamFrom(ctx context.Context, in *contract.TurnInput, turnID string, attach bool) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		turnID := turnID
		if turnID == "" {
			turnID = turnIDOf(in)
		}
		if e.destroyed.Load() {
			yield(contract.EnvironmentEvent{}, fmt.Errorf("%w: %s", ErrDestroyed, e.doc.ID))
			return
		}
		var input contract.TurnInput
		if in != nil {
			input = *in
		}
		body, err := wire.Marshal(wire.TurnRequest{TurnID: turnID, Input: input})
		if err != nil {
			yield(contract.EnvironmentEvent{}, fmt.Errorf("remote: the turn input has no JSON form: %w", err))
			return
		}
		// ended: the server ended or refused the turn; lost: the stream
		// was lost for good while the turn may run on.
		ended, started, lost := false, false, false
		defer func() {
			if started && !ended {
				e.leave(ctx, turnID, lost)
			}
		}()
		var last int64
		failures := 0
		resume := attach
		for {
			started = true
			r, err := e.open(ctx, body, last, resume, input.Credential)
			if err == nil || mayHaveReached(err) {
				// The server may hold the turn now: every retry only
				// resumes it (Last-Event-ID, even 0). A server that
				// restarted meanwhile answers that it does not hold it,
				// rather than run it a second time.
				resume = true
			}
			if err == nil {
				var stop bool
				stop, ended, err = e.read(r, &last, &failures, yield)
				if stop {
					return
				}
			}
			if ctx.Err() != nil {
				yield(contract.EnvironmentEvent{}, ctx.Err())
				return
			}
			if errors.Is(err, wire.ErrSSETooLarge) {
				// Every reconnect would meet the same event: the stream
				// cannot be read past it. The turn is left to the server.
				lost = true
				yield(contract.EnvironmentEvent{}, fmt.Errorf("remote: turn %s: %w", turnID, err))
				return
			}
			var we *wire.Error
			if errors.As(err, &we) && we.Status < 500 {
				// The server refused: nothing more will come of this turn.
				ended = true
				if resume && we.Code == wire.CodeResumeGone {
					err = fmt.Errorf("remote: turn %s: %w: %w", turnID, contract.ErrTurnGone, err)
				}
				yield(contract.EnvironmentEvent{}, err)
				return
			}
			failures++
			if failures > e.p.opts.MaxRetries {
				lost = true
				yield(contract.EnvironmentEvent{}, fmt.Errorf("remote: the turn stream was lost %d times: %w", failures, err))
				return
			}
			if err := sleep(ctx, e.p.opts.RetryBackoff<<(failures-1)); err != nil {
				yield(contract.EnvironmentEvent{}, err)
				return
			}
		}
	}
}

// mayHaveReached reports whether a failed open may have reached the
// server and started the turn: anything but a connection that was never
// made, or an answer the server gave (it answered, so it did not start
// the turn silently).
func mayHaveReached(err error) bool {
	var dial *net.OpError
	if errors.As(err, &dial) && dial.Op == "dial" {
		return false
	}
	var we *wire.Error
	return !errors.As(err, &we)
}

// open starts (or resumes after last) the turn's event stream; resume
// only resumes, even from the start (Last-Event-ID 0).
func (e *environment) open(ctx context.Context, body []byte, last int64, resume bool, cred *contract.CredentialRequest) (*idleBody, error) {
	req, err := e.p.newRequest(ctx, http.MethodPost, envPath(e.doc.ID)+"/turns", body, cred)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", wire.ContentTypeSSE)
	if last > 0 || resume {
		req.Header.Set(wire.HeaderLastEventID, strconv.FormatInt(last, 10))
	}
	resp, err := e.p.openStream(req)
	if err != nil {
		return nil, fmt.Errorf("remote: opening the turn stream: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		defer resp.Body.Close()
		out, _ := io.ReadAll(io.LimitReader(resp.Body, wire.MaxBodyBytes))
		return nil, answerError(resp.StatusCode, out)
	}
	return newIdleBody(resp.Body, e.p.opts.IdleTimeout), nil
}

// read yields the events of one connection. It reports stop when the
// caller stopped or the stream ended for good (ended: the server said
// end or error), else the error that cut the connection.
func (e *environment) read(r *idleBody, last *int64, failures *int, yield func(contract.EnvironmentEvent, error) bool) (stop, ended bool, err error) {
	defer r.Close()
	sse := wire.NewSSEReader(r)
	for {
		ev, err := sse.Next()
		if err != nil {
			if err == io.EOF {
				err = io.ErrUnexpectedEOF // a stream ends only with end or error
			}
			return false, false, err
		}
		switch ev.Event {
		case "":
			seq, err := wire.ParseEventID(ev.ID)
			if err != nil {
				return true, true, yieldErr(yield, fmt.Errorf("remote: an event without a sequence id: %w", err))
			}
			if seq <= *last {
				continue
			}
			if seq != *last+1 {
				return true, true, yieldErr(yield, fmt.Errorf("remote: the turn stream skipped from event %d to %d", *last, seq))
			}
			env, err := wire.ParseEnvironmentEvent(ev.Data)
			if err != nil {
				return true, true, yieldErr(yield, fmt.Errorf("remote: event %d: %w", seq, err))
			}
			*last, *failures = seq, 0
			if !yield(*env, nil) {
				// A caller that stops at the turn's terminal event (the
				// kernel does) stopped a turn that is over: nothing to
				// cancel on the server.
				_, terminal := contract.EnvironmentEventTerminal(*env)
				return true, terminal, nil
			}
		case wire.EventEnd:
			return true, true, nil
		case wire.EventError:
			return true, true, yieldErr(yield, streamError(ev.Data))
		}
	}
}

func yieldErr(yield func(contract.EnvironmentEvent, error) bool, err error) error {
	yield(contract.EnvironmentEvent{}, err)
	return err
}

// leave is the one rule for a turn whose stream this client leaves
// before the turn ended (spec/runtime.md §5: work in doubt is settled,
// never killed or re-run by a process that merely lost sight of it):
//
//   - the caller cancelled (ctx ended) or stopped reading: the turn is
//     cancelled on the server, deliberately;
//   - the caller lost its run's lease (ctx's cause matches
//     contract.ErrLeaseLost): the turn may be the run's new holder's
//     now, and is left running;
//   - the stream was lost for good (lost: the connection broke or
//     stalled past the reconnects): the turn is in doubt, and is left
//     running. Whether it is kept for recovery (kernel.Request.KeepInDoubt,
//     fleet.Fleet.Recover) or torn down with its environment is the
//     caller's decision, not this client's.
func (e *environment) leave(ctx context.Context, turnID string, lost bool) {
	if lost || errors.Is(context.Cause(ctx), contract.ErrLeaseLost) {
		return
	}
	e.cancel(ctx, turnID)
}

// cancel asks the server to cancel the turn, within CancelTimeout and
// even when ctx has ended.
func (e *environment) cancel(ctx context.Context, turnID string) {
	_, _ = roundTrip[any](context.WithoutCancel(ctx), e.p, turnCancel(e.doc.ID, turnID, "cancel-"+turnID, e.p.opts.CancelTimeout), nil)
}

// CancelTurn cancels a turn by id and returns the server's
// acknowledgement: accepted or replayed (the same operation id again),
// with the effect cancel_requested (the turn was live) or not_live.
func (p *Provider) CancelTurn(ctx context.Context, environmentID, turnID, operationID string) (*wire.CancelAcknowledgement, error) {
	return roundTrip(ctx, p, turnCancel(environmentID, turnID, operationID, p.opts.CallTimeout), wire.ParseCancelAcknowledgement)
}

// turnCancel is the exchange that asks the server to cancel a turn under
// operationID; the operation id makes a re-send a replay.
func turnCancel(environmentID, turnID, operationID string, timeout time.Duration) exchange {
	return exchange{method: http.MethodPost, path: turnPath(environmentID, turnID) + "/cancel",
		body: wire.CancelRequest{OperationID: operationID}, what: "the cancel request", answer: "cancel acknowledgement",
		timeout: timeout, retry: true}
}

// idleBody closes its reader when no byte arrived for the idle timeout,
// so a stalled connection ends and is resumed.
type idleBody struct {
	io.ReadCloser
	timer *time.Timer
	idle  time.Duration
}

func newIdleBody(rc io.ReadCloser, idle time.Duration) *idleBody {
	return &idleBody{ReadCloser: rc, idle: idle, timer: time.AfterFunc(idle, func() { rc.Close() })}
}

func (b *idleBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.timer.Reset(b.idle)
	}
	return n, err
}

func (b *idleBody) Close() error {
	b.timer.Stop()
	return b.ReadCloser.Close()
}
