package cli

import (
	"context"
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

func newServeCmd(stdio IO) *cobra.Command {
	var listen, providerName, scriptPath, baseURL, openaiAPI, tokenFile, stateDir string
	var images []string
	var sf storeFlags
	var retention time.Duration
	cmd := &cobra.Command{
		Use:   "serve --listen ADDR",
		Short: "Serve a provider over HTTP (the agentrt sidecar)",
		Long: `Serve one provider over HTTP/JSON with server-sent event streams, for
providers/remote (agentrt run --provider remote) on another machine.

With --provider localproc it serves exact processes on this machine (as root):
environments, files and output live under --state-dir, so a restarted server
recovers them, from the image directories given with --image.

The bearer token is read from --token-file FILE or $AGENTRT_SERVE_TOKEN.
Without a token the server listens on loopback only. With --db FILE (SQLite)
or --database URL (PostgreSQL, default $AGENTRT_DATABASE_URL), keyed creates
and exact spawns are recorded in that store, so a restarted server (or
another server on the same PostgreSQL database) replays a retried create or
spawn instead of making a second environment or process, for
--record-retention after the key's first use (older records are deleted in
bounded batches; 0 keeps them forever). Without either they are kept in
memory. The listen address is printed on stderr once the server
accepts connections. SIGINT or SIGTERM shuts it down gracefully.

With OTEL_EXPORTER_OTLP_ENDPOINT set, each request is traced over OTLP/HTTP
as a server span continuing the traceparent it carries.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			token, err := serveToken(tokenFile)
			if err != nil {
				return err
			}
			if listen == "" {
				return usage("--listen is required")
			}
			if token == "" && !loopbackOnly(listen) {
				return usage("refusing to listen on %s without a token: give --token-file or $AGENTRT_SERVE_TOKEN, or listen on 127.0.0.1", listen)
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
				if provider, err = openProvider(providerName, scriptPath, baseURL, openaiAPI); err != nil {
					return err
				}
			}
			ctx, stop := signal.NotifyContext(cmd.Context(), os.Interrupt, syscall.SIGTERM)
			defer stop()
			var st store.Store
			if sf.path != "" || sf.url() != "" {
				s, err := sf.open(ctx)
				if err != nil {
					return err
				}
				defer s.Close()
				st = s
			}
			logger := slog.New(slog.NewTextHandler(stdio.Err, nil))
			if retention < 0 {
				return usage("--record-retention must not be negative (0 keeps records forever)")
			}
			if retention == 0 {
				retention = -1 // sidecar: negative keeps them forever
			}
			srv, err := sidecar.New(provider, sidecar.Options{Token: token, Store: st, Logger: logger, RecordRetention: retention})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			defer srv.Close()
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			hs := &http.Server{Handler: tracing.Handler(srv), ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
				ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
			hs.RegisterOnShutdown(srv.Drain)
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ln) }()
			fmt.Fprintf(stdio.Err, "agentrt serve: listening on http://%s (provider %s)\n", ln.Addr(), provider.Name())
			select {
			case err := <-served:
				return &exitError{code: ExitFailed, err: err}
			case <-ctx.Done():
			}
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
			defer cancel()
			if err := hs.Shutdown(sctx); err != nil && !errors.Is(err, context.DeadlineExceeded) {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintln(stdio.Err, "agentrt serve: stopped")
			return nil
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
	cmd.Flags().StringVar(&sf.path, "db", "", "SQLite file recording keyed creates and exact spawns across restarts (default: in memory)")
	cmd.Flags().StringVar(&sf.database, "database", "", "PostgreSQL connection URL recording keyed creates and exact spawns, shared by many servers (default $AGENTRT_DATABASE_URL)")
	cmd.Flags().DurationVar(&retention, "record-retention", sidecar.DefaultRecordRetention, "how long --db/--database keep a keyed create's or spawn's records after the key's first use; a re-send after it runs anew (0: forever; must exceed 5m, the create timeout)")
	return cmd
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
	b, err := os.ReadFile(file)
	if err != nil {
		return "", &exitError{code: ExitFailed, err: fmt.Errorf("reading the token file: %w", err)}
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
