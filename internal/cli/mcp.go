package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/workspace"
	wspostgres "github.com/agentrt/agentrt/workspace/postgres"
	wssqlite "github.com/agentrt/agentrt/workspace/sqlite"
)

// Environment variables of agentrt mcp.
const (
	envTenant   = "AGENTRT_TENANT"
	envMember   = "AGENTRT_MEMBER"
	envTurn     = "AGENTRT_TURN"
	envMCPToken = "AGENTRT_MCP_TOKEN"
)

// mcpPath is where the streamable HTTP endpoint is served.
const mcpPath = "/mcp"

func newMCPCmd(stdio IO, open providerOpener) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve agentrt tools over the Model Context Protocol",
	}
	cmd.AddCommand(newMCPWorkspaceCmd(stdio), newMCPDelegateCmd(stdio, open), newMCPCoordinationCmd(stdio))
	return cmd
}

// mcpWorkspaceFlags are the flags of agentrt mcp workspace.
type mcpWorkspaceFlags struct {
	tenant, member, turn string
	httpAddr, tokenFile  string
	readOnlyKnowledge    bool
	store                storeFlags
}

func newMCPWorkspaceCmd(stdio IO) *cobra.Command {
	var f mcpWorkspaceFlags
	cmd := &cobra.Command{
		Use:   "workspace --tenant T --member M",
		Short: "Serve the workspace memory and file tools of one tenant, acting as one member",
		Long: `Serve the workspace memory tools (memory.remember, memory.recall,
memory.forget) and file tools (files.list, files.read, files.write,
files.delete, files.search) over MCP: on stdin/stdout by default, or over
streamable HTTP at http://ADDR/mcp with --http ADDR.

Every call acts as one trusted turn the host sets here, with --tenant,
--member and --turn (default $AGENTRT_TENANT, $AGENTRT_MEMBER,
$AGENTRT_TURN). Tool arguments never choose the identity: an argument
naming a tenant or member is ignored.

The workspace lives in the SQLite file --db FILE (default
$AGENTRT_HOME/agentrt.db, ~/.agentrt/agentrt.db, beside the run store), or
in PostgreSQL with --database URL (default $AGENTRT_DATABASE_URL).

Over HTTP a bearer token is read from --token-file FILE or
$AGENTRT_MCP_TOKEN; without one the server listens on loopback only. The
listen address is printed on stderr. Stdout carries nothing but the MCP
stdio transport; logs go to stderr. SIGINT or SIGTERM stops the server.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runMCPWorkspace(cmd.Context(), stdio, f) },
	}
	fl := cmd.Flags()
	fl.StringVar(&f.tenant, "tenant", os.Getenv(envTenant), "the tenant whose workspace is served (default $"+envTenant+")")
	fl.StringVar(&f.member, "member", os.Getenv(envMember), "the member every call acts as (default $"+envMember+")")
	fl.StringVar(&f.turn, "turn", os.Getenv(envTurn), "the turn id, for the host's records (default $"+envTurn+")")
	fl.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on this address, such as 127.0.0.1:8765, instead of stdio")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token for --http (default $"+envMCPToken+")")
	fl.BoolVar(&f.readOnlyKnowledge, "read-only-knowledge", false, "refuse writes and deletes under /knowledge")
	fl.StringVar(&f.store.path, "db", "", "SQLite file of the workspace (default $AGENTRT_HOME/agentrt.db, ~/.agentrt/agentrt.db)")
	fl.StringVar(&f.store.database, "database", "", "PostgreSQL connection URL of a workspace shared by many processes (default $AGENTRT_DATABASE_URL)")
	return cmd
}

func runMCPWorkspace(ctx context.Context, stdio IO, f mcpWorkspaceFlags) error {
	turn := workspace.ActiveTurn{Tenant: f.tenant, Member: f.member, Turn: f.turn}
	switch {
	case turn.Tenant == "":
		return usage("--tenant (or $%s) is required", envTenant)
	case turn.Member == "":
		return usage("--member (or $%s) is required", envMember)
	}
	if err := turn.Validate(); err != nil {
		return usage("the trusted turn: %v", err)
	}
	token, err := mcpHTTPToken(f.httpAddr, f.tokenFile)
	if err != nil {
		return err
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	st, err := openWorkspaceStore(ctx, &f.store)
	if err != nil {
		return err
	}
	defer st.Close()
	logger := warnLogger(stdio.Err)
	srv, err := mcpserver.NewWorkspace(st, mcpserver.WorkspaceOptions{
		Turn:    turn,
		Files:   &workspace.FileOptions{ReadOnlyKnowledge: f.readOnlyKnowledge},
		Version: Version,
		Logger:  logger,
	})
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	if f.httpAddr == "" {
		return serveMCPStdio(ctx, stdio, srv)
	}
	return serveMCPHTTP(ctx, stdio, srv, "agentrt mcp workspace", f.httpAddr, token, logger)
}

// mcpHTTPToken is the bearer token an MCP server over HTTP requires:
// read from tokenFile or $AGENTRT_MCP_TOKEN. Serving beyond loopback
// without one is refused; stdio takes none.
func mcpHTTPToken(addr, tokenFile string) (string, error) {
	if addr == "" {
		if tokenFile != "" {
			return "", usage("--token-file is for --http; stdio needs no token")
		}
		return "", nil
	}
	token := strings.TrimSpace(os.Getenv(envMCPToken))
	if tokenFile != "" {
		t, err := serveToken(tokenFile)
		if err != nil {
			return "", err
		}
		token = t
	}
	if token == "" && !loopbackOnly(addr) {
		return "", usage("refusing to serve on %s without a token: give --token-file or $%s, or listen on 127.0.0.1", addr, envMCPToken)
	}
	return token, nil
}

// serveMCPStdio serves srv on stdin/stdout until the client closes stdin
// (the MCP stdio shutdown) or ctx ends.
func serveMCPStdio(ctx context.Context, stdio IO, srv *mcp.Server) error {
	ss, err := srv.Connect(ctx, mcpserver.Stdio(stdio.In, machine(stdio.Out)), nil)
	if err != nil {
		return &exitError{code: ExitFailed, err: fmt.Errorf("mcp stdio: %w", err)}
	}
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case err = <-ended:
	case <-ctx.Done():
		// A signal: stop serving. Stdin may stay blocked in a read the
		// process exit ends.
		ss.Close()
		return nil
	}
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return &exitError{code: ExitFailed, err: fmt.Errorf("mcp stdio: %w", err)}
}

// serveMCPHTTP serves srv over streamable HTTP at addr until ctx ends;
// who names the command in what it prints on stderr.
func serveMCPHTTP(ctx context.Context, stdio IO, srv *mcp.Server, who, addr, token string, logger *slog.Logger) error {
	mux := http.NewServeMux()
	mux.Handle(mcpPath, mcpserver.HTTPHandler(srv, mcpserver.HTTPOptions{Token: token, Logger: logger}))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 2 * time.Minute,
		ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelWarn)}
	served := make(chan error, 1)
	go func() { served <- hs.Serve(ln) }()
	fmt.Fprintf(stdio.Err, "%s: listening on http://%s%s\n", who, ln.Addr(), mcpPath)
	select {
	case err := <-served:
		return &exitError{code: ExitFailed, err: err}
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
	defer cancel()
	if err := hs.Shutdown(sctx); err != nil {
		// Open event streams do not end on their own: close them.
		hs.Close()
	}
	fmt.Fprintln(stdio.Err, who+": stopped")
	return nil
}

// openWorkspaceStore opens the workspace store the flags name, the way
// storeFlags.open opens the run store: PostgreSQL when --database or
// $AGENTRT_DATABASE_URL names one, else the SQLite file (by default the
// run store's).
func openWorkspaceStore(ctx context.Context, f *storeFlags) (workspace.Store, error) {
	if f.database != "" && f.path != "" {
		return nil, usage("--db (SQLite) and --database (PostgreSQL) name two different stores; give one")
	}
	if u := f.url(); u != "" {
		s, err := wspostgres.Open(ctx, u, wspostgres.Options{})
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("opening the workspace at %s: %w", redactURL(u), err)}
		}
		return s, nil
	}
	path := f.path
	if path == "" {
		var err error
		if path, err = sqlite.DefaultPath(); err != nil {
			return nil, &exitError{code: ExitFailed, err: err}
		}
	}
	s, err := wssqlite.Open(ctx, path, wssqlite.Options{})
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("opening the workspace: %w", err)}
	}
	return s, nil
}
