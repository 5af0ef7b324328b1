package coordmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/supervise"
)

// ServerName is the MCP server name the coordination endpoint announces.
const ServerName = "agentrt-coordination"

// Path is the HTTP path of the endpoint.
const Path = "/mcp"

// shutdownGrace bounds how long Close waits for in-flight calls.
const shutdownGrace = 3 * time.Second

// ErrNoRunDir: the run has no run directory to publish the endpoint in.
var ErrNoRunDir = errors.New("coordmcp: the run has no run directory to publish its endpoint in")

// ServeOptions adjust Serve.
type ServeOptions struct {
	// Tools are the tools served; nil serves every coordination verb
	// (Coordinator.Tools).
	Tools []contract.Tool
	// Logger receives the server's operational log (never arguments,
	// results or the token); nil discards it.
	Logger *slog.Logger
	// Version is announced to clients ("dev" when empty).
	Version string
}

// Server is a live run's coordination endpoint: the verbs served over
// streamable HTTP on a loopback port, behind a per-run bearer token, and
// published in the run dir's EndpointFile. Close ends it.
type Server struct {
	endpoint Endpoint
	path     string
	hs       *http.Server
	served   chan struct{}
	closed   atomic.Bool
	once     sync.Once
	closeErr error
}

// Serve starts serving c's coordination verbs on 127.0.0.1 (a free
// port) behind a fresh 256-bit token and publishes both in c.RunDir()'s
// EndpointFile (mode 0600). The caller must Close it when the run's
// brain returns; Close removes the file and refuses every later request,
// so the token dies with the run. Its await_event puts back the event
// of a call whose request ended before the call returned
// (supervise.Coordinator.PutBackUnreturned).
func Serve(ctx context.Context, c *supervise.Coordinator, o ServeOptions) (*Server, error) {
	dir := c.RunDir()
	if dir == "" {
		return nil, ErrNoRunDir
	}
	ts := o.Tools
	if ts == nil {
		var err error
		if ts, err = c.Tools(); err != nil {
			return nil, err
		}
	}
	// An await_event's event is the harness's only once its call
	// returned it with its request still live (see the package doc).
	served := make([]contract.Tool, len(ts))
	for i, t := range ts {
		served[i] = c.PutBackUnreturned(t)
	}
	logger := o.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	srv, err := mcpserver.New(served, &mcpserver.Options{Name: ServerName, Version: o.Version, Logger: logger,
		Instructions: "The coordination verbs of supervised run " + c.RunID() + "."})
	if err != nil {
		return nil, err
	}
	token, err := newToken()
	if err != nil {
		return nil, fmt.Errorf("coordmcp: a token: %w", err)
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("coordmcp: listening on loopback: %w", err)
	}
	s := &Server{served: make(chan struct{})}
	inner := mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Token: token, Logger: logger})
	mux := http.NewServeMux()
	mux.Handle(Path, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if s.closed.Load() {
			// The run ended: its token is no longer honoured.
			w.Header().Set("WWW-Authenticate", `Bearer error="invalid_token", error_description="the run has ended"`)
			http.Error(w, "the supervised run has ended", http.StatusUnauthorized)
			return
		}
		inner.ServeHTTP(w, r)
	}))
	s.hs = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	go func() {
		defer close(s.served)
		if err := s.hs.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
			logger.Warn("coordmcp: serving", "err", err)
		}
	}()
	s.endpoint = Endpoint{SchemaVersion: EndpointSchemaVersion, RunID: c.RunID(), URL: "http://" + ln.Addr().String() + Path,
		Token: token, PID: os.Getpid()}
	if s.path, err = writeEndpoint(dir, s.endpoint); err != nil {
		s.path = ""
		s.Close()
		return nil, err
	}
	return s, nil
}

// URL is the endpoint's URL.
func (s *Server) URL() string { return s.endpoint.URL }

// Endpoint returns what Serve published (the token included: a secret).
func (s *Server) Endpoint() Endpoint { return s.endpoint }

// Close invalidates the token (every later request is refused with 401),
// removes the endpoint file when it is still this server's, and stops
// serving, giving in-flight calls a few seconds. It is safe to call more
// than once.
func (s *Server) Close() error {
	s.once.Do(func() {
		s.closed.Store(true)
		if s.path != "" {
			// Remove only our own file: a later run on the same dir may
			// have published its own.
			if data, err := os.ReadFile(s.path); err == nil {
				if e, err := DecodeEndpoint(data); err == nil && e.Token == s.endpoint.Token {
					if err := os.Remove(s.path); err != nil && !errors.Is(err, os.ErrNotExist) {
						s.closeErr = fmt.Errorf("coordmcp: removing the endpoint file: %w", err)
					}
				}
			}
			syncDir(filepath.Dir(s.path))
		}
		ctx, cancel := context.WithTimeout(context.Background(), shutdownGrace)
		defer cancel()
		if err := s.hs.Shutdown(ctx); err != nil {
			// Open event streams do not end on their own.
			s.hs.Close()
		}
		<-s.served
	})
	return s.closeErr
}

// syncDir makes a rename or removal in dir durable, best effort.
func syncDir(dir string) {
	if d, err := os.Open(dir); err == nil {
		d.Sync()
		d.Close()
	}
}
