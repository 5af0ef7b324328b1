package sidecar

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/store"
)

// MaxOperations bounds the legacy checkpoints and the legacy forks whose
// outcome the server keeps for a re-sent operation id (each).
const MaxOperations = 4096

// Defaults of Options.
const (
	DefaultMaxTurnEvents  = 16384
	DefaultMaxTurns       = 1024
	DefaultAbandonAfter   = 2 * time.Minute
	DefaultRetainFinished = 5 * time.Minute
	DefaultKeepAlive      = 15 * time.Second
	DefaultCreateTimeout  = 5 * time.Minute
	DefaultCallTimeout    = 30 * time.Second
	DefaultResultWait     = 20 * time.Second
	DefaultPromptTimeout  = 30 * time.Minute
	DefaultExecTimeout    = 10 * time.Minute
)

// Options configure a Server. The zero value serves without
// authentication (the caller must then listen on loopback only), keeps
// keyed creates in memory and logs nothing.
type Options struct {
	// Token, when set, is the bearer token every /v1 request must carry.
	Token string
	// Store, when set, records keyed creates and exact spawns durably: a
	// server restarted on the same store replays a retried create instead
	// of making a second environment, and answers a re-sent spawn with
	// the process the first one started (or spawn_in_doubt), never a
	// second process.
	Store store.Store
	// RecordRetention is how long the Store keeps a keyed create's or an
	// exact spawn's records after the key's first use (ExpireRecords);
	// a re-send after it runs as a new operation. Zero is
	// DefaultRecordRetention, negative keeps them forever; a positive
	// one must exceed CreateTimeout, so no operation in flight expires.
	RecordRetention time.Duration
	// MaxRecords bounds, apart from RecordRetention, how many keyed
	// creates and how many exact environments' incarnations the Store
	// keeps records of: beyond it the oldest are deleted first
	// (ExpireBeyond), never those of an environment the provider still
	// holds. Zero is DefaultMaxRecords, negative has no bound.
	MaxRecords int
	// Logger receives one line per request (method, route, status,
	// duration); nil logs nothing.
	Logger *slog.Logger
	// MaxBodyBytes bounds request bodies (default and ceiling
	// wire.MaxBodyBytes).
	MaxBodyBytes int64
	// MaxProfileBodyBytes bounds the bodies that carry a whole profile
	// (create, profile validation) (default and ceiling
	// wire.MaxProfileBodyBytes).
	MaxProfileBodyBytes int64
	// MaxTurnEvents bounds the events a turn keeps for resumption; older
	// ones are dropped and a resume before them is refused (410).
	MaxTurnEvents int
	// MaxTurns bounds the turns kept (live or recently ended).
	MaxTurns int
	// AbandonAfter cancels a live turn nobody has read for this long.
	AbandonAfter time.Duration
	// RetainFinished is how long an ended turn stays resumable.
	RetainFinished time.Duration
	// KeepAlive is the interval of SSE comment frames on an idle stream.
	KeepAlive time.Duration
	// CreateTimeout bounds one provider create; it runs on even when the
	// client that asked goes away, so its retry can replay it.
	CreateTimeout time.Duration
	// CallTimeout bounds every other provider call (status, destroy,
	// capabilities, session calls), and each call to Store: a store
	// that stops answering makes a keyed create or spawn answer 503
	// unavailable (retry with the same key), never hang.
	CallTimeout time.Duration
	// ResultWait bounds how long one session result call waits for its
	// run to end before answering pending (the client asks again).
	ResultWait time.Duration
	// PromptTimeout bounds one session prompt (a whole turn).
	PromptTimeout time.Duration
	// ExecTimeout bounds one workspace command; a command with a sooner
	// timeoutMs of its own is bounded by that plus wire.ExecGraceMs.
	ExecTimeout time.Duration
}

func (o *Options) defaults() {
	if o.MaxBodyBytes <= 0 || o.MaxBodyBytes > wire.MaxBodyBytes {
		o.MaxBodyBytes = wire.MaxBodyBytes
	}
	if o.MaxProfileBodyBytes <= 0 || o.MaxProfileBodyBytes > wire.MaxProfileBodyBytes {
		o.MaxProfileBodyBytes = wire.MaxProfileBodyBytes
	}
	if o.MaxTurnEvents <= 0 {
		o.MaxTurnEvents = DefaultMaxTurnEvents
	}
	if o.MaxTurns <= 0 {
		o.MaxTurns = DefaultMaxTurns
	}
	if o.AbandonAfter <= 0 {
		o.AbandonAfter = DefaultAbandonAfter
	}
	if o.RetainFinished <= 0 {
		o.RetainFinished = DefaultRetainFinished
	}
	if o.KeepAlive <= 0 {
		o.KeepAlive = DefaultKeepAlive
	}
	if o.CreateTimeout <= 0 {
		o.CreateTimeout = DefaultCreateTimeout
	}
	if o.CallTimeout <= 0 {
		o.CallTimeout = DefaultCallTimeout
	}
	if o.ResultWait <= 0 {
		o.ResultWait = DefaultResultWait
	}
	if o.PromptTimeout <= 0 {
		o.PromptTimeout = DefaultPromptTimeout
	}
	if o.RecordRetention == 0 {
		o.RecordRetention = DefaultRecordRetention
	}
	if o.MaxRecords == 0 {
		o.MaxRecords = DefaultMaxRecords
	}
	if o.ExecTimeout <= 0 {
		o.ExecTimeout = DefaultExecTimeout
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
}

// Server is the provider contract over HTTP. It is an http.Handler.
type Server struct {
	p     contract.Provider
	opts  Options
	token [sha256.Size]byte
	mux   *http.ServeMux

	// base is the context of every turn and create; Close cancels it.
	base    context.Context
	stop    context.CancelFunc
	closing chan struct{}
	once    sync.Once

	keyed contract.KeyedCreate[createOutcome]
	// checkpoints and forks hold the outcome of each legacy checkpoint
	// and fork by environment and operation id, so a re-send is answered
	// with it (in memory, the last MaxOperations of each).
	checkpoints contract.KeyedOperation[*contract.CheckpointRef]
	forks       contract.KeyedOperation[wire.Environment]
	// spawns coalesce concurrent exact spawns of one environment and
	// operation id and hold the pid each started (in memory, the last
	// MaxOperations); with a Store the pid is also recorded there
	// (durableSpawn), so a restarted server answers a re-sent spawn too.
	spawns contract.KeyedOperation[int64]

	// routes holds, per path pattern, the handler of each method it
	// answers, until mount registers them.
	routes map[string]map[string]http.HandlerFunc

	// cursors follow the output streams being read (exactOutput).
	cmu     sync.Mutex
	cursors map[cursorKey]*outputCursor

	mu    sync.Mutex
	envs  map[string]contract.Environment
	turns map[turnKey]*turn

	// quiescing is set by Quiesce: new work is refused from then on.
	quiescing atomic.Bool
	// inflight counts the requests being served but health checks and
	// refusals of new work.
	inflight atomic.Int64
	// detached are the runs this server dispatched (trackDetached), the
	// ones Quiesce waits for besides turns.
	dmu         sync.Mutex
	detached    []detachedRun
	detachedSeq uint64
}

// New returns a Server for p.
func New(p contract.Provider, opts Options) (*Server, error) {
	if p == nil {
		return nil, errors.New("sidecar: no provider")
	}
	opts.defaults()
	if opts.RecordRetention > 0 && opts.RecordRetention <= opts.CreateTimeout {
		return nil, fmt.Errorf("sidecar: the record retention %v must exceed the create timeout %v, or an operation in flight could expire", opts.RecordRetention, opts.CreateTimeout)
	}
	s := &Server{p: p, opts: opts, mux: http.NewServeMux(), closing: make(chan struct{}),
		envs: map[string]contract.Environment{}, turns: map[turnKey]*turn{},
		routes: map[string]map[string]http.HandlerFunc{}, cursors: map[cursorKey]*outputCursor{}}
	s.checkpoints.Max, s.forks.Max, s.spawns.Max = MaxOperations, MaxOperations, MaxOperations
	s.base, s.stop = context.WithCancel(context.Background())
	if opts.Token != "" {
		s.token = sha256.Sum256([]byte(opts.Token))
	}
	s.handle(http.MethodGet, wire.PathHealth, s.health)
	s.handle(http.MethodGet, wire.PathCapabilities, s.capabilities)
	s.handle(http.MethodPost, wire.PathEnvironments, s.create)
	s.handle(http.MethodGet, wire.RouteEnvironment, s.getEnvironment)
	s.handle(http.MethodDelete, wire.RouteEnvironment, s.destroyEnvironment)
	s.handle(http.MethodPost, wire.RouteTurns, s.startTurn)
	s.handle(http.MethodGet, wire.RouteTurnEvents, s.resumeTurn)
	s.handle(http.MethodPost, wire.RouteTurnCancel, s.cancelTurn)
	s.handle(http.MethodGet, wire.RouteTurnNativeSession, s.nativeSession)
	s.handle(http.MethodPost, wire.RouteInteractions, s.respond)
	s.handle(http.MethodGet, wire.RouteObservation, s.observe)
	s.handle(http.MethodGet, wire.PathEffects, s.effects)
	post := func(route string, h http.HandlerFunc) { s.handle(http.MethodPost, route, h) }
	post(wire.RouteDispatch, s.dispatch)
	post(wire.RouteSession, s.openRoute)
	post(wire.RouteSessionStatus, s.sessionStatus)
	post(wire.RouteSessionEvents, s.sessionEvents)
	post(wire.RouteSessionResult, s.sessionResult)
	post(wire.RouteSessionPrompt, s.sessionPrompt)
	post(wire.RouteSessionCancel, s.sessionCancel)
	post(wire.RouteSessionCancelRun, s.sessionCancelRun)
	post(wire.RouteSessionInteractions, s.sessionRespond)
	post(wire.RouteSessionBoundary, s.sessionBoundary)
	post(wire.RouteSessionContinue, s.sessionContinue)
	post(wire.RouteSessionNativeSession, s.sessionNativeSession)
	post(wire.RouteWorkspaceRead, s.readFile)
	post(wire.RouteWorkspaceWrite, s.writeFile)
	post(wire.RouteWorkspaceExec, s.exec)
	post(wire.PathProfileValidation, s.validateProfile)
	post(wire.RouteCheckpoint, s.checkpoint)
	post(wire.RouteFork, s.fork)
	s.routeBranching(post)
	post(wire.PathContextTransfer, s.transferContext)
	post(wire.PathContextTransferLookup, s.lookupContextTransfer)
	s.routeExact()
	s.mount()
	if opts.Store != nil && (opts.RecordRetention > 0 || opts.MaxRecords > 0) {
		go s.sweepRecords()
	}
	return s, nil
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	rec := &statusWriter{ResponseWriter: w}
	s.mux.ServeHTTP(rec, r)
	pattern := r.Pattern
	if pattern == "" {
		pattern = "(none)"
	}
	s.opts.Logger.LogAttrs(r.Context(), slog.LevelInfo, "request",
		slog.String("method", r.Method), slog.String("route", pattern),
		slog.Int("status", rec.status), slog.Duration("duration", time.Since(start)))
}

// Drain ends every open event stream without its end frame (a client
// sees a cut stream) so that http.Server.Shutdown need not wait for
// them. Register it with http.Server.RegisterOnShutdown.
func (s *Server) Drain() { s.once.Do(func() { close(s.closing) }) }

// Close drains the streams and cancels every live turn and create.
func (s *Server) Close() error {
	s.Drain()
	s.stop()
	return nil
}

// statusWriter records the status a handler wrote; Unwrap lets
// http.ResponseController reach the real writer (Flush for SSE).
type statusWriter struct {
	http.ResponseWriter
	status int
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// auth refuses a request without the bearer token: 401, no detail.
func (s *Server) auth(next http.HandlerFunc) http.HandlerFunc {
	if s.opts.Token == "" {
		return next
	}
	return func(w http.ResponseWriter, r *http.Request) {
		// The scheme is case-insensitive (RFC 9110 §11.1).
		scheme, got, ok := strings.Cut(r.Header.Get("Authorization"), " ")
		ok = ok && strings.EqualFold(scheme, "Bearer")
		sum := sha256.Sum256([]byte(got))
		if subtle.ConstantTimeCompare(sum[:], s.token[:]) != 1 || !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeError(w, wire.ErrorDetail{Code: wire.CodeUnauthorized, Message: "unauthorized"})
			return
		}
		next(w, r)
	}
}

// handle routes method on path to h. Every path is registered in the
// mux without a method (mount), so that a request with a method the path
// does not answer reaches the path's own refusal, not the catch-all's
// not_found nor net/http's plain-text 405.
func (s *Server) handle(method, path string, h http.HandlerFunc) {
	if s.routes[path] == nil {
		s.routes[path] = map[string]http.HandlerFunc{}
	}
	s.routes[path][method] = h
}

// mount registers every route of handle, each behind the bearer token
// but health, and the catch-all: an unknown path is not_found, a known
// path asked with another method is method_not_allowed with an Allow
// header naming the methods it answers (RFC 9110 §15.5.6), both as the
// wire's JSON refusal.
func (s *Server) mount() {
	for path, byMethod := range s.routes {
		allowed := slices.Sorted(maps.Keys(byMethod))
		allow := strings.Join(allowed, ", ")
		h := func(w http.ResponseWriter, r *http.Request) {
			if next, ok := byMethod[r.Method]; ok {
				if startsWork[r.Method+" "+path] && s.refusingNew(w) {
					return
				}
				if path != wire.PathHealth {
					// What Quiesce waits for: a request it serves, not a
					// probe nor a refusal.
					s.inflight.Add(1)
					defer s.inflight.Add(-1)
				}
				next(w, r)
				return
			}
			w.Header().Set("Allow", allow)
			writeError(w, wire.ErrorDetail{Code: wire.CodeMethodNotAllowed, Message: r.Method + " is not allowed here; use " + strings.Join(allowed, " or ")})
		}
		if path != wire.PathHealth {
			h = s.auth(h)
		}
		s.mux.HandleFunc(path, h)
	}
	s.routes = nil
	s.mux.HandleFunc("/", s.auth(func(w http.ResponseWriter, r *http.Request) {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such route"})
	}))
}

func writeJSON(w http.ResponseWriter, status int, x any) {
	b, err := wire.Marshal(x)
	if err != nil {
		status = http.StatusInternalServerError
		b, _ = wire.Marshal(wire.ErrorBody{Error: wire.ErrorDetail{Code: wire.CodeInternal, Message: "the response has no JSON form"}})
	}
	w.Header().Set("Content-Type", wire.ContentTypeJSON)
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func writeError(w http.ResponseWriter, d wire.ErrorDetail) {
	writeJSON(w, wire.Status(d.Code), wire.ErrorBody{Error: d})
}

// readBodyWithin reads a JSON request body of at most limit bytes.
func (s *Server) readBodyWithin(w http.ResponseWriter, r *http.Request, limit int64) ([]byte, bool) {
	ct := r.Header.Get("Content-Type")
	if mt, _, _ := strings.Cut(ct, ";"); strings.TrimSpace(strings.ToLower(mt)) != wire.ContentTypeJSON {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupportedMedia, Message: "the body must be " + wire.ContentTypeJSON})
		return nil, false
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	var mbe *http.MaxBytesError
	if errors.As(err, &mbe) {
		writeError(w, wire.ErrorDetail{Code: wire.CodeTooLarge, Message: fmt.Sprintf("the body is larger than %d bytes", mbe.Limit)})
		return nil, false
	}
	if err != nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: "the body could not be read"})
		return nil, false
	}
	return body, true
}

// providerError maps a provider's (or decoder's) error onto the wire: a
// decoding refusal names its path; a final refusal of the contract
// (wire.Refusal) gets its own 4xx code, which the client maps back and
// never retries; everything else is a fault (5xx), which it may retry.
func providerError(err error) wire.ErrorDetail {
	var se *schema.Error
	var we *wire.Error
	switch {
	case errors.As(err, &we):
		return we.ErrorDetail
	case errors.Is(err, contract.ErrLegacyContextTransferRequest):
		// A legacy request is also a *schema.Error: keep its path, name
		// the refusal.
		d := wire.FromSchemaError(err)
		d.Code = wire.CodeLegacyContextTransfer
		return d
	case errors.As(err, &se):
		return wire.FromSchemaError(err)
	case errors.Is(err, errStoreFailed), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return wire.ErrorDetail{Code: wire.CodeUnavailable, Message: err.Error()}
	}
	if d, ok := wire.Refusal(err); ok {
		return d
	}
	return wire.ErrorDetail{Code: wire.CodeProvider, Message: err.Error()}
}

// credentialRequest reads the request's HeaderCredentialRequest (nil
// when absent); a malformed one is answered invalid_request, naming the
// header, and ok is false. The value is never logged or stored.
func credentialRequest(w http.ResponseWriter, r *http.Request) (*contract.CredentialRequest, bool) {
	cr, err := wire.CredentialRequestFrom(r)
	if err != nil {
		d := wire.FromSchemaError(err)
		d.Message = "the " + wire.HeaderCredentialRequest + " header: " + d.Message
		writeError(w, d)
		return nil, false
	}
	return cr, true
}

// errNoAnswer: a provider call returned neither a value nor an error.
var errNoAnswer = errors.New("the provider returned no answer")

func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	if s.quiescing.Load() {
		// A balancer stops sending new work here; the work running goes on.
		writeError(w, drainingDetail)
		return
	}
	writeJSON(w, http.StatusOK, wire.Health{Status: "ok"})
}

func (s *Server) callContext(r *http.Request) (context.Context, context.CancelFunc) {
	return context.WithTimeout(r.Context(), s.opts.CallTimeout)
}

func (s *Server) capabilities(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	c, err := s.p.Capabilities(ctx)
	if err == nil && c == nil {
		err = errors.New("the provider returned no capability document")
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	served := wire.Served(c)
	if _, ok := s.p.(contract.ProfileValidator); !ok {
		// A declaration without the method would be a route that always
		// refuses.
		served.Profile.Validation = false
	}
	if _, ok := s.p.(contract.ContextTransferrer); !ok {
		served.ContextTransfer = nil
	}
	if _, ok := s.p.(contract.BranchingProvider); !ok {
		// The durable branching routes reach a source through the
		// provider's BranchingFor.
		served.Branching.RetrySafe, served.Branching.Lookup, served.Branching.Cleanup = nil, nil, nil
	}
	writeJSON(w, http.StatusOK, wire.Capabilities{Provider: s.p.Name(), Capabilities: served})
}
