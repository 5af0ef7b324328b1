package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/internal/procguard"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/mcpserver"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// mcpDelegateFlags are the flags of agentrt mcp delegate.
type mcpDelegateFlags struct {
	manager                                 string
	workers                                 []string
	providerName, scriptPath, managerScript string
	baseURL, openaiAPI                      string
	expect, checkCmd                        string
	// checkCmdGiven: --check-cmd was given (an empty one is refused).
	checkCmdGiven bool
	// budgetUSDGiven: --budget-usd was given (0 is refused: see zeroDollarCap).
	budgetUSDGiven bool
	// workerTokensGiven: --worker-tokens was given (0 is refused).
	workerTokensGiven                          bool
	checkTimeout                               time.Duration
	runDir                                     string
	budgetTokens, iterations, workerTokens     int64
	budgetUSD, workerUSD                       float64
	maxLive, maxTurns, concurrency, maxPending int
	maxTerminal                                int
	maxRunTime, claimTTL                       time.Duration
	httpAddr, tokenFile                        string
	store                                      storeFlags
	authored                                   bool
	allowedModels                              []string
}

func newMCPDelegateCmd(stdio IO, open providerOpener) *cobra.Command {
	var f mcpDelegateFlags
	cmd := &cobra.Command{
		Use:   "delegate --manager PROFILE --worker PROFILE... [--expect TEXT] [--check-cmd CMD]",
		Short: "Serve the delegation tools: tasks handed to a fixed manager agent, run as supervised runs",
		Long: `Serve the delegation tools over MCP — delegate, delegation_status,
delegation_history, delegate_feedback and delegation_cancel — on stdin/stdout
by default, or over streamable HTTP at http://ADDR/mcp with --http ADDR.

A client's delegate call ({intent, runId?, idempotencyKey?, budget?,
waitSeconds?}) hands the intent to the manager profile --manager, which
runs it as one supervised run (as agentrt supervise does) spawning workers
from the --worker profiles on --provider, under a budget within the caps
--budget-tokens, --iterations and --budget-usd. A result is delivered only
when the check passes: it contains --expect TEXT and, when given, --check-cmd
CMD (run by /bin/sh with the result on stdin) exits 0; without either, when it
is not empty. The manager, workers, provider, check and caps are fixed here; no tool
argument can choose them.

The manager is an authoring supervisor (spec §9's default): besides the
--worker profiles by name, its spawn_worker takes a worker profile it writes
for the task, {"profile": {"name": ..., "model": {"default": ...}, ...}},
checked strictly and journaled by digest. An authored profile must name one
of the --allowed-model models (default: the --worker profiles' models), and
one with hooks, command MCP servers or connections is refused before it
runs. --authored-profiles=false limits the manager to the --worker profiles.

delegate waits for the delegation to end (at most 600 s, or waitSeconds)
and answers {status: "winner", out, outRef, spentTotal} or {status:
"no-winner", reason, error, spentTotal}, with the taskId; when the wait ends first, status is pending or running and the
client polls delegation_status.

Delegations are durable: they are kept in the run store (--db FILE or
--database URL, as for agentrt runs) and their journals under --run-dir
(default $AGENTRT_HOME/delegations). A server restarted on the same store
lists the delegations of the one before and resumes those that were running
from their journals: settled workers are replayed, not run again. One whose
journal is missing ends interrupted rather than being run again.

Over HTTP a bearer token is read from --token-file FILE or
$AGENTRT_MCP_TOKEN; without one the server listens on loopback only. Stdout
carries nothing but the MCP stdio transport; the listen address and the log go
to stderr. SIGINT or SIGTERM stops the server: running delegations are
handed back for the next start.

With OTEL_EXPORTER_OTLP_ENDPOINT set, each delegation's supervised run is
traced over OTLP/HTTP as agentrt supervise's is.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			f.checkCmdGiven = cmd.Flags().Changed("check-cmd")
			f.budgetUSDGiven = cmd.Flags().Changed("budget-usd")
			f.workerTokensGiven = cmd.Flags().Changed("worker-tokens")
			return runMCPDelegate(cmd.Context(), stdio, open, f)
		},
	}
	f.store.register(cmd)
	fl := cmd.Flags()
	fl.StringVar(&f.manager, "manager", "", "the manager profile every delegation runs (required)")
	fl.StringArrayVar(&f.workers, "worker", nil, "a worker profile the manager may spawn, by its name (repeatable, at least one)")
	fl.StringVar(&f.providerName, "provider", "scripted", "provider the workers (and, for openai and anthropic, the manager) run on")
	fl.StringVar(&f.baseURL, "base-url", "", "the model endpoint of the provider (default: the vendor's)")
	fl.StringVar(&f.openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses")
	fl.StringVar(&f.scriptPath, "script", "", "script for the workers' scripted provider (default: answer every task)")
	fl.StringVar(&f.managerScript, "manager-script", "", "script of the manager's scripted model (default: spawn each worker once on the task and await them)")
	fl.BoolVar(&f.authored, "authored-profiles", true, "let the manager author worker profiles (spawn_worker{profile: {...}}), held to --allowed-model and refused when they would run commands")
	fl.StringArrayVar(&f.allowedModels, "allowed-model", nil, "a model workers may run, authored or not (repeatable; default with --authored-profiles: the --worker profiles' models)")
	fl.StringVar(&f.expect, "expect", "", "deliver only a result that contains this text")
	fl.StringVar(&f.checkCmd, "check-cmd", "", "deliver only a result for which this shell command, given the result on stdin, exits 0")
	fl.DurationVar(&f.checkTimeout, "check-timeout", 2*time.Minute, "how long --check-cmd may run before the result counts as not judged")
	fl.StringVar(&f.runDir, "run-dir", "", "directory of the delegations' journals (default $AGENTRT_HOME/delegations, ~/.agentrt/delegations)")
	fl.Int64Var(&f.budgetTokens, "budget-tokens", 100_000, "token cap of one delegation, manager included (also its default)")
	fl.Int64Var(&f.iterations, "iterations", 8, "iteration cap of one delegation (each worker run is one; also its default)")
	fl.Float64Var(&f.budgetUSD, "budget-usd", 0, "dollar cap of one delegation, positive (default: none)")
	fl.Int64Var(&f.workerTokens, "worker-tokens", 0, "tokens each worker reserves (default: a quarter of the delegation's tokens, half with one worker profile)")
	fl.Float64Var(&f.workerUSD, "worker-usd", 0, "dollars each worker reserves (default: none)")
	fl.IntVar(&f.maxLive, "max-live", 0, "most workers live at once in one delegation (default: no cap)")
	fl.IntVar(&f.maxTurns, "max-turns", 0, "most tool turns of the manager's model (default: the kernel's backstop)")
	fl.IntVar(&f.concurrency, "concurrency", delegation.DefaultConcurrency, "most delegations running at once")
	fl.IntVar(&f.maxPending, "max-pending", delegation.DefaultMaxPending, "most delegations waiting to start; more are refused (queue-full)")
	fl.IntVar(&f.maxTerminal, "max-terminal-records", 0, "most ended delegations kept; those that ended longest ago are removed with their journals (default: keep all)")
	fl.DurationVar(&f.maxRunTime, "timeout", delegation.DefaultMaxRunTime, "deadline of one delegation from its start")
	fl.DurationVar(&f.claimTTL, "claim-ttl", delegation.DefaultClaimTTL, "how long this server's claim on a running delegation lasts unless renewed; after a crash, the next server resumes the delegation once it lapsed")
	fl.StringVar(&f.httpAddr, "http", "", "serve streamable HTTP on this address, such as 127.0.0.1:8766, instead of stdio")
	fl.StringVar(&f.httpAddr, "listen", "", "the same as --http")
	fl.StringVar(&f.tokenFile, "token-file", "", "file holding the bearer token for --http (default $"+envMCPToken+")")
	return cmd
}

func runMCPDelegate(ctx context.Context, stdio IO, open providerOpener, f mcpDelegateFlags) (err error) {
	if err := dollarFlags(usdFlag("--budget-usd", f.budgetUSD), usdFlag("--worker-usd", f.workerUSD)); err != nil {
		return err
	}
	if err := zeroDollarCap(f.budgetUSDGiven, f.budgetUSD); err != nil {
		return err
	}
	switch {
	case f.manager == "":
		return usage("--manager PROFILE is required: the manager profile every delegation runs")
	case len(f.workers) == 0:
		return usage("at least one --worker PROFILE is required")
	case f.budgetTokens <= 0 || f.iterations <= 0:
		return usage("--budget-tokens and --iterations must be positive")
	case f.budgetUSD < 0 || f.workerUSD < 0 || f.workerTokens < 0 || f.maxLive < 0 || f.maxTurns < 0:
		return usage("budgets, --max-live and --max-turns cannot be negative")
	case f.workerTokensGiven && f.workerTokens == 0:
		return usage(zeroWorkerTokens)
	case f.concurrency < 1 || f.concurrency > delegation.MaxConcurrency:
		return usage("--concurrency must be between 1 and %d", delegation.MaxConcurrency)
	case f.checkCmdGiven && strings.TrimSpace(f.checkCmd) == "":
		return usage("--check-cmd is empty: give the shell command that judges a result, or leave the flag out")
	case f.maxPending < 1 || f.maxRunTime <= 0 || f.checkTimeout <= 0:
		return usage("--max-pending, --timeout and --check-timeout must be positive")
	case f.maxTerminal < 0:
		return usage("--max-terminal-records cannot be negative (0 keeps every ended delegation)")
	case f.claimTTL < time.Second:
		return usage("--claim-ttl must be at least 1s")
	case f.managerScript != "" && f.providerName != "scripted":
		return usage("--manager-script applies to --provider scripted only")
	}
	if err := checkTexts("--expect", f.expect, "--check-cmd", f.checkCmd); err != nil {
		return err
	}
	token, err := mcpHTTPToken(f.httpAddr, f.tokenFile)
	if err != nil {
		return err
	}
	mgr, err := loadProfile(stdio, f.manager, false)
	if err != nil {
		return err
	}
	profiles, names, err := loadWorkerProfiles(stdio, f.workers, false)
	if err != nil {
		return err
	}
	// The manager's model is made per task (the default plan names it);
	// make one now so that a bad flag is reported before serving.
	router := func(task string) (contract.ChatModel, error) {
		return routerModel(f.providerName, f.managerScript, f.baseURL, f.openaiAPI, mgr, names, task, f.maxLive)
	}
	if _, err := router(""); err != nil {
		return err
	}
	provider, err := open(f.providerName, f.scriptPath, f.baseURL, f.openaiAPI)
	if err != nil {
		return err
	}
	runDir := f.runDir
	if runDir == "" {
		db, err := sqlite.DefaultPath()
		if err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		runDir = filepath.Join(filepath.Dir(db), "delegations")
	}
	if err := os.MkdirAll(runDir, 0o700); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}

	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	s, err := f.store.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	logger := warnLogger(stdio.Err)
	cfg := delegation.Config{
		Store:              s,
		Manager:            mgr,
		Profiles:           profiles,
		Executor:           &supervise.KernelExecutor{Provider: provider, Store: s},
		Router:             router,
		Deliverable:        deliverableOf(f.expect, f.checkCmd, f.checkTimeout),
		Caps:               delegation.Budget{Tokens: f.budgetTokens, Iterations: f.iterations},
		MaxLiveWorkers:     f.maxLive,
		MaxTurns:           f.maxTurns,
		RunDir:             runDir,
		Concurrency:        f.concurrency,
		MaxPending:         f.maxPending,
		MaxTerminalRecords: f.maxTerminal,
		MaxRunTime:         f.maxRunTime,
		ClaimTTL:           f.claimTTL,
		Logger:             logger,
		AuthoredProfiles:   f.authored,
		AllowedModels:      f.allowedModels,
	}
	if f.authored && len(cfg.AllowedModels) == 0 {
		cfg.AllowedModels = workerModels(profiles)
	}
	tracing := startTracing(ctx, stdio)
	defer stopTracing(ctx, stdio, tracing)
	if tracing != nil {
		cfg.Observer = tracing.SuperviseObserver
	}
	if f.budgetUSD > 0 {
		cfg.Caps.USD = &f.budgetUSD
	}
	if f.workerTokens > 0 || f.workerUSD > 0 {
		per := f.workerTokens
		if per == 0 {
			per = f.budgetTokens / int64(max(1, min(4, len(names)*2)))
		}
		cfg.PerWorker = ledger.Budget{Tokens: &per, Iterations: int64p(1)}
		if f.workerUSD > 0 {
			cfg.PerWorker.MicroUSD = int64p(int64(math.Round(f.workerUSD * 1e6)))
		}
	}
	q, err := delegation.Open(cfg)
	if err != nil {
		return usage("%v", err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownGrace)
		defer cancel()
		cerr := q.Close(cctx)
		if cerr == nil {
			return
		}
		fmt.Fprintf(stdio.Err, "agentrt mcp delegate: %v\n", cerr)
		if _, failed := errors.AsType[*delegation.StoreFailedError](cerr); failed && err == nil {
			// The store failed while serving: what the server meant to
			// record since may be missing, so the run is not a success.
			err = &exitError{code: ExitFailed, err: fmt.Errorf("the delegation store failed; check it, then restart the server: %w", cerr)}
		}
	}()
	srv, err := mcpserver.NewDelegation(q, mcpserver.DelegationOptions{Version: Version, Logger: logger})
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	if f.httpAddr == "" {
		return serveMCPStdio(ctx, stdio, srv)
	}
	return serveMCPHTTP(ctx, stdio, srv, "agentrt mcp delegate", f.httpAddr, token, logger)
}

// maxCheckOutput bounds what a check command's stderr contributes to a
// verdict's reason.
const maxCheckOutput = 2 << 10

// deliverableOf is the check of the --expect and --check-cmd flags: a
// result containing expect (not empty when expect is ""), and, when cmd
// is given, one for which cmd exits 0 too — the command runs only on a
// result the text check passed.
func deliverableOf(expect, cmd string, timeout time.Duration) supervise.Deliverable {
	d := combinedDeliverable(expect, cmd, timeout)
	d.Identity = deliverableIdentity(expect, cmd, timeout)
	return d
}

// deliverableIdentity names the rule of the --expect, --check-cmd and
// --check-timeout flags (supervise.Deliverable.Identity): canonical
// JSON of the three, the timeout only with a command, which it bounds.
// Only its digest is journaled: a command may carry a credential.
func deliverableIdentity(expect, cmd string, timeout time.Duration) string {
	ms := []canonjson.Member{{Name: "expect", Value: canonjson.StringValue(expect)}}
	if cmd != "" {
		ms = append(ms, canonjson.Member{Name: "checkCmd", Value: canonjson.StringValue(cmd)},
			canonjson.Member{Name: "checkTimeout", Value: canonjson.StringValue(timeout.String())})
	}
	return string(canonjson.Marshal(canonjson.ObjectValue(ms)))
}

// combinedDeliverable is deliverableOf's check, unnamed.
func combinedDeliverable(expect, cmd string, timeout time.Duration) supervise.Deliverable {
	text := expectDeliverable(expect)
	if cmd == "" {
		return text
	}
	command := commandDeliverable(cmd, timeout)
	if expect == "" {
		return command
	}
	return supervise.Deliverable{
		Timeout:  command.Timeout,
		Describe: text.Describe + " and " + strings.TrimPrefix(command.Describe, "a result "),
		Check: func(ctx context.Context, out supervise.Output) (kernel.Verdict, error) {
			v, err := text.Check(ctx, out)
			if err != nil || !v.Passed {
				return v, err
			}
			return command.Check(ctx, out)
		},
	}
}

// commandDeliverable delivers a result when the shell command cmd, given
// the result's text on stdin, exits 0 within timeout. A command that
// cannot start or runs out of time has not judged (an error: not
// delivered).
func commandDeliverable(cmd string, timeout time.Duration) supervise.Deliverable {
	return supervise.Deliverable{
		// The command's own bound, with time to reap it.
		Timeout:  timeout + 10*time.Second,
		Describe: fmt.Sprintf("a result for which the check command %q exits 0", cmd),
		Check: func(ctx context.Context, out supervise.Output) (kernel.Verdict, error) {
			ctx, cancel := context.WithTimeout(ctx, timeout)
			defer cancel()
			c := exec.CommandContext(ctx, "/bin/sh", "-c", cmd)
			c.Stdin = strings.NewReader(out.Text)
			var stderr bytes.Buffer
			c.Stdout = io.Discard
			// Room beyond the shown bytes, so that a credential the cut
			// would split is still recognised whole before it is cut.
			c.Stderr = &limitedWriter{w: &stderr, n: maxCheckOutput + maxCheckSecret}
			// The command's own children die with it: kill its process
			// group, not only the shell.
			// And the group dies with this process (procguard): a
			// supervisor killed mid-check leaves no check running beside
			// its resumed run's.
			c.SysProcAttr = procguard.Attr()
			c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
			c.WaitDelay = 5 * time.Second
			err := c.Start()
			if err == nil {
				if release, gerr := procguard.Group(c.Process.Pid); gerr == nil {
					defer release()
				}
				err = c.Wait()
			}
			if c.Process != nil {
				// Children it left behind die with it.
				_ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL)
			}
			if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil && c.ProcessState != nil && c.ProcessState.Success() {
				// It exited 0; only a child it left behind still held its
				// stderr.
				err = nil
			}
			var exit *exec.ExitError
			switch {
			case err == nil:
				return kernel.Verdict{Passed: true, Reason: "the check command exited 0"}, nil
			case ctx.Err() != nil:
				return kernel.Verdict{}, fmt.Errorf("the check command did not finish within %s", timeout)
			case errors.As(err, &exit):
				reason := fmt.Sprintf("the check command exited %d", exit.ExitCode())
				if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
					// ExitCode is -1 for a process a signal killed: say which.
					reason = fmt.Sprintf("the check command was killed by signal %d (%s)", int(ws.Signal()), ws.Signal())
				}
				if msg := strings.TrimSpace(scrubCheckOutput(stderr.String(), checkSecrets(c.Environ()))); msg != "" {
					reason += ": " + msg
				}
				return kernel.Verdict{Passed: false, Reason: reason}, nil
			}
			return kernel.Verdict{}, fmt.Errorf("the check command could not run: %w", err)
		},
	}
}

// maxCheckSecret is how much of a check command's stderr past what is
// shown is read to recognise a credential the cut would split.
const maxCheckSecret = 512

// minCheckSecret is the shortest value of a credential-bearing variable
// that is redacted from a check command's output: a shorter one ("1",
// "true") is not a credential and would garble the text.
const minCheckSecret = 8

// checkSecrets are the values, longest first, of the variables of
// environ (the check command's environment: this process's) whose names
// say they hold credential material (OPENAI_API_KEY, AGENTRT_DATABASE_URL,
// …; profile.IsCredentialBearingProfileConfigName).
func checkSecrets(environ []string) []string {
	var out []string
	for _, kv := range environ {
		name, value, ok := strings.Cut(kv, "=")
		if ok && len(value) >= minCheckSecret && profile.IsCredentialBearingProfileConfigName(name) {
			out = append(out, value)
		}
	}
	slices.SortFunc(out, func(a, b string) int { return len(b) - len(a) })
	return out
}

// scrubCheckOutput is a check command's stderr as the user and the
// journal see it: every value of secrets and every credential
// search.Scrub recognises replaced, cut to maxCheckOutput bytes (on a
// character boundary).
func scrubCheckOutput(s string, secrets []string) string {
	for _, secret := range secrets {
		s = strings.ReplaceAll(s, secret, "[redacted]")
	}
	s = search.Scrub(s)
	if len(s) > maxCheckOutput {
		s = strings.ToValidUTF8(s[:maxCheckOutput], "")
	}
	return s
}

// limitedWriter keeps the first n bytes written to it and discards the
// rest.
type limitedWriter struct {
	w io.Writer
	n int
}

func (l *limitedWriter) Write(p []byte) (int, error) {
	if l.n > 0 {
		k := min(len(p), l.n)
		l.w.Write(p[:k])
		l.n -= k
	}
	return len(p), nil
}

// workerModels are every model the worker profiles name (default, small,
// seats, subagents, modes: what AllowedModels checks), sorted
// and distinct: what an authored worker may run when no --allowed-model
// says otherwise.
func workerModels(profiles map[string]*profile.Profile) []string {
	var out []string
	for _, p := range profiles {
		out = append(out, supervise.ModelsOf(p)...)
	}
	slices.Sort(out)
	return slices.Compact(out)
}
