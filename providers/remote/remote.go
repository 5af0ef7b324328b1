package remote

import (
	"bytes"
	"context"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/ctxsleep"
)

// Defaults of Options.
const (
	DefaultMaxRetries    = 4
	DefaultRetryBackoff  = 100 * time.Millisecond
	DefaultCallTimeout   = 30 * time.Second
	DefaultCreateTimeout = 5 * time.Minute
	DefaultIdleTimeout   = 60 * time.Second
	DefaultCancelTimeout = 5 * time.Second
	DefaultPromptTimeout = 30 * time.Minute
	DefaultExecTimeout   = 10 * time.Minute
)

// Options configure a Provider.
type Options struct {
	// BaseURL is the server's address, such as http://127.0.0.1:8080.
	BaseURL string
	// Token is the server's bearer token ("" sends none).
	Token string
	// HTTPClient sends the requests; nil uses a client without an overall
	// timeout (streams are long), bounded per call instead. Its Timeout,
	// if set, must outlast a whole turn.
	HTTPClient *http.Client
	// RootCAs, when set, are the certificate authorities an https server's
	// certificate must chain to, instead of the system's roots (an agentrt
	// serve with a self-signed or private CA's certificate). It applies to
	// the client New makes: giving it with HTTPClient is refused.
	RootCAs *x509.CertPool
	// MaxRetries bounds the retries of one call after a lost connection
	// or a 5xx answer; a stream's reconnects are bounded by it too.
	MaxRetries int
	// RetryBackoff is the first retry's delay, doubled per retry.
	RetryBackoff time.Duration
	// CallTimeout bounds every call but create and a turn stream; one
	// ask of a long poll (an exact process's wait or output, a session's
	// result) asks the server to wait at most half of it, the other half
	// being the grace for the answer to arrive.
	CallTimeout time.Duration
	// CreateTimeout bounds one create, retries included.
	CreateTimeout time.Duration
	// IdleTimeout drops a stream connection that delivered nothing (not
	// even a keep-alive, nor at its open the answer's headers) for this
	// long, and reconnects: a paused or black-holed server costs a
	// stream its bounded reconnects, never a hang.
	IdleTimeout time.Duration
	// CancelTimeout bounds the cancel sent when a stream's context ends
	// before its turn did.
	CancelTimeout time.Duration
	// PromptTimeout bounds one session prompt (a whole turn).
	PromptTimeout time.Duration
	// ExecTimeout bounds one workspace command (a command with a sooner
	// timeoutMs of its own is bounded by that plus wire.ExecGraceMs).
	ExecTimeout time.Duration
	// Logger receives the client's warnings (a served turn's native
	// session that could not be read); nil uses slog.Default().
	Logger *slog.Logger
}

// Provider is a contract.Provider served by a sidecar.
type Provider struct {
	opts   Options
	base   *url.URL
	client *http.Client

	// exposed: this Provider is the one Exposed returned, which offers
	// the provider abilities (profile.validation) the server serves.
	exposed bool

	mu   sync.Mutex
	name string
	caps *contract.Capabilities // the server's document, once read

	// nativeRouteMissing: a turn's native session was answered 404 (an
	// older server), which is warned about once.
	nativeRouteMissing atomic.Bool
}

var _ contract.EnvironmentGetter = (*Provider)(nil)

// New returns a Provider for the server at opts.BaseURL. It does not
// connect; the first call does.
func New(opts Options) (*Provider, error) {
	u, err := url.Parse(opts.BaseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.User != nil || u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("remote: base URL %q must be an http(s) URL with a host and no credentials, query or fragment", redact(opts.BaseURL))
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	if opts.MaxRetries <= 0 {
		opts.MaxRetries = DefaultMaxRetries
	}
	if opts.RetryBackoff <= 0 {
		opts.RetryBackoff = DefaultRetryBackoff
	}
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.CreateTimeout <= 0 {
		opts.CreateTimeout = DefaultCreateTimeout
	}
	if opts.IdleTimeout <= 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.CancelTimeout <= 0 {
		opts.CancelTimeout = DefaultCancelTimeout
	}
	if opts.PromptTimeout <= 0 {
		opts.PromptTimeout = DefaultPromptTimeout
	}
	if opts.ExecTimeout <= 0 {
		opts.ExecTimeout = DefaultExecTimeout
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	client := opts.HTTPClient
	switch {
	case client != nil && opts.RootCAs != nil:
		return nil, errors.New("remote: RootCAs applies to the client New makes; set it in HTTPClient's transport instead")
	case opts.RootCAs != nil:
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = &tls.Config{RootCAs: opts.RootCAs, MinVersion: tls.VersionTLS12}
		client = &http.Client{Transport: tr}
	case client == nil:
		client = &http.Client{}
	}
	return &Provider{opts: opts, base: u, client: client}, nil
}

func redact(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(unparsable)"
	}
	return u.Redacted()
}

// Name is the served provider's name, read from the server once; before
// the server answered it is "remote".
func (p *Provider) Name() string {
	p.mu.Lock()
	name := p.name
	p.mu.Unlock()
	if name != "" {
		return name
	}
	ctx, cancel := context.WithTimeout(context.Background(), p.opts.CallTimeout)
	defer cancel()
	if _, err := p.Capabilities(ctx); err != nil {
		return "remote"
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.name
}

// Capabilities reads the server's document: what the server serves of
// its provider, which is what this client implements. A Provider from
// New, whose type is fixed before it read the document, declares no
// provider ability (profile.validation); the one Exposed returns declares
// and offers what the server serves.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	doc, err := roundTrip(ctx, p, exchange{method: http.MethodGet, path: wire.PathCapabilities,
		answer: "capability document", timeout: p.opts.CallTimeout, retry: true}, wire.ParseCapabilities)
	if err != nil {
		return nil, err
	}
	served := wire.Served(&doc.Capabilities)
	if !p.exposed {
		served.Profile.Validation = false
	}
	p.mu.Lock()
	p.name = doc.Provider
	kept := served
	p.caps = &kept
	p.mu.Unlock()
	return &served, nil
}

// Create creates an environment on the server. Every create is keyed
// (with the caller's key, or one minted for this call), so a create whose
// answer was lost is re-sent with the same key and the server replays it.
// A replay after such a loss reports the creation unknown for a caller's
// key (an earlier call of the caller may have made it) and created for a
// minted one.
func (p *Provider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if in == nil {
		return nil, fmt.Errorf("%w: nil input", contract.ErrCreateInput)
	}
	req := *in
	minted := req.IdempotencyKey == nil
	if minted {
		key := "remote-" + randomID()
		req.IdempotencyKey = &key
	}
	var attempts int
	res, err := roundTrip(ctx, p, exchange{method: http.MethodPost, path: wire.PathEnvironments,
		body: &req, what: "the create request", answer: "create result", max: wire.MaxProfileBodyBytes,
		timeout: p.opts.CreateTimeout, retry: true, cred: in.Credential,
		refusal: contract.ErrCreateInput, attempts: &attempts}, wire.ParseCreateResult)
	if err != nil {
		return nil, err
	}
	creation := res.Creation
	if attempts > 1 && creation == contract.CreationReplayed {
		creation = ""
		if minted {
			creation = contract.CreationCreated
		}
	}
	return p.expose(ctx, &environment{p: p, doc: res.Environment, creation: creation})
}

// Get finds an environment by id; (nil, nil) when the server knows none.
func (p *Provider) Get(ctx context.Context, id string) (contract.Environment, error) {
	doc, err := p.get(ctx, id)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return p.expose(ctx, &environment{p: p, doc: *doc})
}

func (p *Provider) get(ctx context.Context, id string) (*wire.Environment, error) {
	return roundTrip(ctx, p, exchange{method: http.MethodGet, path: envPath(id),
		answer: "environment", timeout: p.opts.CallTimeout, retry: true}, wire.ParseEnvironment)
}

func envPath(id string) string { return wire.PathEnvironments + "/" + url.PathEscape(id) }

// turnPath is the path of turn turnID of environment environmentID,
// each escaped: an id with a "/" or "?" names that turn, not another
// route.
func turnPath(environmentID, turnID string) string {
	return envPath(environmentID) + "/turns/" + url.PathEscape(turnID)
}

func randomID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

// newRequest builds one request; cred, when set, travels in
// wire.HeaderCredentialRequest (never in the body, never logged).
func (p *Provider) newRequest(ctx context.Context, method, path string, body []byte, cred *contract.CredentialRequest) (*http.Request, error) {
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, p.base.String()+path, r)
	if err != nil {
		return nil, err
	}
	if body != nil {
		req.Header.Set("Content-Type", wire.ContentTypeJSON)
	}
	if p.opts.Token != "" {
		req.Header.Set("Authorization", "Bearer "+p.opts.Token)
	}
	if err := wire.SetCredentialRequest(req.Header, cred); err != nil {
		return nil, fmt.Errorf("remote: the credential request: %w", err)
	}
	// The caller's trace context, when ctx carries one (a traced run),
	// travels on as W3C traceparent so the server's spans join its trace.
	propagation.TraceContext{}.Inject(ctx, propagation.HeaderCarrier(req.Header))
	return req, nil
}

// callAs sends one request and reads its answer within
// wire.MaxBodyBytes; cred is a seat stage's credential request (nil:
// none). With retry, a lost connection or a 5xx answer is retried
// (bounded, with backoff) with the same body. It returns the body of a
// 2xx answer, the number of attempts made, or the error: a *wire.Error
// for an error answer. Its caller (roundTrip) bounds ctx.
func (p *Provider) callAs(ctx context.Context, method, path string, body []byte, retry bool, cred *contract.CredentialRequest) ([]byte, int, error) {
	var last error
	for attempt := 1; ; attempt++ {
		out, err := p.once(ctx, method, path, body, cred)
		if err == nil {
			return out, attempt, nil
		}
		var we *wire.Error
		transient := !errors.As(err, &we) || we.Status >= 500
		if !retry || !transient || attempt > p.opts.MaxRetries || ctx.Err() != nil {
			if last != nil && ctx.Err() != nil {
				return nil, attempt, fmt.Errorf("%w (after %v)", ctx.Err(), last)
			}
			return nil, attempt, err
		}
		last = err
		if err := sleep(ctx, p.opts.RetryBackoff<<(attempt-1)); err != nil {
			return nil, attempt, err
		}
	}
}

func (p *Provider) once(ctx context.Context, method, path string, body []byte, cred *contract.CredentialRequest) ([]byte, error) {
	req, err := p.newRequest(ctx, method, path, body, cred)
	if err != nil {
		return nil, err
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("remote: %s %s: %w", method, path, err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, wire.MaxBodyBytes+1))
	if err != nil {
		return nil, fmt.Errorf("remote: %s %s: reading the answer: %w", method, path, err)
	}
	if len(out) > wire.MaxBodyBytes {
		return nil, &wire.Error{Status: resp.StatusCode, ErrorDetail: wire.ErrorDetail{Code: wire.CodeTooLarge, Message: "the server's answer is larger than the limit"}}
	}
	if resp.StatusCode/100 != 2 {
		return nil, answerError(resp.StatusCode, out)
	}
	return out, nil
}

// TimeoutError reports a request the server did not answer within
// After: no response headers (a stream's open), or no whole answer (a
// call, its retries included). The server may be paused, overloaded or
// cut off by a black hole; the request may have reached it, so its
// outcome is unknown. A stream counts it as one lost connection among its
// bounded reconnects. It matches context.DeadlineExceeded.
type TimeoutError struct {
	// Method and Path name the request.
	Method, Path string
	// After is the bound that passed.
	After time.Duration
	// Last is the error of the last attempt, when one failed otherwise
	// first (nil: none).
	Last error
}

func (e *TimeoutError) Error() string {
	msg := fmt.Sprintf("remote: %s %s: the server did not answer within %v; the outcome is unknown", e.Method, e.Path, e.After)
	if e.Last != nil {
		msg += " (after " + e.Last.Error() + ")"
	}
	return msg
}

// Unwrap makes a TimeoutError match context.DeadlineExceeded.
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// openStream sends req, a stream's open, and returns its answer once the
// answer's headers arrived within IdleTimeout; the body is then bounded
// by its reader (idleBody) alone, and closing it releases the request. A
// server that sent no headers in time is a *TimeoutError; the caller's
// own cancellation stays its error.
func (p *Provider) openStream(req *http.Request) (*http.Response, error) {
	parent := req.Context()
	ctx, cancel := context.WithCancel(parent)
	timer := time.AfterFunc(p.opts.IdleTimeout, cancel)
	resp, err := p.client.Do(req.WithContext(ctx))
	if !timer.Stop() && parent.Err() == nil {
		// The deadline passed first (an answer that arrived just as it
		// did is dropped too: the stream reconnects).
		if err == nil {
			resp.Body.Close()
		}
		cancel()
		return nil, &TimeoutError{Method: req.Method, Path: req.URL.Path, After: p.opts.IdleTimeout}
	}
	if err != nil {
		cancel()
		return nil, err
	}
	resp.Body = &releasingBody{ReadCloser: resp.Body, release: cancel}
	return resp, nil
}

// releasingBody releases its request's context when closed.
type releasingBody struct {
	io.ReadCloser
	release context.CancelFunc
}

func (b *releasingBody) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

// longPoll is how long one ask of a long poll asks the server to wait
// (a half CallTimeout, within wire.MaxResultWaitMs), in milliseconds;
// the ask itself is bounded by CallTimeout, the other half being the
// answer's grace.
func (p *Provider) longPoll() int64 {
	return min(p.opts.CallTimeout/2, wire.MaxResultWaitMs*time.Millisecond).Milliseconds()
}

// pollPacer paces the asks of one long poll. An ask the server answered
// with nothing at once — sooner than RetryBackoff, so it ignored the
// wait it was asked for — is followed by a pause, RetryBackoff first,
// doubling per such ask in a row up to the wait itself, so that such a
// server is asked about once per wait rather than in a hot loop. An ask
// the server held (for the wait, or for a shorter bound of its own, as
// an agentrt serve with a shorter ResultWait does) is followed by the
// next at once: its answer is not late for the pacing.
type pollPacer struct {
	first, wait, next time.Duration
}

// pacer returns the pacer of one long poll of p.
func (p *Provider) pacer() *pollPacer {
	wait := time.Duration(p.longPoll()) * time.Millisecond
	return &pollPacer{first: min(p.opts.RetryBackoff, wait), wait: wait}
}

// pause follows an ask sent at asked that was answered with nothing: it
// waits as the pacer says, or until ctx ends (its error).
func (pc *pollPacer) pause(ctx context.Context, asked time.Time) error {
	if time.Since(asked) >= pc.first {
		pc.next = 0
		return ctx.Err()
	}
	if pc.next == 0 {
		pc.next = pc.first
	} else {
		pc.next = min(2*pc.next, pc.wait)
	}
	return sleep(ctx, pc.next)
}

// answerError is the error an error answer carries.
func answerError(status int, body []byte) error {
	e := &wire.Error{Status: status}
	if eb, err := wire.ParseErrorBody(body); err == nil {
		e.ErrorDetail = eb.Error
	} else {
		e.Code, e.Message = wire.CodeInternal, fmt.Sprintf("HTTP %d without an error body", status)
	}
	return e
}

// sleep waits d, or returns ctx's error once it ends.
func sleep(ctx context.Context, d time.Duration) error {
	if !ctxsleep.Sleep(ctx, d) {
		return ctx.Err()
	}
	return nil
}

// environment is one environment on the server.
type environment struct {
	p        *Provider
	doc      wire.Environment
	creation contract.Creation
	// destroyed: this handle's Destroy succeeded; its turns are refused
	// without asking the server, which no longer knows the environment.
	destroyed atomic.Bool
}

// ErrDestroyed is wrapped by the error of a turn on an environment
// this handle destroyed. It wraps contract.ErrDestroyed.
var ErrDestroyed = fmt.Errorf("remote: %w", contract.ErrDestroyed)

func (e *environment) ID() string                  { return e.doc.ID }
func (e *environment) Provider() string            { return e.doc.Provider }
func (e *environment) Name() string                { return e.doc.Name }
func (e *environment) Creation() contract.Creation { return e.creation }

func (e *environment) Metadata() map[string]canonjson.Value {
	if e.doc.Metadata == nil {
		return nil
	}
	out := make(map[string]canonjson.Value, len(e.doc.Metadata))
	for k, v := range e.doc.Metadata {
		out[k] = v
	}
	return out
}

func (e *environment) Capabilities() *contract.Capabilities {
	if e.doc.Capabilities == nil {
		return nil
	}
	c := wire.Served(e.doc.Capabilities)
	return &c
}

// Status asks the server; an environment it no longer knows is an error.
func (e *environment) Status(ctx context.Context) (contract.EnvironmentStatus, error) {
	doc, err := e.p.get(ctx, e.doc.ID)
	if err != nil {
		return contract.EnvironmentUnknown, err
	}
	if doc.Status == "" {
		return contract.EnvironmentUnknown, nil
	}
	return doc.Status, nil
}

// Destroy destroys the environment. A retried destroy whose first answer
// was lost finds the environment gone, which is success.
func (e *environment) Destroy(ctx context.Context) error {
	var attempts int
	_, err := roundTrip[any](ctx, e.p, exchange{method: http.MethodDelete, path: envPath(e.doc.ID),
		timeout: e.p.opts.CallTimeout, retry: true, attempts: &attempts}, nil)
	if attempts > 1 && errors.Is(err, wire.ErrNotFound) {
		err = nil
	}
	if err == nil {
		e.destroyed.Store(true)
	}
	return err
}
