package cli

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/localproc"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store"
)

// shutdownGrace bounds a graceful shutdown: open requests get this long
// to finish before the server closes them.
const shutdownGrace = 10 * time.Second

func newServeCmd(stdio IO, open providerOpener) *cobra.Command {
	var listen, providerName, scriptPath, baseURL, openaiAPI, tokenFile, stateDir, logFormat string
	var images []string
	var sf storeFlags
	var retention, grace, abandon time.Duration
	var maxRecords int
	var tlsCert, tlsKey string
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR",
		Short: "Serve a provider over HTTP (the agentrt sidecar)",
		Long: `Serve one provider over HTTP/JSON with server-sent event streams, for
providers/remote (agentrt run --provider remote) on another machine.

With --provider localproc it serves exact processes on this machine (as root):
environments, files and output live under --state-dir, so a restarted server
recovers them, from the image directories given with --image.

The bearer token is read from --token-file FILE or $AGENTRT_SERVE_TOKEN.
Without a token the server listens on loopback only. Keyed creates and exact
spawns are recorded in the run store — --db FILE (SQLite, default
$AGENTRT_HOME/agentrt.db, ~/.agentrt/agentrt.db, as for agentrt run) or
--database URL (PostgreSQL, default $AGENTRT_DATABASE_URL; its tables in
--database-schema NAME, default $AGENTRT_DATABASE_SCHEMA) — so a restarted
server (or another server on the same PostgreSQL database) replays a retried
create or spawn instead of making a second environment or process, for
--record-retention after the key's first use (older records are deleted in
bounded batches; 0 keeps them forever) and, whatever their age, for the
newest --max-records keyed creates (and exact environments): beyond it the
oldest go first, never those of an environment that still exists.
--db :memory: keeps them in this process only (a restart forgets them). The
listen address is printed on stderr once the server accepts connections;
--log-format json makes every line the server logs a JSON object, the error
it ends with included.

With --tls-cert and --tls-key (PEM files, both or neither) the server speaks
HTTPS only; clients (agentrt run --provider remote) trust its certificate
through the system's roots, or the CA in the PEM file $AGENTRT_SERVE_CA_FILE.
Listening beyond loopback needs a token, and should use TLS: without it the
token crosses the network in clear (the server warns).

SIGINT or SIGTERM stops the server gracefully: from then on it refuses new
work (creates, turns, dispatches: 503, which clients retry elsewhere or
later) while live turns and dispatched runs go on and their clients read
their ends, for at most --shutdown-grace. Work still live then is left as it
is, not cancelled: its clients' connections are closed without an answer, so
a retained run reads interrupted and "agentrt runs recover" against a
restarted server (same --db or --database) says what is left of it, never a
second environment.

With OTEL_EXPORTER_OTLP_ENDPOINT set, each request is traced over OTLP/HTTP
as a server span continuing the traceparent it carries.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			logger, err := newLogger(stdio.Err, logFormat)
			if err != nil {
				return err
			}
			defer func() { err = logExit(logger, logFormat, "serve", err) }()
			token, err := serveToken(tokenFile)
			if err != nil {
				return err
			}
			say := serveNotice(stdio, logger, logFormat)
			if listen == "" {
				return usage("--listen is required")
			}
			if token == "" && !loopbackOnly(listen) {
				return usage("refusing to listen on %s without a token: give --token-file or $AGENTRT_SERVE_TOKEN, or listen on 127.0.0.1", listen)
			}
			if grace <= 0 {
				return usage("--shutdown-grace must be positive, such as 30s")
			}
			if abandon <= 0 {
				return usage("--abandon-after must be positive, such as 2m")
			}
			if maxRecords < 0 {
				return usage("--max-records must not be negative (0: no bound)")
			}
			tlsConf, err := serveTLS(tlsCert, tlsKey)
			if err != nil {
				return err
			}
			if providerName == "remote" {
				return usage("--provider remote cannot be served")
			}
			var provider contract.Provider
			if providerName == "localproc" {
				lp, err := openLocalproc(stateDir, images, scriptPath, baseURL, openaiAPI)
				if err != nil {
					return err
				}
				defer lp.Close()
				provider = lp
			} else {
				if stateDir != "" || len(images) > 0 {
					return usage("--state-dir and --image apply to --provider localproc only")
				}
				if provider, err = open(providerName, scriptPath, baseURL, openaiAPI); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var st store.Store
			if sf.path == memoryStore {
				if sf.database != "" {
					return usage("--db %s (records in memory) and --database name two different stores; give one", memoryStore)
				}
				if sf.schema != "" {
					return usage("--database-schema applies to a PostgreSQL store (--database), not --db %s", memoryStore)
				}
			} else {
				s, err := sf.open(ctx)
				if err != nil {
					return err
				}
				defer s.Close()
				st = s
			}
			if retention < 0 {
				return usage("--record-retention must not be negative (0 keeps records forever)")
			}
			if retention == 0 {
				retention = -1 // sidecar: negative keeps them forever
			}
			if maxRecords == 0 {
				maxRecords = -1 // sidecar: negative has no bound
			}
			srv, err := sidecar.New(provider, sidecar.Options{Token: token, Store: st, Logger: logger, RecordRetention: retention, MaxRecords: maxRecords, AbandonAfter: abandon})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			ended := false // stopServing ends srv itself
			defer func() {
				if !ended {
					srv.Close()
				}
			}()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if token == "" && !loopbackOnly(ln.Addr().String()) {
				// A name (localhost) can resolve beyond loopback: what
				// counts is the address actually bound.
				ln.Close()
				return usage("refusing to listen on %s (%s) without a token: give --token-file or $AGENTRT_SERVE_TOKEN, or listen on 127.0.0.1", listen, ln.Addr())
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			hs := &http.Server{Handler: tracing.Handler(srv), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn), TLSConfig: tlsConf}
			hs.RegisterOnShutdown(srv.Drain)
			scheme, serve := "http", hs.Serve
			if tlsConf != nil {
				// The certificate is in TLSConfig: no files to name here.
				scheme, serve = "https", func(ln net.Listener) error { return hs.ServeTLS(ln, "", "") }
			} else if token != "" && !loopbackOnly(listen) {
				say(slog.LevelWarn, fmt.Sprintf("warning: listening on %s without TLS: the bearer token crosses the network in clear (give --tls-cert and --tls-key)", listen))
			}
			served := make(chan error, 1)
			go func() { served <- serve(ln) }()
			say(slog.LevelInfo, fmt.Sprintf("listening on %s://%s (provider %s)", scheme, ln.Addr(), provider.Name()))
			select {
			case err := <-served:
				return &exitError{code: ExitFailed, err: err}
			case <-ctx.Done():
			}
			// A second signal stops the process at once, as without a handler.
			stop()
			ended = true
			return stopServing(say, hs, srv, grace)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "", "address to listen on, such as 127.0.0.1:8080 (required)")
	cmd.Flags().StringVar(&providerName, "provider", "scripted", "provider to serve (scripted, openai, anthropic, claude-code, codex, opencode, localproc)")
	cmd.Flags().StringVar(&stateDir, "state-dir", "", "state directory of the localproc provider: its environments, files and process output, recovered by a restarted server (required for localproc)")
	cmd.Flags().StringArrayVar(&images, "image", nil, "a local image directory the localproc provider accepts, addressed local@sha256:<manifest digest> (repeatable)")
	cmd.Flags().StringVar(&scriptPath, "script", "", "script for the scripted provider")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the model endpoint of the served provider (default: the vendor's)")
	cmd.Flags().StringVar(&openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses")
	cmd.Flags().StringVar(&tokenFile, "token-file", "", "file holding the bearer token (default $AGENTRT_SERVE_TOKEN)")
	cmd.Flags().StringVar(&sf.path, "db", "", "SQLite file recording keyed creates and exact spawns across restarts (default $AGENTRT_HOME/agentrt.db, ~/.agentrt/agentrt.db; "+memoryStore+": in this process only)")
	cmd.Flags().StringVar(&sf.database, "database", "", "PostgreSQL connection URL recording keyed creates and exact spawns, shared by many servers (default $AGENTRT_DATABASE_URL)")
	cmd.Flags().StringVar(&sf.schema, "database-schema", "", "PostgreSQL schema holding --database's tables, created if missing (default $AGENTRT_DATABASE_SCHEMA; none: the connection's search_path)")
	cmd.Flags().StringVar(&logFormat, "log-format", "text", "log format on stderr: text or json (json: every line, the error it ends with included)")
	cmd.Flags().DurationVar(&abandon, "abandon-after", sidecar.DefaultAbandonAfter, "cancel a live turn nobody has read for this long; a turn a client lost sight of (in doubt, for agentrt fleet recover) lives this long unread")
	cmd.Flags().DurationVar(&grace, "shutdown-grace", defaultServeGrace, "on SIGINT or SIGTERM, how long live turns and dispatched runs may go on while new work is refused; what is still live then is left, not cancelled")
	cmd.Flags().IntVar(&maxRecords, "max-records", sidecar.DefaultMaxRecords, "how many keyed creates (and, apart, exact environments) --db/--database keep records of; beyond it the oldest whose environment is gone are deleted (0: no bound)")
	cmd.Flags().StringVar(&tlsCert, "tls-cert", "", "PEM certificate (chain) to serve HTTPS with; needs --tls-key")
	cmd.Flags().StringVar(&tlsKey, "tls-key", "", "PEM private key of --tls-cert")
	cmd.Flags().DurationVar(&retention, "record-retention", sidecar.DefaultRecordRetention, "how long --db/--database keep a keyed create's or spawn's records after the key's first use; a re-send after it runs anew (0: forever; must exceed 5m, the create timeout)")
	return cmd
}

// defaultServeGrace is --shutdown-grace's default.
const defaultServeGrace = 30 * time.Second

// memoryStore is the --db value that keeps a server's records in its
// process only.
const memoryStore = ":memory:"

// serveNotice returns how the server says what it is doing on stderr:
// the line "agentrt serve: MSG" in text format (what scripts and
// servetest read), a log record of the same message in json format, so
// that every line is JSON.
func serveNotice(stdio IO, logger *slog.Logger, format string) func(level slog.Level, msg string) {
	if format == "json" {
		return func(level slog.Level, msg string) { logger.Log(context.Background(), level, "agentrt serve: "+msg) }
	}
	return func(_ slog.Level, msg string) { fmt.Fprintln(stdio.Err, "agentrt serve: "+msg) }
}

// stopServing stops a server whose signal came, and ends srv: srv
// refuses new work and waits (at most grace) for its live work to end
// and its clients to read the ends, then hs stops and srv closes. Work
// still live after grace is not cancelled as if a client asked: every
// connection is closed first, so no client is answered with a cancel,
// and srv is abandoned (sidecar.Server.Abandon), so a create or spawn in
// flight stays in doubt for its retry rather than recorded failed.
func stopServing(say func(slog.Level, string), hs *http.Server, srv *sidecar.Server, grace time.Duration) error {
	deadline := time.Now().Add(grace)
	say(slog.LevelInfo, fmt.Sprintf("stopping: refusing new work, waiting up to %s for live turns (signal again to stop at once)", grace))
	gctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	live, _ := srv.Quiesce(gctx)
	if live == 0 {
		err := hs.Shutdown(gctx)
		if err == nil {
			srv.Close()
			say(slog.LevelInfo, "stopped")
			return nil
		}
		if !errors.Is(err, context.DeadlineExceeded) {
			hs.Close()
			srv.Abandon()
			return &exitError{code: ExitFailed, err: err}
		}
		live = 1 // a request outlived the grace
	}
	say(slog.LevelWarn, fmt.Sprintf("%d turns, dispatched runs or requests still live after %s: left as they are, not cancelled (their clients see the connection close; agentrt runs recover RUN against a restarted server says what is left of a retained run)", live, grace))
	err := hs.Close()
	srv.Abandon()
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	say(slog.LevelInfo, "stopped")
	return nil
}

// serveTLS loads the server's certificate and key: both or neither
// (nil: plain HTTP).
func serveTLS(certFile, keyFile string) (*tls.Config, error) {
	switch {
	case certFile == "" && keyFile == "":
		return nil, nil
	case certFile == "" || keyFile == "":
		return nil, usage("--tls-cert and --tls-key go together: give both PEM files (the certificate and its private key), or neither for plain HTTP")
	}
	cert, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		return nil, usage("loading --tls-cert %s and --tls-key %s: %v", certFile, keyFile, err)
	}
	return &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}, nil
}

// serveRoots are the certificate authorities a remote sidecar's https
// certificate may chain to: the system's and those in the PEM file
// $AGENTRT_SERVE_CA_FILE; nil (the system's alone) without it.
func serveRoots() (*x509.CertPool, error) {
	file := os.Getenv("AGENTRT_SERVE_CA_FILE")
	if file == "" {
		return nil, nil
	}
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, usage("reading $AGENTRT_SERVE_CA_FILE: %v", err)
	}
	roots, err := x509.SystemCertPool()
	if err != nil || roots == nil {
		roots = x509.NewCertPool()
	}
	if !roots.AppendCertsFromPEM(pem) {
		return nil, usage("$AGENTRT_SERVE_CA_FILE %s holds no PEM certificate", file)
	}
	return roots, nil
}

// openLocalproc opens the exact-process provider of this machine over
// stateDir with images; a machine that cannot confine its processes is
// refused here, since the server would offer nothing.
func openLocalproc(stateDir string, images []string, scriptPath, baseURL, openaiAPI string) (*localproc.Provider, error) {
	if scriptPath != "" || baseURL != "" || openaiAPI != "" {
		return nil, usage("--script, --base-url and --openai-api do not apply to --provider localproc")
	}
	if stateDir == "" {
		return nil, usage("--provider localproc needs --state-dir, the directory its environments and process output live in")
	}
	p, err := localproc.New(localproc.Options{Dir: stateDir, Images: images})
	if err != nil {
		return nil, usage("%v", err)
	}
	if err := p.ExactProcessUnavailable(); err != nil {
		p.Close()
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%w (localproc runs exact processes only as root, with user, network and pid namespaces)", err)}
	}
	return p, nil
}

// serveToken reads the token from file, else $AGENTRT_SERVE_TOKEN.
func serveToken(file string) (string, error) {
	if file == "" {
		return strings.TrimSpace(os.Getenv("AGENTRT_SERVE_TOKEN")), nil
	}
	b, err := readFile(file)
	if err != nil {
		return "", err
	}
	token := strings.TrimSpace(string(b))
	if token == "" {
		return "", usage("the token file %s is empty", file)
	}
	return token, nil
}

// loopbackOnly reports whether addr names a loopback IP (not a host
// name, not the unspecified address).
func loopbackOnly(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
