package remote

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// exchange is one JSON request to the server and its answer: where it
// goes, what it carries, within which size and time, whether a lost
// answer is re-sent, and how its errors name it. roundTrip is the one
// place a call of this package is encoded, bounded, sent, decoded and
// its failures wrapped.
type exchange struct {
	method, path string
	// body is the request's value, encoded with wire.Marshal; nil sends
	// no body.
	body any
	// what names the request in an error ("the read request").
	what string
	// answer names the answer in an error, after "the server's "
	// ("read answer").
	answer string
	// max bounds the encoded request; 0 leaves the bound to the server
	// (the answer is bounded by wire.MaxBodyBytes in every call).
	max int
	// timeout bounds the exchange, its retries included (0: CallTimeout);
	// one that passes while ctx lives is a *TimeoutError. Every exchange
	// is bounded: a long poll asks the server for a shorter wait
	// (Provider.longPoll) and is bounded by CallTimeout.
	timeout time.Duration
	// retry re-sends the same body after a lost connection or a 5xx
	// answer; false for a call that may have had its effect.
	retry bool
	// cred is a seat stage's credential request (nil: none); it travels
	// in a header, never in the body.
	cred *contract.CredentialRequest
	// refusal, when set, is what the error of a request that cannot be
	// sent (no JSON form, too large) wraps, in place of the "remote: "
	// prefix.
	refusal error
	// attempts, when set, receives the number of attempts made.
	attempts *int
}

// roundTrip sends x and decodes its 2xx answer with parse; a nil parse
// ignores the answer's body and returns the zero Resp. An error answer
// is the *wire.Error the call returned, unwrapped; a request that cannot
// be sent and an answer that does not parse are wrapped with the names x
// gives them.
func roundTrip[Resp any](ctx context.Context, p *Provider, x exchange, parse func([]byte) (Resp, error)) (Resp, error) {
	var zero Resp
	var body []byte
	if x.body != nil {
		b, err := wire.Marshal(x.body)
		if err != nil {
			return zero, x.refuse(fmt.Errorf("%s has no JSON form: %w", x.what, err))
		}
		if x.max > 0 && len(b) > x.max {
			return zero, x.refuse(fmt.Errorf("%s is larger than %d bytes", x.what, x.max))
		}
		body = b
	}
	if x.timeout <= 0 {
		x.timeout = p.opts.CallTimeout
	}
	bounded, cancel := context.WithTimeout(ctx, x.timeout)
	defer cancel()
	out, attempts, err := p.callAs(bounded, x.method, x.path, body, x.retry, x.cred)
	if x.attempts != nil {
		*x.attempts = attempts
	}
	if err != nil {
		var we *wire.Error
		if ctx.Err() == nil && bounded.Err() != nil && !errors.As(err, &we) {
			// The exchange's own bound passed, not the caller's.
			return zero, &TimeoutError{Method: x.method, Path: x.path, After: x.timeout, Last: err}
		}
		return zero, err
	}
	if parse == nil {
		return zero, nil
	}
	res, err := parse(out)
	if err != nil {
		return zero, fmt.Errorf("remote: the server's %s: %w", x.answer, err)
	}
	return res, nil
}

// refuse is the error of a request x cannot send.
func (x *exchange) refuse(err error) error {
	if x.refusal != nil {
		return fmt.Errorf("%w: %w", x.refusal, err)
	}
	return fmt.Errorf("remote: %w", err)
}
