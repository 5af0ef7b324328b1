package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

func newSuperviseCmd(stdio IO, open providerOpener) *cobra.Command {
	var sf storeFlags
	var asJSON, resume, watchWorkers, peerMail bool
	var watchMax int
	var journal storeJournalFlags
	var task, providerName, scriptPath, managerScript, baseURL, openaiAPI, expect, checkCmd, runDir, runID, analystsPath, workspace string
	var checkTimeout time.Duration
	var workers, continuity []string
	var budgetTokens, iterations, workerTokens int64
	var budgetUSD, workerUSD float64
	var maxLive, maxTurns, driverAttempts, workerRetry int
	var reprompt string
	var timeout, childGrace, stopIdle, stallAfter time.Duration
	var stopSettles int
	var analystFlags analystModelFlags
	var workerFlags workerProviderFlags
	var seatsPath string
	var fleetFlags superviseFleetFlags
	cmd := &cobra.Command{
		Use: "supervise MANAGER-PROFILE --task TEXT --worker PROFILE...",
		Example: `  # From the repository's root, offline (the scripted provider); the result
  # goes to stdout, progress to stderr, the run to .agent/supervisor/notes-1
  agentrt supervise examples/profiles/delegation-manager.json --worker examples/profiles/note-writer.json --task "Write a one-line release note." --run-id notes-1

  # The same run continued after its process died (settled workers are replayed)
  agentrt supervise examples/profiles/delegation-manager.json --worker examples/profiles/note-writer.json --resume --run-id notes-1 --json

  # From another shell while a run is live: steer a worker, cancel the run
  agentrt steer notes-1 note-writer "Keep it under ten words."
  agentrt cancel notes-1
  agentrt top --once`,
		Short: "Run a manager agent that delegates to workers under one conserved budget",
		Long: `Run the manager profile in MANAGER-PROFILE (harness cli-base, declaring the
coordination verbs it may use as agent_runtime_coordination_* tools) on --task.
Its model spawns workers from the --worker profiles (named by their "name"),
every spawn reserved from one budget (--budget-tokens, --iterations and
optionally --budget-usd; each worker reserves --worker-tokens, one iteration and
--worker-usd unless its spawn asks otherwise). The manager's own model turns
are charged their tokens and dollars and no iteration: --iterations bounds
worker turns only. A result is delivered only when
it contains --expect TEXT and, when --check-cmd CMD is given, CMD (run by
/bin/sh with the result on stdin, within --check-timeout) exits 0; with
neither, when it is not empty.

Workers run on --provider (the run flags: scripted by default, offline, with
--script FILE; openai; anthropic; ...), each recorded in the run store, or on
--worker-provider PROVIDER (all of them) and --worker-provider WORKER=PROVIDER
(the workers of profile WORKER), whose endpoint, when it is not --provider,
is --worker-base-url (and --worker-openai-api); with --fleet QUEUE and
--database URL they run instead as fleet runs on that queue, executed by
agentrt worker processes on any machine (agentrt worker --help). A worker
profile with seats walks its seat chain with --seats FILE (as agentrt run
--seats). The manager's model is,
with --provider scripted, --manager-script FILE, a JSON script of the
manager's turns:

  {"turns": [{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "task": "..."}}],
              "text": "...", "usage": {"inputTokens": 10, "outputTokens": 2, "cost": 0.001}, "hang": false}]}

(usage.cost, the turn's dollars, is optional: without it they are unreported)

and without one a plan that spawns each worker once on the task and awaits
them (no more than --max-live at once). With --provider openai or anthropic the manager's model is the manager
profile's model.default on the same endpoint.

With --provider claude-code, codex or opencode that harness CLI is the
manager (and runs the workers): the manager profile declares that harness
and grants coordination verbs as agent_runtime_coordination_* tools. This
process serves the live run's verbs on 127.0.0.1 behind a per-run token it
writes to RUN-DIR/coordination-endpoint.json (0600, removed at run end),
and the harness gets one MCP server, "agentrt": agentrt mcp coordination
RUN-DIR, a relay to them. The run ends when the harness's turn ends, when
it calls stop, or 60s after its submit_result was accepted. A turn that
fails is driven again in a new session told the run's state and why,
after a wait of 2s doubling per failure (up to --driver-attempts
failures, 8 by default, and three failures in a row that change nothing
end it; a 4xx or a missing CLI ends the run at once; a provider out of
capacity — 429, 503, 529, a quota — pauses without spending an attempt
under --timeout, 15s doubling up to 5m, and counts as a failure without
one); with --reprompt N (or until-complete, under --timeout) a
turn that ended with nothing delivered is driven again with what is
still owed. Stderr says each; --json carries "continuation".

The run's directory is --run-dir DIR, by default
WORKSPACE/.agent/supervisor/RUN-ID (--workspace, the current directory by
default; --run-id, generated by default): its journal, the manager's own
stream (root-stream.jsonl), one log per worker label (workers/LABEL.ndjson),
state.json and progress.ndjson. --resume continues the run a journal in the
directory holds after its process exited (--run-dir, or --run-id in the
workspace): settled workers are replayed, not run again; a directory that
does not exist or holds nothing of a run, or holds another run than
--run-id names, is refused (exit 2), not started as a new run. It keeps the task
and budget the journal holds: --task, --budget-tokens, --iterations,
--budget-usd, --worker-tokens and --worker-usd may be left out, and one
given that differs from the journal is refused (exit 2). While it runs,
another process steers and cancels it with agentrt supervise steer and
agentrt supervise cancel.

Progress (spawns, settlements and their verdicts, steers, cancels) shows on
stderr; the result (winner or no winner with its reason, the spend with
what is unknown shown as unknown, the run dir) on stdout, or as JSON with
--json: agentrt's members (status, winner, reason, workers, spent, manager,
…) and beside them the spec's SupervisedResult (kind, out, outRef, verdict,
tree, downCount, spentTotal and spentBreakdown as the spec's Spend, whose
tokensKnown/usdKnown are explicit and whose unknown amounts are null); a
verdict carries valid and notes beside passed and reason; a worker that
spent past its reservation carries budgetViolation{overspent[{channel,
reserved, spent}]} in workers and tree.nodes (a fact: its state stands). A result its
journal (or store) could not fully hold is still shown, its winner as NOT
RECORDED with what was lost, and under --json with a journalIncomplete
member {count, lost[{kind, node}], error}; the command then exits 1.

With OTEL_EXPORTER_OTLP_ENDPOINT set, the supervised run is traced over
OTLP/HTTP: a supervisor.run span, a supervisor.node span per worker and each
worker's run under its node, in a trace derived from the run id.

With --peer-mail (§9) each worker is given send_mail and read_mail, to
mail its live siblings (ask, tell, challenge, answer) within the
reference's bounds (8 sends and 16 received messages, 32 KiB of body,
per worker), as an MCP server of its own, agent-runtime-peer-mail, on a
loopback endpoint whose path is its capability; the sender is the
worker holding it. Every attempt, delivered or refused, is a mail
record in RUN-DIR/coordination-log.jsonl, and --resume (given
--peer-mail again) rebuilds the mailboxes from them. The workers must
run on claude-code, codex or opencode, in this process (not --fleet).

SIGINT (Ctrl-C) or SIGTERM cancels the run's context: live workers are
cancelled and the result is printed as no winner, reason aborted (the
reference's caller abort; cancelled is only agentrt supervise cancel's,
with its source and operation id), cancellation source "context", exit 1.
The run was interrupted, not ended: --resume drives it on. A second signal
stops the process at once.

Exit status: 0 when the run has a winner its journal holds, 1 when it has
none or its journal lost part of it, 2 on usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if err := dollarFlags(usdFlag("--budget-usd", budgetUSD), usdFlag("--worker-usd", workerUSD)); err != nil {
				return err
			}
			if err := zeroDollarCap(cmd.Flags().Changed("budget-usd"), budgetUSD); err != nil {
				return err
			}
			switch {
			case strings.TrimSpace(task) == "" && !resume:
				return usage("--task is required")
			case len(workers) == 0:
				return usage("at least one --worker PROFILE is required")
			case cmd.Flags().Changed("check-cmd") && strings.TrimSpace(checkCmd) == "":
				return usage("--check-cmd is empty: give the shell command that judges a result, or leave the flag out")
			case checkTimeout <= 0:
				return usage("--check-timeout must be positive")
			case timeout < 0 || (resume && timeout != 0):
				return timeoutFlag(timeout, resume)
			case budgetTokens <= 0 || iterations <= 0:
				return usage("--budget-tokens and --iterations must be positive")
			case budgetUSD < 0 || workerUSD < 0 || workerTokens < 0 || maxLive < 0:
				return usage("budgets and --max-live cannot be negative")
			case cmd.Flags().Changed("worker-tokens") && workerTokens == 0:
				return usage(zeroWorkerTokens)
			case resume && runDir == "" && runID == "":
				return usage("--resume needs the run to continue: its --run-dir, or its --run-id in the --workspace")
			case managerScript != "" && providerName != "scripted":
				return usage("--manager-script applies to --provider scripted only")
			case maxTurns < 0:
				return usage("--max-turns cannot be negative (0: the kernel's backstop)")
			case driverAttempts < 0:
				return usage("--driver-attempts cannot be negative")
			case workerRetry < 0:
				return usage("--worker-retry cannot be negative")
			case childGrace < 0:
				return usage("--child-settle-grace cannot be negative")
			case stallAfter < 0:
				return usage("--stall-after cannot be negative (0: the default, %s)", supervise.StallAfter)
			case stopSettles < 0 || stopIdle < 0:
				return usage("--stop-after-settles and --stop-when-idle cannot be negative")
			case (cmd.Flags().Changed("driver-attempts") || reprompt != "") && !isHarnessProvider(providerName):
				return usage("--driver-attempts and --reprompt drive an external-harness manager again (--provider claude-code, codex or opencode); the manager of --provider %s runs its loop in process", providerName)
			}
			if err := checkCommandFound(cmd.Context(), checkCmd); err != nil {
				return err
			}
			repromptOpt, err := repromptFlag(reprompt, timeout, resume)
			if err != nil {
				return err
			}
			var stopRule supervise.StopRule
			if stopSettles > 0 || stopIdle > 0 {
				// The no-progress bound (§3.6 stopRule).
				if stopRule, err = (supervise.NoProgressFor{Settles: stopSettles, Within: stopIdle}).Rule(); err != nil {
					return usage("%v", err)
				}
			}
			if err := checkOperatorRun(cmd, task, expect, runID); err != nil {
				return err
			}
			if err := journal.check(runID); err != nil {
				return err
			}
			mgr, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			profiles, names, err := loadWorkerProfiles(stdio, workers, asJSON)
			if err != nil {
				return err
			}
			external := isHarnessProvider(providerName)
			if external && string(mgr.Harness) != providerName {
				return usage("--provider %s runs the manager on that harness: the manager profile must declare \"harness\": %q (it declares %q)", providerName, providerName, mgr.Harness)
			}
			if !external {
				if err := checkRouterManager(args[0], mgr); err != nil {
					return err
				}
			}
			lenses, err := readAnalysts(stdio, analystsPath)
			if err != nil {
				return err
			}
			analystModel, err := analystFlags.open(providerName, baseURL, openaiAPI)
			if err != nil {
				return err
			}
			if err := fleetFlags.check(cmd, sf); err != nil {
				return err
			}
			wp, err := workerFlags.parse(names, "worker", "")
			if err != nil {
				return err
			}
			byProfile, err := continuityFlags(continuity, names)
			if err != nil {
				return err
			}
			ps := newProviders(open, providerName, scriptPath, baseURL, openaiAPI, workerFlags)
			if seatsPath != "" {
				if ps.accounts, err = openWorkerSeats(stdio, seatsPath, profiles); err != nil {
					return err
				}
			}
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			if runDir == "" {
				// The layout's default place, where agentrt steer, cancel
				// and top find the run by its id.
				if runID == "" {
					runID = kernel.NewID("supervise")
				}
				runDir = supervise.RunDirIn(workspace, runID)
			}
			// A resumed run keeps the task and budget its journal holds:
			// a flag not given adopts the journaled value, one given must
			// match it (supervise refuses it otherwise).
			var started *supervise.Record
			if !resume {
				if err := newRunDir(runDir, journal.inStore); err != nil {
					return err
				}
			}
			if resume {
				where := supervise.Options{RunDir: runDir, RunID: runID}
				journal.apply(&where, s)
				if err := resumableRunDir(ctx, where); err != nil {
					return err
				}
				if started, err = journaledStart(ctx, where); err != nil {
					return err
				}
				if err := resumedByThisCommand(started, where, false); err != nil {
					return err
				}
			}
			if started == nil && strings.TrimSpace(task) == "" {
				return usage("--task is required (the run to resume has no journal yet)")
			}
			if started != nil && !cmd.Flags().Changed("task") {
				task = started.Task
			}
			var router contract.ChatModel
			if !external {
				if router, err = routerModel(providerName, managerScript, baseURL, openaiAPI, mgr, names, task, maxLive); err != nil {
					return err
				}
			}
			if peerMail {
				if err := ps.peerMailWorkers(wp, names, fleetFlags.queue != ""); err != nil {
					return err
				}
			}
			exec, err := ps.executor(wp, s)
			if err != nil {
				return err
			}
			if peerMail {
				// §9 peer mail: each worker's send_mail and read_mail are
				// served on a loopback endpoint of its own, mounted in its
				// harness as supervise.PeerMailAlias.
				if err := mountPeerMail(exec); err != nil {
					return err
				}
			}
			onFleet, closeFleet, err := fleetFlags.executor(ctx, sf)
			if err != nil {
				return err
			}
			defer closeFleet()
			if onFleet != nil {
				exec = onFleet
			}
			var brain supervise.Brain
			if external {
				provider, err := ps.get(providerName)
				if err != nil {
					return err
				}
				// The harness is the manager: it reaches this run's verbs
				// through agentrt mcp coordination RUN-DIR, a relay to the
				// endpoint this process serves while the run is live.
				hb, err := coordmcp.NewHarnessBrain(mgr, provider, coordmcp.HarnessOptions{Store: s, Version: Version,
					Logger: warnLogger(stdio.Err)})
				if err != nil {
					return usage("%v", err)
				}
				brain = hb
			}
			perWorker := workerTokens
			if perWorker == 0 {
				perWorker = budgetTokens / int64(max(1, min(4, len(names)*2)))
			}
			o := supervise.Options{
				Budget:         ledger.Budget{Tokens: &budgetTokens, Iterations: &iterations},
				PerWorker:      ledger.Budget{Tokens: &perWorker, Iterations: int64p(1)},
				MaxLiveWorkers: maxLive,
				Profiles:       profiles,
				Deliverable:    deliverableOf(expect, checkCmd, checkTimeout),
				Executor:       exec,
				Router:         router,
				Brain:          brain,
				MaxTurns:       maxTurns,
				RunDir:         runDir,
				RunID:          runID,
				Resume:         resume,
				// A run that already ended answers with its journaled
				// result: --resume never drives its manager (and spends)
				// again.
				ReturnEnded:  resume,
				Analysts:     lenses,
				AnalystModel: analystModel,
				// The run's record, beside its workers' runs: agentrt
				// runs show RUN-ID.
				Store:               s,
				DriverRetry:         supervise.DriverRetry{MaxAttempts: driverAttempts},
				ChildSettleGrace:    childGrace,
				StallAfter:          stallAfter,
				ContinuityByProfile: byProfile,
				WorkerRetry:         supervise.WorkerRetry{MaxAttempts: workerRetry},
				StopRule:            stopRule,
				Reprompt:            repromptOpt,
				OnDriverAttempt: func(a supervise.DriverAttempt) {
					progressDriverAttempt(stdio.Err, a)
				},
				Logger: warnLogger(stdio.Err),
			}
			if peerMail {
				o.PeerMail = &supervise.PeerMail{}
			}
			if watchWorkers || cmd.Flags().Changed("watch-max-findings") {
				o.WatchWorkers = &supervise.WatchWorkers{MaxFindingsPerWorker: watchMax}
			}
			journal.apply(&o, s)
			if timeout > 0 {
				o.Deadline = time.Now().Add(timeout)
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			holder := newJournalHolder(tracing.SuperviseObserver())
			o.Observer = holder
			if budgetUSD > 0 {
				o.Budget.MicroUSD = int64p(int64(math.Round(budgetUSD * 1e6)))
			}
			if workerUSD > 0 {
				o.PerWorker.MicroUSD = int64p(int64(math.Round(workerUSD * 1e6)))
			}
			if started != nil && started.Budget != nil {
				o.Budget, o.PerWorker = resumeBudgets(cmd, budgetTokens, iterations, workerTokens, budgetUSD, workerUSD)
			}
			prog := startProgress(ctx, stdio.Err, journal.feed(s, runID, runDir, holder), resume, holder.started())
			res, err := supervise.Supervise(ctx, mgr, task, o)
			prog.stop()
			// A result its journal does not fully hold is still shown;
			// the command then fails, naming what was lost.
			incomplete := journalIncomplete(err)
			if err != nil && !incomplete {
				if refusal := resumeRefusal(err, superviseResumeFlags); refusal != nil {
					return refusal
				}
				if refusal := perWorkerRefusal(err); refusal != nil {
					return refusal
				}
				if refusal := runDirRefusal(err, resume); refusal != nil {
					return refusal
				}
				if errors.Is(err, supervise.ErrInvalidOptions) || errors.Is(err, supervise.ErrUnsupportedHarness) {
					return usage("%v", err)
				}
				return &exitError{code: ExitFailed, err: err}
			}
			var lost error
			if incomplete {
				lost = err
			}
			if asJSON {
				if err := writeJSON(stdio.Out, journalLossValue(supervisedValue(res, runDir), lost)); err != nil {
					return err
				}
			} else {
				printSupervisedLost(stdio.Out, res, runDir, lost)
			}
			if incomplete {
				return &exitError{code: ExitFailed, err: err}
			}
			if res.Status != supervise.StatusWinner {
				return refused()
			}
			return nil
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&task, "task", "", "the manager's task (required, except with --resume, which continues the journaled one)")
	f.StringArrayVar(&workers, "worker", nil, "a worker profile the manager may spawn, by its name (repeatable, at least one)")
	f.StringVar(&providerName, "provider", "scripted", "provider the workers (and, for openai, anthropic, claude-code, codex and opencode, the manager) run on")
	f.StringVar(&baseURL, "base-url", "", "the model endpoint of the provider (default: the vendor's)")
	f.StringVar(&openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses")
	f.StringVar(&scriptPath, "script", "", "script for the workers' scripted provider (default: answer every task)")
	f.StringVar(&managerScript, "manager-script", "", "script of the manager's scripted model (default: spawn each worker once and await them)")
	f.StringVar(&expect, "expect", "", "deliver only a result that contains this text")
	f.StringVar(&checkCmd, "check-cmd", "", "deliver only a result for which this shell command, given the result on stdin, exits 0 (a first word /bin/sh cannot find is refused before the run)")
	f.DurationVar(&checkTimeout, "check-timeout", 2*time.Minute, "how long --check-cmd may run before the result counts as not judged")
	f.StringVar(&runDir, "run-dir", "", "directory of the run's journal and logs (default: WORKSPACE/.agent/supervisor/RUN-ID)")
	f.StringVar(&workspace, "workspace", ".", "workspace root of the default run directory")
	f.StringVar(&runID, "run-id", "", "the run's id, the root of its worker ids and its directory's name: UTF-8 without control characters, '/' or '\\', and not '.' or '..' (default: generated)")
	f.BoolVar(&resume, "resume", false, "continue the run journaled in --run-dir (or the --run-id's directory)")
	journal.register(cmd)
	f.StringVar(&analystsPath, "analysts", "", analystsFlagUsage+"; the manager runs them with run_analyst")
	f.StringArrayVar(&continuity, "continuity", nil, "WORKER=resume (or fresh): the continuity of a spawn of worker profile WORKER that names none — resume re-attaches to the latest settled worker of its label (the profile name without one), and spawns fresh when there is none (repeatable; default: fresh)")
	f.BoolVar(&watchWorkers, "watch-workers", false, "watch each worker's tool calls as it runs (the stuck-loop and error-streak detectors): a detection reaches the manager's await_event as a finding while the worker still runs")
	f.BoolVar(&peerMail, "peer-mail", false, "peer mail (§9): give each worker send_mail and read_mail, an MCP server of its own (agent-runtime-peer-mail) to mail its live siblings, within the reference's bounds (8 sends and 16 received messages, 32 KiB, per worker); every attempt is journaled as a mail coordination record. Workers must run on claude-code, codex or opencode (not --fleet); give it again with --resume")
	f.IntVar(&watchMax, "watch-max-findings", 0, "with --watch-workers (which it implies): the findings raised per worker at most (0: 3; negative: unlimited)")
	analystFlags.register(cmd)
	workerFlags.register(cmd, "worker")
	fleetFlags.register(cmd)
	cmd.Flags().StringVar(&seatsPath, "seats", "", "a JSON file naming the provider of each seat stage, as for agentrt run --seats: a worker whose profile has seats walks its chain, moving on to its next stage (the same worker) on a quota refusal; every stage is resolved before the run starts")
	f.Int64Var(&budgetTokens, "budget-tokens", 100_000, "token ceiling of the whole run, manager included")
	f.Float64Var(&budgetUSD, "budget-usd", 0, "dollar ceiling of the whole run, positive (default: none)")
	f.Int64Var(&iterations, "iterations", 8, "worker iteration ceiling of the whole run (each worker run is one)")
	f.Int64Var(&workerTokens, "worker-tokens", 0, "tokens each worker reserves (default: a quarter of --budget-tokens, half with one worker profile)")
	f.Float64Var(&workerUSD, "worker-usd", 0, "dollars each worker reserves (default: none)")
	f.IntVar(&maxLive, "max-live", 0, "most workers live at once (default: no cap)")
	f.IntVar(&maxTurns, "max-turns", 0, "most tool turns of the manager's model (default: the kernel's backstop)")
	f.Var((*graceFlag)(&childGrace), "child-settle-grace", "when the manager returns or fails on its own (not by stop, a cancel or the deadline), how long its live workers may go on before they are cancelled, or \"wait\" until they settle (bounded by --timeout; a worker that delivers meanwhile can still win; default: cancelled at once)")
	f.IntVar(&driverAttempts, "driver-attempts", 0, "with a claude-code, codex or opencode manager: most failed manager turns before the run ends driver-failed (default 8; 1 retries none); three in a row that change nothing end it sooner")
	f.IntVar(&stopSettles, "stop-after-settles", 0, "the no-progress bound: end the run once this many workers in a row settled without improving on the best delivered result (default: no such bound)")
	f.IntVar(&workerRetry, "worker-retry", 0, "start a worker up to N times in all when its backend refused it before anything ran (a pre-spawn refusal such as a bridge's acquire timeout, with nothing spent), waiting 5s doubling to 60s, at most 15m, within the run's deadline; 0 or 1: never retry")
	f.DurationVar(&stallAfter, "stall-after", 0, "how long a running worker may go without activity before observe_agent reports it stalled (the manager's reading; nothing is killed; default "+supervise.StallAfter.String()+")")
	f.DurationVar(&stopIdle, "stop-when-idle", 0, "the no-progress bound: end the run once no worker settled for this long while none waits on a decision (default: no such bound)")
	f.StringVar(&reprompt, "reprompt", "", "with a claude-code, codex or opencode manager: how many times a manager turn that ended with nothing delivered is driven again with what is still owed (N, or until-complete, which needs --timeout; default: never)")
	f.DurationVar(&timeout, "timeout", 0, "the run's deadline, from its start: past it no worker is admitted, live ones are cancelled and the run ends budget-exhausted; journaled, so --resume keeps it (and refuses --timeout)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newSuperviseSteerCmd(stdio), newSuperviseCancelCmd(stdio))
	return cmd
}

func int64p(v int64) *int64 { return &v }

// continuityFlags reads the --continuity WORKER=MODE flags into
// supervise.Options.ContinuityByProfile (§3.6 continuityByProfile),
// refusing a profile that is not a --worker's, a mode that is neither
// resume nor fresh, and a profile named twice.
func continuityFlags(specs, names []string) (map[string]supervise.Continuity, error) {
	if len(specs) == 0 {
		return nil, nil
	}
	byProfile := map[string]supervise.Continuity{}
	for _, spec := range specs {
		name, mode, ok := strings.Cut(spec, "=")
		var c supervise.Continuity
		switch {
		case !ok:
			return nil, usage("--continuity %q: give WORKER=resume or WORKER=fresh", spec)
		case !slices.Contains(names, name):
			return nil, usage("--continuity %s: no --worker profile %q (known: %s)", spec, name, strings.Join(names, ", "))
		case mode == "resume":
			c = supervise.ContinuityResume
		case mode == "fresh":
			c = supervise.ContinuityFresh
		default:
			return nil, usage("--continuity %s: the mode is resume or fresh, not %q", spec, mode)
		}
		if _, twice := byProfile[name]; twice {
			return nil, usage("--continuity names worker profile %q twice", name)
		}
		byProfile[name] = c
	}
	return byProfile, nil
}

func expectDeliverable(expect string) supervise.Deliverable {
	check := kernel.ExpectCheck(expect)
	d := supervise.Deliverable{Describe: "a result that is not empty"}
	if expect != "" {
		d.Describe = fmt.Sprintf("a result that contains %q", expect)
	}
	d.Check = func(ctx context.Context, out supervise.Output) (kernel.Verdict, error) {
		return check(ctx, kernel.Outcome{Text: out.Text})
	}
	return d
}

// routerModel is the manager's chat model: a script, the default plan
// (planModel), or the manager profile's model on the openai or anthropic
// endpoint. A scripted manager plays its script FromConversation, as a
// real model answers: a manager resumed from its journaled transcript
// goes on from the turn it reached, not from the script's first (its
// spawns again).
//
// maxLive is the run's --max-live (0: no cap), which the default plan
// keeps to.
func routerModel(providerName, scriptPath, baseURL, openaiAPI string, mgr *profile.Profile, workers []string, task string, maxLive int) (contract.ChatModel, error) {
	model := ""
	if mgr.Model != nil && mgr.Model.Default != nil {
		model = *mgr.Model.Default
		if i := strings.IndexByte(model, '/'); i >= 0 {
			model = model[i+1:]
		}
	}
	switch providerName {
	case "scripted":
		if scriptPath == "" {
			return planModel{script: defaultPlan(workers, task, maxLive)}, nil
		}
		data, err := readFile(scriptPath)
		if err != nil {
			return nil, err
		}
		script, err := parseManagerScript(data)
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", scriptPath, err)}
		}
		script.FromConversation = true
		return scripted.NewChatModel(script), nil
	case "openai", "anthropic":
		return endpointModel(providerName, model, baseURL, openaiAPI)
	}
	return nil, usage("--provider %s runs workers only; the manager's model needs scripted, openai or anthropic", providerName)
}

// endpointModel is model on the openai or anthropic endpoint of the
// provider flags, its key read from the vendor's environment variable.
func endpointModel(providerName, model, baseURL, openaiAPI string) (contract.ChatModel, error) {
	var m contract.ChatModel
	var err error
	switch providerName {
	case "openai":
		m, err = openai.New(openai.Options{API: openai.API(openaiAPI), BaseURL: baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: model})
	case "anthropic":
		m, err = anthropic.NewModel(anthropic.Options{BaseURL: baseURL, APIKey: os.Getenv("ANTHROPIC_API_KEY"), Model: model})
	default:
		return nil, usage("--provider %s has no model endpoint; use openai or anthropic", providerName)
	}
	if err != nil {
		return nil, usage("%v", err)
	}
	return m, nil
}

// plainCommandWord is a --check-cmd's first word that names a command
// by itself: no quoting, expansion, redirection or assignment.
var plainCommandWord = regexp.MustCompile(`^[A-Za-z0-9_./+-]+$`)

// checkCommandFound refuses, before anything runs, a --check-cmd whose
// first word /bin/sh cannot find (command -v: a builtin, keyword, function
// or executable), so that a typo'd or missing checker is a usage error
// rather than a whole run's workers judged "exited 127" and no winner. A
// first word that is not plain (a quote, a variable, an assignment, a
// subshell) is left to the shell.
func checkCommandFound(ctx context.Context, checkCmd string) error {
	fields := strings.Fields(checkCmd)
	if len(fields) == 0 || !plainCommandWord.MatchString(fields[0]) {
		return nil
	}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	probe := exec.CommandContext(ctx, "/bin/sh", "-c", `command -v "$1" >/dev/null 2>&1`, "sh", fields[0])
	err := probe.Run()
	var exit *exec.ExitError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &exit) && ctx.Err() == nil:
		return usage("--check-cmd runs %q, which /bin/sh cannot find: install it, put it on PATH, or fix --check-cmd", fields[0])
	default:
		// No /bin/sh, or it hung: the check itself will say so.
		return nil
	}
}

// exampleManager is a manager profile of the repository a user can run
// as agentrt supervise's MANAGER-PROFILE, named where one was refused.
const exampleManager = "examples/profiles/delegation-manager.json"

// checkRouterManager refuses, before anything runs, a MANAGER-PROFILE at
// path that the in-process (cli-base) manager cannot run, saying what a
// manager profile is: a harness CLI's profile without that --provider, or
// a worker's profile (declaring tools other than the coordination verbs,
// or none of them), the mistake of giving a --worker profile as the
// manager. supervise.NewRouterBrain refuses the same at the run's start,
// in its own terms.
func checkRouterManager(path string, mgr *profile.Profile) error {
	switch mgr.Harness {
	case "", harness.CLIBase:
	default:
		if isHarnessProvider(string(mgr.Harness)) {
			return usage("MANAGER-PROFILE %s declares harness %q: run it with --provider %s, or give a cli-base manager profile such as %s", path, mgr.Harness, mgr.Harness, exampleManager)
		}
		return usage("MANAGER-PROFILE %s declares harness %q, which agentrt supervise cannot run as the manager (cli-base, claude-code, codex or opencode): give a manager profile such as %s", path, mgr.Harness, exampleManager)
	}
	var other []string
	granted := 0
	for name, on := range mgr.Tools {
		if !on {
			continue
		}
		if v, ok := strings.CutPrefix(name, supervise.ToolPrefix); ok && slices.Contains(supervise.Verbs(), v) {
			granted++
			continue
		}
		other = append(other, name)
	}
	slices.Sort(other)
	switch {
	case len(other) > 0:
		return usage("MANAGER-PROFILE %s is not a manager profile: it declares %s, which a cli-base manager cannot use; a manager declares only %s* coordination verbs (spawn_worker, await_event, ...), as %s does (was it meant as a --worker?)", path, strings.Join(other, ", "), supervise.ToolPrefix, exampleManager)
	case granted == 0:
		return usage("MANAGER-PROFILE %s is not a manager profile: it grants no coordination verb; a manager declares %s%s (and the other %s* verbs it uses), as %s does", path, supervise.ToolPrefix, supervise.VerbSpawnWorker, supervise.ToolPrefix, exampleManager)
	}
	return nil
}

// isHarnessProvider reports whether --provider names an external
// harness CLI, which then runs the manager too (coordmcp.HarnessBrain).
func isHarnessProvider(name string) bool {
	return name == "claude-code" || name == "codex" || name == "opencode"
}

// defaultPlan spawns each worker once on the task, awaits every
// settlement, and ends; with maxLive > 0, never more than maxLive at
// once.
func defaultPlan(workers []string, task string, maxLive int) scripted.ChatScript {
	return defaultPlanAwaiting(workers, len(workers), task, maxLive)
}

// defaultPlanAwaiting is defaultPlan awaiting n events (settlements and
// findings) instead of one per worker. With maxLive > 0 it spawns the
// first maxLive workers, then each further one after awaiting an event
// (a settlement frees its slot), so none is refused max-live-workers.
// The plan plays FromConversation (planModel plays it so, and redoes
// the work a resumed run lost): resumed, it goes on from the turn its
// journaled transcript reached.
func defaultPlanAwaiting(workers []string, n int, task string, maxLive int) scripted.ChatScript {
	first := len(workers)
	if maxLive > 0 && maxLive < first {
		first = maxLive
	}
	spawn := func(i int) contract.ChatEvent {
		return managerCall(fmt.Sprintf("s%d", i+1), supervise.VerbSpawnWorker, map[string]any{"profile": workers[i], "label": workers[i], "task": task})
	}
	awaited := 0
	await := func() contract.ChatEvent {
		awaited++
		return managerCall(fmt.Sprintf("a%d", awaited), supervise.VerbAwaitEvent, map[string]any{"timeoutMs": supervise.MaxAwaitTimeout.Milliseconds()})
	}
	var spawns []contract.ChatEvent
	for i := range first {
		spawns = append(spawns, spawn(i))
	}
	turns := []scripted.ChatTurn{{Events: spawns}}
	for i := first; i < len(workers); i++ {
		turns = append(turns, scripted.ChatTurn{Events: []contract.ChatEvent{await()}}, scripted.ChatTurn{Events: []contract.ChatEvent{spawn(i)}})
	}
	var awaits []contract.ChatEvent
	for awaited < n {
		awaits = append(awaits, await())
	}
	if len(awaits) > 0 {
		turns = append(turns, scripted.ChatTurn{Events: awaits})
	}
	return scripted.ChatScript{Turns: append(turns, scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text("Every worker settled.")}}), FromConversation: true}
}

func managerCall(id, verb string, args any) contract.ChatEvent {
	b, _ := json.Marshal(args)
	return scripted.Call(id, supervise.ToolPrefix+verb, string(b))
}

// managerScript is the JSON form of a scripted manager model.
type managerScript struct {
	Turns []struct {
		Calls []struct {
			Verb string          `json:"verb"`
			Tool string          `json:"tool"`
			Args json.RawMessage `json:"args"`
		} `json:"calls"`
		Text  string `json:"text"`
		Usage *struct {
			InputTokens  int64 `json:"inputTokens"`
			OutputTokens int64 `json:"outputTokens"`
			// Cost is the turn's dollars, unreported when absent.
			Cost *float64 `json:"cost"`
		} `json:"usage"`
		Hang bool `json:"hang"`
	} `json:"turns"`
	Cycle bool `json:"cycle"`
}

// zeroWorkerTokens refuses an explicit --worker-tokens 0 (agentrt
// supervise, agentrt mcp delegate): 0 is not "the default share".
const zeroWorkerTokens = "--worker-tokens 0 would reserve no tokens for a worker: give a positive count, or leave the flag out (the default is a share of --budget-tokens)"

// managerScriptMembers are the members each object of a manager script
// may hold, by where it sits: the script, a turn, a call, a usage — the
// JSON names of managerScript's fields (keep the two together).
var managerScriptMembers = struct{ script, turn, call, usage []string }{
	script: []string{"turns", "cycle"},
	turn:   []string{"calls", "text", "usage", "hang"},
	call:   []string{"verb", "tool", "args"},
	usage:  []string{"inputTokens", "outputTokens", "cost"},
}

// checkManagerScriptShape reads data strictly (canonjson: one document, a
// member given once, bounded nesting) and refuses a member the script's
// form does not have, each refusal naming its JSON pointer. encoding/json
// alone would read a member given twice last-wins and name neither where
// a document breaks off nor where an unknown member sits.
func checkManagerScriptShape(data []byte) error {
	v, err := canonjson.DecodeWith(data, canonjson.DecodeOptions{MaxValues: -1})
	if err != nil {
		return err
	}
	unknown := func(o canonjson.Value, at string, known []string) error {
		if o.Kind() != canonjson.Object {
			return nil // encoding/json says what the value should be
		}
		for _, m := range o.Members() {
			if !slices.Contains(known, m.Name) {
				return fmt.Errorf("at %q: unknown member %q (known: %s)", string(canonjson.AppendPointerToken([]byte(at), m.Name)), m.Name, strings.Join(known, ", "))
			}
		}
		return nil
	}
	if err := unknown(v, "", managerScriptMembers.script); err != nil {
		return err
	}
	turns, _ := v.Get("turns")
	if turns.Kind() != canonjson.Array {
		return nil
	}
	for i, turn := range turns.Items() {
		at := fmt.Sprintf("/turns/%d", i)
		if err := unknown(turn, at, managerScriptMembers.turn); err != nil {
			return err
		}
		if turn.Kind() != canonjson.Object {
			continue
		}
		if u, ok := turn.Get("usage"); ok {
			if err := unknown(u, at+"/usage", managerScriptMembers.usage); err != nil {
				return err
			}
		}
		if calls, ok := turn.Get("calls"); ok && calls.Kind() == canonjson.Array {
			for j, c := range calls.Items() {
				if err := unknown(c, fmt.Sprintf("%s/calls/%d", at, j), managerScriptMembers.call); err != nil {
					return err
				}
			}
		}
	}
	return nil
}

func parseManagerScript(data []byte) (scripted.ChatScript, error) {
	if err := checkManagerScriptShape(data); err != nil {
		return scripted.ChatScript{}, err
	}
	var ms managerScript
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ms); err != nil {
		return scripted.ChatScript{}, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return scripted.ChatScript{}, fmt.Errorf("the script is followed by more data at byte %d; give one JSON object", dec.InputOffset())
	}
	if len(ms.Turns) == 0 {
		return scripted.ChatScript{}, errors.New("the script has no turns")
	}
	script := scripted.ChatScript{Cycle: ms.Cycle}
	n := 0
	for _, t := range ms.Turns {
		var turn scripted.ChatTurn
		for _, c := range t.Calls {
			n++
			args := string(c.Args)
			if args == "" {
				args = "{}"
			}
			name := supervise.ToolPrefix + c.Verb
			switch {
			case c.Verb != "" && c.Tool != "":
				return scripted.ChatScript{}, fmt.Errorf("call %d names a verb and a tool; give one", n)
			case c.Tool != "":
				name = c.Tool // a tool by its own name, such as an analyst's trace tool
			case c.Verb == "":
				return scripted.ChatScript{}, fmt.Errorf("call %d names no verb (a coordination verb) or tool", n)
			}
			turn.Events = append(turn.Events, scripted.Call(fmt.Sprintf("call%d", n), name, args))
		}
		if t.Text != "" {
			turn.Events = append(turn.Events, scripted.Text(t.Text))
		}
		switch u := t.Usage; {
		case u != nil && u.Cost != nil:
			if *u.Cost < 0 || math.IsInf(*u.Cost, 0) || math.IsNaN(*u.Cost) {
				return scripted.ChatScript{}, fmt.Errorf("turn %d: usage.cost %v is not a finite non-negative number of dollars", len(script.Turns)+1, *u.Cost)
			}
			turn.Events = append(turn.Events, scripted.UsageCost(u.InputTokens, u.OutputTokens, *u.Cost))
		case u != nil:
			turn.Events = append(turn.Events, scripted.Usage(u.InputTokens, u.OutputTokens, contract.UsageDelta))
		}
		turn.Hang = t.Hang
		script.Turns = append(script.Turns, turn)
	}
	return script, nil
}

// progress prints the journal's records on w as the run appends them.
type progress struct {
	cancel context.CancelFunc
	// cutReads releases the reads' context once stopped.
	cutReads context.CancelFunc
	done     chan struct{}
	once     sync.Once
}

// progressReadTimeout bounds each read of the journal the progress
// lines follow: a store that stops answering delays the command's end
// by at most this, never past every deadline (the read in flight when
// the run ends; no final read follows one that timed out).
const progressReadTimeout = 5 * time.Second

// startProgress prints j's records on w as the run appends them, once
// started is closed (the run's observer saw it start: it holds the
// journal); a run refused before it started (another process holds the
// run dir or the store's lease, the options differ from the journal)
// prints nothing, neither the resume line nor the holder's records. A
// nil started means the run has started.
func startProgress(ctx context.Context, w io.Writer, j journalFeed, resume bool, started <-chan struct{}) *progress {
	readCtx, cutReads := context.WithCancel(context.WithoutCancel(ctx))
	ctx, cancel := context.WithCancel(ctx)
	p := &progress{cancel: cancel, cutReads: cutReads, done: make(chan struct{})}
	read := func(ctx context.Context) ([]supervise.Record, error) {
		ctx, cancel := context.WithTimeout(ctx, progressReadTimeout)
		defer cancel()
		return j.next(ctx)
	}
	// What the journal holds already is no progress of this process: a
	// resume says how much it holds, and a run refused for reusing a
	// journaled run id shows none of it as if it ran again. It is read
	// now, before the run appends, and said only once the run started.
	prior, err := read(ctx)
	go func() {
		defer close(p.done)
		if !awaitStart(ctx, started) {
			return
		}
		if err == nil && resume {
			fmt.Fprintln(w, resumeLine(j.name, prior))
		}
		t := time.NewTicker(supervise.ControlScanInterval)
		defer t.Stop()
		timedOut := false
		for {
			stopped := ctx.Err() != nil
			if stopped && timedOut {
				// The store did not answer the last read: asking it
				// again would only hold the command's end.
				return
			}
			recs, err := read(readCtx)
			timedOut = errors.Is(err, context.DeadlineExceeded)
			if err == nil {
				for _, r := range recs {
					if line := progressLine(r); line != "" {
						fmt.Fprintln(w, line)
					}
				}
			}
			if stopped {
				return
			}
			select {
			case <-ctx.Done():
			case <-t.C:
			}
		}
	}()
	return p
}

// awaitStart reports whether the run started (started closed, or nil)
// before ctx ended.
func awaitStart(ctx context.Context, started <-chan struct{}) bool {
	if started == nil {
		return true
	}
	select {
	case <-started:
		return true
	case <-ctx.Done():
		select {
		case <-started:
			return true
		default:
			return false
		}
	}
}

// runDirRefusal is err, when the run dir and run id the flags give do
// not go together, as a usage error (exit 2) of agentrt supervise and
// agentrt graph alike, said in the command's terms; otherwise nil. A new
// run whose id already has a journal there (*supervise.RunExistsError)
// needs --resume or another dir; a run dir that holds another run than
// --run-id names (*supervise.RunDirMismatchError) needs that run's id
// to resume it, or another dir. resume is whether --resume was given.
func runDirRefusal(err error, resume bool) error {
	var exists *supervise.RunExistsError
	if errors.As(err, &exists) {
		return usage("run %q already has a journal in %s: add --resume to continue it, or choose another --run-dir (or --run-id) to start a new run", exists.RunID, exists.RunDir)
	}
	var other *supervise.RunDirMismatchError
	if !errors.As(err, &other) {
		return nil
	}
	if resume {
		return usage("--resume: %s is the directory of run %q, not of run %q: resume it with --run-id %s, or give the --run-dir of run %q", other.RunDir, other.Recorded, other.RunID, other.Recorded, other.RunID)
	}
	return usage("%s is the directory of run %q, not of run %q: choose another --run-dir for run %q, or add --resume with --run-id %s to continue run %q", other.RunDir, other.Recorded, other.RunID, other.RunID, other.Recorded, other.Recorded)
}

// journalFeed hands out a run's journal records as they are appended:
// each call of next returns the records since the last.
type journalFeed struct {
	name string
	next func(ctx context.Context) ([]supervise.Record, error)
}

// fileJournal feeds the journal of run dir dir, reading only what was
// appended since the last look. A journal replaced or cut shorter is
// read again from its start, and its first records, as many as were
// already fed, are not fed twice.
func fileJournal(dir string) journalFeed {
	tail := supervise.TailRunDir(dir)
	fed, read := 0, 0
	return journalFeed{name: dir, next: func(ctx context.Context) ([]supervise.Record, error) {
		recs, restarted, err := tail.Next(ctx)
		if err != nil {
			return nil, err
		}
		if restarted {
			read = 0
		}
		skip := min(max(fed-read, 0), len(recs))
		read += len(recs)
		fed = max(fed, read)
		return recs[skip:], nil
	}}
}

// storeJournal feeds the spawn journal of run runID kept in st, paging
// on from where it stopped: each record is read once. The first call
// returns what the journal holds before this process runs; later ones
// only the records this process appended (at the lease generation
// holder learnt), never those of a process that took the run over from
// it. Records read before the run started are held back until holder
// knows whose they are.
func storeJournal(st store.Store, runID string, holder *journalHolder) journalFeed {
	after, first := "", true
	var held []supervise.HeldRecord
	return journalFeed{name: "run " + runID + " in the store", next: func(ctx context.Context) ([]supervise.Record, error) {
		var err error
		for {
			var page []supervise.HeldRecord
			var next string
			page, next, err = supervise.ReadStoreSpawnLogHeld(ctx, st, runID, after)
			held = append(held, page...)
			if err != nil || next == after {
				break
			}
			after = next
		}
		gen := holder.generation()
		if !first && gen == 0 {
			return nil, err
		}
		var out []supervise.Record
		for _, r := range held {
			if first || r.Generation == gen {
				out = append(out, r.Record)
			}
		}
		first, held = false, held[:0]
		return out, err
	}}
}

// journalHolder is a supervised run's observer (wrapping next, which may
// be nil) that learns the lease generation at which this process holds
// the run's journal in the store (supervise.RunStart.JournalGeneration).
// It also tells when the run started: from then on the journal is this
// process's.
type journalHolder struct {
	next      supervise.Observer
	gen       atomic.Int64
	startOnce sync.Once
	begun     chan struct{}
}

// newJournalHolder is a journalHolder passing the run's events on to
// next (nil: to no one).
func newJournalHolder(next supervise.Observer) *journalHolder {
	return &journalHolder{next: next, begun: make(chan struct{})}
}

func (h *journalHolder) generation() int64 { return h.gen.Load() }

// started is closed once the run started.
func (h *journalHolder) started() <-chan struct{} { return h.begun }

func (h *journalHolder) RunStarted(ctx context.Context, run supervise.RunStart) context.Context {
	h.gen.Store(run.JournalGeneration)
	h.startOnce.Do(func() { close(h.begun) })
	if h.next == nil {
		return ctx
	}
	return h.next.RunStarted(ctx, run)
}

func (h *journalHolder) NodeStarted(ctx context.Context, node supervise.NodeInfo) (context.Context, kernel.Observer) {
	if h.next == nil {
		return ctx, nil
	}
	return h.next.NodeStarted(ctx, node)
}

func (h *journalHolder) NodeSettled(ctx context.Context, s supervise.NodeSettled) {
	if h.next != nil {
		h.next.NodeSettled(ctx, s)
	}
}

func (h *journalHolder) RunEnded(ctx context.Context, res supervise.SupervisedResult) {
	if h.next != nil {
		h.next.RunEnded(ctx, res)
	}
}

// stop prints what is left of the journal and returns.
func (p *progress) stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
		p.cutReads()
	})
}

// resumeLine is the progress line of a resume of the run name whose
// journal holds recs: how many workers it spawned and how many of them
// settled — replayed from the journal, not run again, so no progress
// line of this process shows them.
func resumeLine(name string, recs []supervise.Record) string {
	spawned, settled := 0, map[supervise.NodeID]bool{}
	for _, r := range recs {
		switch r.Kind {
		case supervise.KindSpawned:
			spawned++
		case supervise.KindSettled:
			settled[r.Node] = true
		}
	}
	return fmt.Sprintf("resuming %s: %d journaled records, %d workers spawned, %d settled (replayed, not run again)", name, len(recs), spawned, len(settled))
}

func progressLine(r supervise.Record) string {
	switch r.Kind {
	case supervise.KindRunStarted:
		return fmt.Sprintf("run %s started", r.RunID)
	case supervise.KindSpawned:
		return fmt.Sprintf("spawned %s %s (%s)", r.Node, orName(r.Label, r.Profile), r.Profile)
	case supervise.KindSettled:
		line := fmt.Sprintf("settled %s %s, %s", r.Node, r.State, deliveryText(r.Delivered, r.Verdict, r.CheckError, r.Reason))
		if r.Recovered {
			line += ", recovered from its journaled execution"
		}
		return line
	case supervise.KindRecoveryFailed:
		return fmt.Sprintf("in doubt %s: %s", r.Node, r.Reason)
	case supervise.KindSubmitted:
		who := "the manager's"
		if r.Node != "" {
			who = string(r.Node) + "'s" // a nested manager's
		}
		return "submitted " + who + " result: " + deliveryText(r.Verdict != nil && r.Verdict.Passed, r.Verdict, "", "")
	case supervise.KindFinished:
		return strings.TrimSpace(fmt.Sprintf("finished %s %s", r.Outcome, r.Reason))
	case supervise.KindSteerRequested, supervise.KindCancelRequested, supervise.KindRunCancelRequested,
		supervise.KindSteerAcknowledged, supervise.KindCancelAcknowledged, supervise.KindRunCancelAcknowledged:
		line := strings.ReplaceAll(r.Kind, "-", " ")
		if r.Node != "" {
			line += " " + string(r.Node)
		}
		if e, ok := r.Data.Get("effect"); ok {
			line += ": " + e.Str()
		}
		return line
	}
	return ""
}

func orName(label, name string) string {
	if label != "" {
		return label
	}
	return name
}

func deliveryText(delivered bool, v *kernel.Verdict, checkErr, reason string) string {
	s := "not delivered"
	if delivered {
		s = "delivered"
	}
	switch {
	case checkErr != "":
		// Its verdict (not passed) says the same: the check could not judge.
		s += " (check not judged: " + oneLine(checkErr) + ")"
	case v != nil && v.Reason != "":
		s += " (" + oneLine(v.Reason) + ")"
	case reason != "":
		s += " (" + oneLine(reason) + ")"
	}
	return s
}

// chargeText renders one channel for people: the measured number, or
// unknown with the charge that stands in for it.
func chargeText(n int64, known bool, unit func(int64) string) string {
	switch {
	case known:
		return unit(n)
	case n == 0:
		return "unknown"
	}
	return "unknown (charged " + unit(n) + ", ceilings included)"
}

func countText(n int64) string { return fmt.Sprint(n) }

func printSupervised(w io.Writer, res supervise.SupervisedResult, runDir string) {
	printSupervisedLost(w, res, runDir, nil)
}

// printSupervisedLost is printSupervised for a result whose journal (or
// store) does not hold all of it, lost being the error Supervise
// returned beside it (journalIncomplete; nil: none): a winner is then
// shown NOT RECORDED, with what was lost, never as a plain winner.
func printSupervisedLost(w io.Writer, res supervise.SupervisedResult, runDir string, lost error) {
	if lost != nil && res.Status != supervise.StatusWinner {
		defer fmt.Fprintf(w, "  journal   INCOMPLETE: %s\n", journalLossText(lost))
	}
	switch res.Status {
	case supervise.StatusWinner:
		if lost != nil {
			fmt.Fprintf(w, "supervised run %s  winner %s NOT RECORDED: %s\n", res.RunID, res.Winner.Node, journalLossText(lost))
		} else {
			fmt.Fprintf(w, "supervised run %s  winner %s\n", res.RunID, res.Winner.Node)
		}
		if res.Winner.Verdict != nil && res.Winner.Verdict.Reason != "" {
			fmt.Fprintf(w, "  check     passed: %s\n", res.Winner.Verdict.Reason)
		}
		fmt.Fprintf(w, "  result    %s\n", clip(strings.ReplaceAll(res.Winner.Text, "\n", " "), 120))
	default:
		fmt.Fprintf(w, "supervised run %s  NO winner: %s\n", res.RunID, res.Reason)
		if res.Error != nil {
			fmt.Fprintf(w, "  why       %s: %s\n", res.Error.Name, res.Error.Message)
		}
		if c := res.Cancellation; c != nil {
			if res.Reason == supervise.ReasonCancelled {
				fmt.Fprintf(w, "  cancelled by %s %s\n", c.Source, c.Reason)
			} else {
				// The caller's context ended (an interrupt): the run is
				// interrupted, not cancelled through the run layout.
				fmt.Fprintf(w, "  interrupted (%s: %s); --resume drives it on\n", c.Source, c.Reason)
			}
		}
	}
	for _, n := range res.Tree {
		replayed := ""
		if n.Replayed {
			replayed = ", replayed"
		}
		if n.InDoubt {
			// Its outcome is unknown: the reason says why and what to do.
			why := n.InDoubtReason
			if why == "" {
				why = "it started without a terminal receipt"
			}
			fmt.Fprintf(w, "  worker    %s %s IN DOUBT (charged at its ceiling): %s\n", n.ID, orName(n.Label, n.Profile), why)
			continue
		}
		fmt.Fprintf(w, "  worker    %s %s %s, %s%s\n", n.ID, orName(n.Label, n.Profile), n.State, deliveryText(n.Delivered, n.Verdict, n.CheckError, n.Reason), replayed)
	}
	s := res.Spent
	fmt.Fprintf(w, "  spent     tokens %s, iterations %s, cost %s\n",
		chargeText(s.Tokens, s.TokensKnown, countText), chargeText(s.Iterations, s.IterationsKnown, countText), chargeText(s.MicroUSD, s.USDKnown, microUSD))
	fmt.Fprintf(w, "  manager   tokens %s; workers tokens %s\n",
		chargeText(res.Breakdown.DriverInference.Tokens, res.Breakdown.DriverInference.TokensKnown, countText),
		chargeText(res.Breakdown.ChildWork.Tokens, res.Breakdown.ChildWork.TokensKnown, countText))
	for _, g := range res.SpendGaps {
		fmt.Fprintf(w, "  gap       %s %s: %s\n", g.ID, g.Kind, strings.Join(g.Channels, ", "))
	}
	for _, u := range res.TeardownUnconfirmed {
		fmt.Fprintf(w, "  teardown  %s %s (%s) NOT confirmed, its slot stays charged: %s\n", u.ID, u.Label, u.Status, u.Detail)
	}
	if res.Resumed {
		fmt.Fprintf(w, "  resumed   from the journal of an earlier process\n")
	}
	if p := res.ProgressStop; p != nil {
		fmt.Fprintf(w, "  stopped   by the no-progress bound: %s\n", p.Reason)
	}
	if c := res.Continuation; c != nil && c.Attempts > 1 {
		line := fmt.Sprintf("  manager   driven %d times: %d re-prompted, %d after a failure, %d after a pause; ended %s",
			c.Attempts, c.Reprompts, c.FailureRetries, c.UnavailablePauses, c.Ended)
		if c.RepromptRefusedBy != "" {
			line += ", not re-prompted: " + string(c.RepromptRefusedBy)
		}
		fmt.Fprintln(w, line)
	}
	fmt.Fprintf(w, "  run dir   %s\n", runDir)
}

// repromptFlag reads --reprompt: empty (never), a count, or
// until-complete, which needs the run's deadline (--timeout; a resume
// keeps the journaled one).
func repromptFlag(v string, timeout time.Duration, resume bool) (supervise.Reprompt, error) {
	switch v = strings.TrimSpace(v); {
	case v == "":
		return supervise.Reprompt{}, nil
	case v == "until-complete":
		if timeout <= 0 && !resume {
			return supervise.Reprompt{}, usage("--reprompt until-complete needs --timeout: the deadline is what bounds it")
		}
		return supervise.Reprompt{UntilComplete: true}, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return supervise.Reprompt{}, usage("--reprompt %q: give a count (0 or more) or until-complete", v)
	}
	return supervise.Reprompt{Max: n}, nil
}

// progressDriverAttempt reports on stderr a manager turn that did not
// simply complete: a failure and what follows it, or a re-prompt.
func progressDriverAttempt(w io.Writer, a supervise.DriverAttempt) {
	switch {
	case a.Error != "" && a.Stop == "":
		fmt.Fprintf(w, "manager turn %d failed (%s): %s; driven again in %s\n", a.Attempt, a.Class, clip(a.Error, 200),
			time.Duration(*a.RetryInMS)*time.Millisecond)
	case a.Error != "":
		fmt.Fprintf(w, "manager turn %d failed (%s): %s; stopped by %s\n", a.Attempt, a.Class, clip(a.Error, 200), a.Stop)
	case a.Reprompted:
		fmt.Fprintf(w, "manager turn %d ended with nothing delivered; re-prompted with what is still owed\n", a.Attempt)
	case a.RepromptRefusedBy != "":
		fmt.Fprintf(w, "manager turn %d ended with nothing delivered; not re-prompted: %s\n", a.Attempt, a.RepromptRefusedBy)
	}
}

func knownNumber(n int64, known bool) canonjson.Value {
	if !known {
		return canonjson.NullValue()
	}
	return canonjson.NumberValue(float64(n))
}

// spentValue is s as agentrt's own spend member: each channel its
// measured amount, null when unknown, and beside them charged, what the
// budget charged for it (ceilings for unmeasured work included). A
// charge is the spec amount's rule (specAmount): an unknown channel
// nothing was charged for — no ceiling stood for it, as dollars under a
// pool without a dollar ceiling — is null, never a 0 that reads as known.
func spentValue(s supervise.SpentTotal) canonjson.Value {
	usd := canonjson.NullValue()
	if s.USDKnown {
		usd = canonjson.NumberValue(float64(s.MicroUSD) / 1e6)
	}
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "tokens", Value: knownNumber(s.Tokens, s.TokensKnown)},
		{Name: "iterations", Value: knownNumber(s.Iterations, s.IterationsKnown)},
		{Name: "usd", Value: usd},
		{Name: "charged", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "tokens", Value: specAmount(float64(s.Tokens), s.TokensKnown)},
			{Name: "iterations", Value: specAmount(float64(s.Iterations), s.IterationsKnown)},
			{Name: "usd", Value: specAmount(float64(s.MicroUSD)/1e6, s.USDKnown)},
		})},
	})
}

// verdictValue is v as --json prints it: agentrt's {passed, reason?,
// score?} and beside them the spec's DefaultVerdict (§2.2) members
// valid (= passed) and notes (= reason, when there is one).
func verdictValue(v *kernel.Verdict) canonjson.Value {
	m := []canonjson.Member{{Name: "passed", Value: canonjson.BoolValue(v.Passed)}}
	if v.Reason != "" {
		m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(v.Reason)})
	}
	if v.Score != nil {
		m = append(m, canonjson.Member{Name: "score", Value: canonjson.NumberValue(*v.Score)})
	}
	m = append(m, canonjson.Member{Name: "valid", Value: canonjson.BoolValue(v.Passed)})
	if v.Reason != "" {
		m = append(m, canonjson.Member{Name: "notes", Value: canonjson.StringValue(v.Reason)})
	}
	return canonjson.ObjectValue(m)
}

// specAmount is one channel of a §2.1 Spend: the amount charged (measured,
// or ceilings for unmeasured work when known is false), or null when it
// is not known and nothing was charged for it — unknown never prints as 0.
func specAmount(n float64, known bool) canonjson.Value {
	if !known && n == 0 {
		return canonjson.NullValue()
	}
	return canonjson.NumberValue(n)
}

// specSpend is s as the spec's Spend (§2.1): iterations, tokens,
// tokensKnown, usd, usdKnown, ms (when ms is not nil), resources (when
// any). The ledger keeps one token channel, not the input/output split
// of the spec's TokenUsage, so tokens is {total}: input and output are
// left out, not printed as 0. iterationsKnown is agentrt's own. A
// resource named in unknown is known false, its unit absent (the budget
// names none).
func specSpend(s supervise.SpentTotal, unknown map[string]bool, ms *int64) canonjson.Value {
	m := []canonjson.Member{
		{Name: "iterations", Value: specAmount(float64(s.Iterations), s.IterationsKnown)},
		{Name: "iterationsKnown", Value: canonjson.BoolValue(s.IterationsKnown)},
		{Name: "tokens", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "total", Value: specAmount(float64(s.Tokens), s.TokensKnown)}})},
		{Name: "tokensKnown", Value: canonjson.BoolValue(s.TokensKnown)},
		{Name: "usd", Value: specAmount(float64(s.MicroUSD)/1e6, s.USDKnown)},
		{Name: "usdKnown", Value: canonjson.BoolValue(s.USDKnown)},
	}
	if ms != nil {
		m = append(m, canonjson.Member{Name: "ms", Value: canonjson.NumberValue(float64(*ms))})
	}
	if len(s.Resources) > 0 {
		var rs []canonjson.Member
		for _, name := range slices.Sorted(maps.Keys(s.Resources)) {
			known := !unknown["resource:"+name]
			rs = append(rs, canonjson.Member{Name: name, Value: canonjson.ObjectValue([]canonjson.Member{
				{Name: "amount", Value: specAmount(float64(s.Resources[name]), known)},
				{Name: "known", Value: canonjson.BoolValue(known)},
			})})
		}
		m = append(m, canonjson.Member{Name: "resources", Value: canonjson.ObjectValue(rs)})
	}
	return canonjson.ObjectValue(m)
}

// budgetViolationValue is n's settlement's overspend as the spec's
// budgetViolation{overspent[{channel, reserved, spent}]} (§3.6), usd in
// dollars; false when n is not settled or overspent nothing.
func budgetViolationValue(n supervise.NodeInfo) (canonjson.Value, bool) {
	if n.Settlement == nil || n.Settlement.BudgetViolation == nil {
		return canonjson.Value{}, false
	}
	over := make([]canonjson.Value, 0, len(n.Settlement.BudgetViolation.Overspent))
	for _, o := range n.Settlement.BudgetViolation.Overspent {
		reserved, spent := float64(o.Reserved), float64(o.Spent)
		if o.Channel == ledger.ChannelUSD {
			reserved, spent = reserved/1e6, spent/1e6
		}
		over = append(over, canonjson.ObjectValue([]canonjson.Member{
			{Name: "channel", Value: canonjson.StringValue(o.Channel)},
			{Name: "reserved", Value: canonjson.NumberValue(reserved)},
			{Name: "spent", Value: canonjson.NumberValue(spent)},
		}))
	}
	return canonjson.ObjectValue([]canonjson.Member{{Name: "overspent", Value: canonjson.ArrayValue(over)}}), true
}

// workerLabel is the label --json gives a worker: its own, or its
// profile when it was spawned without one (a graph spawns its nodes so),
// as supervise names it in spendGaps — so workers[], tree.nodes[] and
// spendGaps[] agree on every worker's label.
func workerLabel(n supervise.NodeInfo) string {
	if n.Label != "" {
		return n.Label
	}
	return n.Profile
}

// specTree is the result's tree as the spec's TreeView (§3.6):
// {root, nodes[{id, parent?, label, status, runtime?, budget, spent,
// outRef?}], inFlight, waiting}.
func specTree(res supervise.SupervisedResult) canonjson.Value {
	nodes := make([]canonjson.Value, 0, len(res.Tree))
	inFlight, waiting := 0, 0
	for _, n := range res.Tree {
		switch n.State {
		case supervise.StateRunning, supervise.StateAcquiring:
			inFlight++
		case supervise.StateWaiting:
			waiting++
		}
		nm := []canonjson.Member{{Name: "id", Value: canonjson.StringValue(string(n.ID))}}
		if n.Parent != "" {
			nm = append(nm, canonjson.Member{Name: "parent", Value: canonjson.StringValue(string(n.Parent))})
		}
		nm = append(nm,
			canonjson.Member{Name: "label", Value: canonjson.StringValue(workerLabel(n.NodeInfo))},
			canonjson.Member{Name: "status", Value: canonjson.StringValue(string(n.State))})
		if n.Runtime != "" {
			nm = append(nm, canonjson.Member{Name: "runtime", Value: canonjson.StringValue(n.Runtime)})
		}
		var bm []canonjson.Member
		if n.Reserved.Iterations != nil {
			bm = append(bm, canonjson.Member{Name: "maxIterations", Value: canonjson.NumberValue(float64(*n.Reserved.Iterations))})
		}
		if n.Reserved.Tokens != nil {
			bm = append(bm, canonjson.Member{Name: "maxTokens", Value: canonjson.NumberValue(float64(*n.Reserved.Tokens))})
		}
		if n.Reserved.MicroUSD != nil {
			bm = append(bm, canonjson.Member{Name: "maxUsd", Value: canonjson.NumberValue(float64(*n.Reserved.MicroUSD) / 1e6)})
		}
		spent, gaps := supervise.NodeSpent(n.NodeInfo)
		unknown := map[string]bool{}
		for _, g := range gaps {
			unknown[g] = true
		}
		nm = append(nm,
			canonjson.Member{Name: "budget", Value: canonjson.ObjectValue(bm)},
			canonjson.Member{Name: "spent", Value: specSpend(spent, unknown, nil)})
		if n.OutRef != "" {
			nm = append(nm, canonjson.Member{Name: "outRef", Value: canonjson.StringValue(n.OutRef)})
		}
		if v, ok := budgetViolationValue(n.NodeInfo); ok {
			nm = append(nm, canonjson.Member{Name: "budgetViolation", Value: v})
		}
		nodes = append(nodes, canonjson.ObjectValue(nm))
	}
	return canonjson.ObjectValue([]canonjson.Member{
		{Name: "root", Value: canonjson.StringValue(res.RunID)},
		{Name: "nodes", Value: canonjson.ArrayValue(nodes)},
		{Name: "inFlight", Value: canonjson.NumberValue(float64(inFlight))},
		{Name: "waiting", Value: canonjson.NumberValue(float64(waiting))},
	})
}

// supervisedValue is a result as --json prints it: agentrt's own members
// (status, winner{node, text, submitted, …}, reason, cancellation,
// workers, spent, manager, …) and, beside them, the members of the
// spec's SupervisedResult (§3.6), canonical for a TypeScript peer: kind,
// out (winner), outRef (winner), verdict? (winner), tree, downCount
// (no-winner), spentTotal, spentBreakdown, and for a cancelled run
// source, cancellationReason and operationId? at the top; error only
// on driver-failed.
func supervisedValue(res supervise.SupervisedResult, runDir string) canonjson.Value {
	m := []canonjson.Member{
		{Name: "runId", Value: canonjson.StringValue(res.RunID)},
		{Name: "status", Value: canonjson.StringValue(string(res.Status))},
	}
	kind := "no-winner"
	if res.Winner != nil {
		kind = "winner"
	}
	m = append(m, canonjson.Member{Name: "kind", Value: canonjson.StringValue(kind)})
	if res.Winner != nil {
		m = append(m, canonjson.Member{Name: "out", Value: canonjson.StringValue(res.Winner.Text)})
		if res.Winner.OutRef != "" {
			m = append(m, canonjson.Member{Name: "outRef", Value: canonjson.StringValue(res.Winner.OutRef)})
		}
		if res.Winner.Verdict != nil {
			v := verdictValue(res.Winner.Verdict)
			m = append(m, canonjson.Member{Name: "verdict", Value: v})
		}
		w := []canonjson.Member{
			{Name: "node", Value: canonjson.StringValue(string(res.Winner.Node))},
			{Name: "text", Value: canonjson.StringValue(res.Winner.Text)},
			{Name: "out", Value: canonjson.StringValue(res.Winner.Text)},
			{Name: "submitted", Value: canonjson.BoolValue(res.Winner.Submitted)},
		}
		if res.Winner.OutRef != "" {
			w = append(w, canonjson.Member{Name: "outRef", Value: canonjson.StringValue(res.Winner.OutRef)})
		}
		if res.Winner.Verdict != nil { // spec §3.6 winner{…, verdict?}
			v := verdictValue(res.Winner.Verdict)
			w = append(w, canonjson.Member{Name: "verdict", Value: v})
		}
		m = append(m, canonjson.Member{Name: "winner", Value: canonjson.ObjectValue(w)})
	} else {
		m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(string(res.Reason))},
			canonjson.Member{Name: "downCount", Value: canonjson.NumberValue(float64(res.DownCount))})
		if c := res.Cancellation; c != nil && res.Reason == supervise.ReasonCancelled { // §3.6 cancelled{source, cancellationReason, operationId?}
			m = append(m, canonjson.Member{Name: "source", Value: canonjson.StringValue(c.Source)},
				canonjson.Member{Name: "cancellationReason", Value: canonjson.StringValue(c.Reason)})
			if c.OperationID != "" {
				m = append(m, canonjson.Member{Name: "operationId", Value: canonjson.StringValue(c.OperationID)})
			}
		}
	}
	if res.Error != nil {
		m = append(m, canonjson.Member{Name: "error", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "name", Value: canonjson.StringValue(res.Error.Name)},
			{Name: "message", Value: canonjson.StringValue(res.Error.Message)},
		})})
	}
	if c := res.Cancellation; c != nil {
		cm := []canonjson.Member{
			{Name: "source", Value: canonjson.StringValue(c.Source)},
			{Name: "cancellationReason", Value: canonjson.StringValue(c.Reason)},
		}
		if c.OperationID != "" { // spec §3.6: operationId? (a context's cancellation has none)
			cm = append(cm, canonjson.Member{Name: "operationId", Value: canonjson.StringValue(c.OperationID)})
		}
		m = append(m, canonjson.Member{Name: "cancellation", Value: canonjson.ObjectValue(cm)})
	}
	var workers []canonjson.Value
	for _, n := range res.Tree {
		wm := []canonjson.Member{
			{Name: "id", Value: canonjson.StringValue(string(n.ID))},
			{Name: "label", Value: canonjson.StringValue(workerLabel(n.NodeInfo))},
			{Name: "profile", Value: canonjson.StringValue(n.Profile)},
			{Name: "state", Value: canonjson.StringValue(string(n.State))},
			{Name: "delivered", Value: canonjson.BoolValue(n.Delivered)},
			{Name: "replayed", Value: canonjson.BoolValue(n.Replayed)},
		}
		if n.InDoubt {
			wm = append(wm, canonjson.Member{Name: "inDoubt", Value: canonjson.BoolValue(true)},
				canonjson.Member{Name: "inDoubtReason", Value: canonjson.StringValue(n.InDoubtReason)})
		}
		if n.Verdict != nil {
			v := verdictValue(n.Verdict)
			wm = append(wm, canonjson.Member{Name: "verdict", Value: v})
		}
		if n.Reason != "" {
			wm = append(wm, canonjson.Member{Name: "reason", Value: canonjson.StringValue(n.Reason)})
		}
		if n.CheckError != "" {
			wm = append(wm, canonjson.Member{Name: "checkError", Value: canonjson.StringValue(n.CheckError)})
		}
		if v, ok := budgetViolationValue(n.NodeInfo); ok {
			wm = append(wm, canonjson.Member{Name: "budgetViolation", Value: v})
		}
		workers = append(workers, canonjson.ObjectValue(wm))
	}
	var gaps []canonjson.Value
	for _, g := range res.SpendGaps {
		ch := make([]canonjson.Value, len(g.Channels))
		for i, c := range g.Channels {
			ch[i] = canonjson.StringValue(c)
		}
		gm := []canonjson.Member{{Name: "id", Value: canonjson.StringValue(string(g.ID))}}
		if g.Label != "" { // spec §3.6 spendGaps[{id, label?, kind, channels}]
			gm = append(gm, canonjson.Member{Name: "label", Value: canonjson.StringValue(g.Label)})
		}
		gaps = append(gaps, canonjson.ObjectValue(append(gm,
			canonjson.Member{Name: "kind", Value: canonjson.StringValue(string(g.Kind))},
			canonjson.Member{Name: "channels", Value: canonjson.ArrayValue(ch)})))
	}
	teardowns := make([]canonjson.Value, 0, len(res.TeardownUnconfirmed))
	for _, u := range res.TeardownUnconfirmed {
		v, _ := canonjson.ToValue(u)
		teardowns = append(teardowns, v)
	}
	m = append(m,
		canonjson.Member{Name: "teardownUnconfirmed", Value: canonjson.ArrayValue(teardowns)},
		canonjson.Member{Name: "workers", Value: canonjson.ArrayValue(workers)},
		canonjson.Member{Name: "spent", Value: spentValue(res.Spent)},
		canonjson.Member{Name: "manager", Value: spentValue(res.Breakdown.DriverInference)},
		canonjson.Member{Name: "spendGaps", Value: canonjson.ArrayValue(gaps)},
		canonjson.Member{Name: "resumed", Value: canonjson.BoolValue(res.Resumed)},
		canonjson.Member{Name: "ms", Value: canonjson.NumberValue(float64(res.MS))},
		canonjson.Member{Name: "runDir", Value: canonjson.StringValue(runDir)},
	)
	if p := res.ProgressStop; p != nil {
		// The no-progress bound ended the run (§3.6 stopRule).
		if v, err := canonjson.ToValue(*p); err == nil {
			m = append(m, canonjson.Member{Name: "progressStop", Value: v})
		}
	}
	if res.Continuation != nil {
		// What the external manager's driver loop did (§3.6
		// continuation): attempts, re-prompts, retries and pauses.
		if v, err := canonjson.ToValue(*res.Continuation); err == nil {
			m = append(m, canonjson.Member{Name: "continuation", Value: v})
		}
	}
	unknown := map[string]bool{}
	for _, g := range res.SpendGaps {
		for _, ch := range g.Channels {
			unknown[ch] = true
		}
	}
	ms := res.MS
	m = append(m,
		canonjson.Member{Name: "tree", Value: specTree(res)},
		canonjson.Member{Name: "spentTotal", Value: specSpend(res.Spent, unknown, &ms)},
		canonjson.Member{Name: "spentBreakdown", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "driverInference", Value: specSpend(res.Breakdown.DriverInference, unknown, nil)},
			{Name: "childWork", Value: specSpend(res.Breakdown.ChildWork, unknown, nil)},
		})},
	)
	return canonjson.ObjectValue(m)
}

func newSuperviseSteerCmd(stdio IO) *cobra.Command {
	var message, opID string
	var interrupt, asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "steer RUN-DIR WORKER --message TEXT --operation-id ID",
		Short: "Ask a running supervised run to deliver a message to one of its workers",
		Long: `Publish a steer request in RUN-DIR for WORKER (a worker id, a direct child's
label or profile name, or the run id for the manager: a router manager takes it
before its next model call, a claude-code, codex or opencode manager with its
next coordination tool result) and wait up to --wait for
the running supervisor's acknowledgement. Repeating the same --operation-id
with the same message is safe; with another message it is refused. A worker
run through the kernel takes the message as its next turn's input, and the
acknowledgement says delivered only then: until its current turn ends it stays
unknown, and running this again with the same --operation-id shows the outcome.

Exit status: 0 when the acknowledgement says delivered, or with --wait 0
(the request is written and not waited for: "requested"), 1 for any other
acknowledgement or none within --wait (said on stderr), 2 on usage errors.`,
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 3 {
				return usage("agentrt supervise steer takes the message as --message TEXT (with --operation-id ID); agentrt steer RUN WORKER MESSAGE takes it as an argument")
			}
			if len(args) != 2 {
				return usage("agentrt supervise steer takes RUN-DIR and WORKER, got %d argument(s) (see agentrt supervise steer --help)", len(args))
			}
			return nil
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if message == "" || opID == "" {
				return usage("--message and --operation-id are required")
			}
			if err := checkRef("WORKER", args[1]); err != nil {
				return err
			}
			if err := checkText("--message", message); err != nil {
				return err
			}
			return steerWorker(ctx, stdio, args[0], args[1], message, opID, interrupt, wait, asJSON)
		},
	}
	cmd.Flags().StringVar(&message, "message", "", "the message to deliver (required)")
	cmd.Flags().StringVar(&opID, "operation-id", "", "the request's operation id, [A-Za-z0-9._-] (required)")
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "ask the worker to act on it at once")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the acknowledgement")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the request and acknowledgement as JSON")
	return cmd
}

// checkCancelArgs refuses a cancellation's operator text up front
// (checkRef, checkText): WORKER, --reason, --operator — the last two
// also past supervise.MaxControlText, which the request could not carry
// to the supervisor.
func checkCancelArgs(worker, reason string, rc runCancelFlags) error {
	if worker != "" {
		if err := checkRef("WORKER", worker); err != nil {
			return err
		}
	}
	for _, t := range [][2]string{{"--reason", reason}, {"--operator", rc.operator}} {
		if len(t[1]) > supervise.MaxControlText {
			return usage("%s is %d bytes, over the %d a cancellation carries: shorten it", t[0], len(t[1]), supervise.MaxControlText)
		}
	}
	return checkTexts("--reason", reason, "--operator", rc.operator)
}

// runCancelFlags are what a whole run's cancellation may add
// (supervise.RunCancelOptions): the operator asking, and how soon the
// run should be stopped, which its acknowledgement then says it was
// or not (deadlineExceeded, behaviour 50).
type runCancelFlags struct {
	operator string
	deadline time.Duration
}

func (rc *runCancelFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&rc.operator, "operator", "", "without WORKER: who asks, recorded with the request")
	cmd.Flags().DurationVar(&rc.deadline, "deadline", 0, "without WORKER: how soon the run should be stopped; the acknowledgement says whether it was (deadlineExceeded)")
}

func newSuperviseCancelCmd(stdio IO) *cobra.Command {
	var rc runCancelFlags
	var opID, reason string
	var asJSON bool
	var wait time.Duration
	cmd := &cobra.Command{
		Use:   "cancel RUN-DIR [WORKER] --operation-id ID",
		Short: "Ask a running supervised run to cancel one worker (and its subtree) or the whole run",
		Long: `Request in RUN-DIR the cancellation of WORKER (a worker id at any depth, or a
direct child's label or profile name) and its subtree, or, without WORKER, of
the whole run; then wait up to --wait for the supervisor to confirm the end
(effect cancelled or not_live). Repeating the same --operation-id is safe.

` + cancelWaitHelp,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if opID == "" {
				return usage("--operation-id is required")
			}
			worker := ""
			if len(args) == 2 {
				worker = args[1]
			}
			return cancelWork(ctx, stdio, args[0], worker, opID, reason, rc, wait, asJSON)
		},
	}
	rc.register(cmd)
	cmd.Flags().StringVar(&opID, "operation-id", "", "the request's operation id, [A-Za-z0-9._-] (required)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded with the request")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the cancellation to be confirmed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the acknowledgement as JSON")
	return cmd
}

// steerWorker publishes a steer request in dir for worker and waits up to
// wait for the supervisor's acknowledgement: agentrt supervise steer and
// agentrt steer.
func steerWorker(ctx context.Context, stdio IO, dir, worker, message, opID string, interrupt bool, wait time.Duration, asJSON bool) error {
	// Checked after the operands, which are refused first as they were
	// before any run directory was read.
	if err := waitFlag(wait); err != nil {
		return err
	}
	if err := checkRunDir(dir); err != nil {
		return err
	}
	req, err := supervise.WriteWorkerSteer(ctx, dir, worker, supervise.WorkerSteer{OperationID: opID, Message: message, Source: "cli", Interrupt: interrupt})
	if err != nil {
		// No request known to be written, no acknowledgement.
		none, _ := steerAnswer(nil, nil)
		return answerFailure(stdio, asJSON, none, controlError(err))
	}
	if !asJSON && wait > 0 {
		fmt.Fprintf(stdio.Err, "steer %s requested for %s; waiting up to %s\n", req.OperationID, req.Worker, wait)
	}
	ack, err := pollAck(ctx, wait, func() (*supervise.SteerAck, bool, error) {
		// The supervisor claims a request (effect unknown) before
		// it tries to deliver it; only what follows is its answer.
		a, err := supervise.ReadSteerAck(ctx, dir, opID)
		return a, a != nil && a.Effect != supervise.SteerUnknown, err
	})
	if err != nil {
		// Written, its answer unread.
		answer, jerr := steerAnswer(&req, nil)
		if jerr != nil {
			return errors.Join(&exitError{code: ExitFailed, err: err}, jerr)
		}
		return answerFailure(stdio, asJSON, answer, &exitError{code: ExitFailed, err: err})
	}
	// --wait 0 asks only that the request be written: an answer the
	// supervisor has not given yet (none, or its claim, unknown) is
	// not waited for.
	requested := wait <= 0 && (ack == nil || ack.Effect == supervise.SteerUnknown)
	if asJSON {
		answer, err := steerAnswer(&req, ack)
		if err == nil {
			err = writeJSON(stdio.Out, answer)
		}
		if err != nil {
			return err
		}
	} else if requested {
		fmt.Fprintf(stdio.Out, "steer %s to %s: requested\n", opID, req.Worker)
	} else if ack == nil {
		fmt.Fprintf(stdio.Out, "steer %s: no acknowledgement within %s\n", opID, wait)
	} else if ack.Effect == supervise.SteerUnknown {
		fmt.Fprintf(stdio.Out, "steer %s to %s: unknown after %s\n", opID, ack.Worker, wait)
	} else {
		fmt.Fprintf(stdio.Out, "steer %s to %s: %s%s\n", opID, ack.Worker, ack.Effect, detail(ack.Detail))
	}
	// Hints go to stderr: stdout carries the outcome alone.
	switch {
	case requested:
		fmt.Fprintln(stdio.Err, "not waited for (--wait 0): "+againHint)
	case ack != nil && ack.Effect == supervise.SteerUnknown:
		fmt.Fprintln(stdio.Err, "the supervisor holds the steer until the worker's next turn takes it; "+againHint)
	}
	switch {
	case requested:
		return nil
	case ack == nil:
		return &exitError{code: ExitFailed, err: fmt.Errorf("the run did not acknowledge the steer within %s (is its supervisor running?): run this again with --operation-id %s to see the outcome%s", wait, opID, noAnswerHint(dir))}
	case ack.Effect != supervise.SteerDelivered:
		return refused()
	}
	return nil
}

// steerAnswer is agentrt steer --json's answer: the request written and
// the run's acknowledgement, each null when there is none (not written;
// none within --wait), said, not left out.
func steerAnswer(req *supervise.SteerRequest, ack *supervise.SteerAck) (canonjson.Value, error) {
	reqV, ackV := canonjson.NullValue(), canonjson.NullValue()
	var err, aerr error
	if req != nil {
		reqV, err = canonjson.ToValue(req)
	}
	if ack != nil {
		ackV, aerr = canonjson.ToValue(ack)
	}
	if err := errors.Join(err, aerr); err != nil {
		return canonjson.Value{}, err
	}
	return canonjson.ObjectValue([]canonjson.Member{{Name: "request", Value: reqV}, {Name: "acknowledgement", Value: ackV}}), nil
}

// answerFailure ends a steer or cancellation whose request could not be
// written or whose answer could not be read with err; with --json stdout
// still carries an answer (the one given, its unknowns said), as
// agentrt runs cancel's does, unless err is a usage error.
func answerFailure(stdio IO, asJSON bool, answer any, err error) error {
	if ee, ok := errors.AsType[*exitError](err); !asJSON || ok && ee.code == ExitUsage {
		return err
	}
	if werr := writeJSON(stdio.Out, answer); werr != nil {
		return errors.Join(err, werr)
	}
	return err
}

// cancelWork requests in dir the cancellation of worker (and its
// subtree), or of the whole run when worker is empty, and waits up to
// wait for the supervisor to confirm it: agentrt supervise cancel and
// agentrt cancel.
func cancelWork(ctx context.Context, stdio IO, dir, worker, opID, reason string, rc runCancelFlags, wait time.Duration, asJSON bool) error {
	if err := checkCancelArgs(worker, reason, rc); err != nil {
		return err
	}
	if worker != "" && (rc.deadline != 0 || rc.operator != "") {
		return usage("--deadline and --operator apply to the whole run's cancellation; leave out WORKER")
	}
	if rc.deadline < 0 {
		return usage("--deadline must not be negative")
	}
	if err := waitFlag(wait); err != nil {
		return err
	}
	if err := checkRunDir(dir); err != nil {
		return err
	}
	final := func(e kernel.Effect) bool { return e == kernel.EffectCancelled || e == kernel.EffectNotLive }
	var effect kernel.Effect
	var out any
	// timedOut: the run did not confirm the cancellation within wait.
	var timedOut bool
	if worker != "" {
		req, err := supervise.CancelWorker(ctx, dir, worker, opID, supervise.CancelOptions{Reason: reason, Source: "cli"})
		if err != nil {
			return answerFailure(stdio, asJSON, supervise.WorkerCancellation{OperationID: opID, Worker: worker, Effect: kernel.EffectUnknown,
				RequestedAt: time.Now().UnixMilli(), Reason: reason, Detail: "whether the request was written is not known: " + err.Error(), Terminated: []supervise.NodeID{}},
				controlError(err))
		}
		if !asJSON && wait > 0 {
			fmt.Fprintf(stdio.Err, "cancel %s requested for %s; waiting up to %s\n", opID, req.Worker, wait)
		}
		rec, err := pollAck(ctx, wait, func() (supervise.WorkerCancellation, bool, error) {
			r, err := supervise.ReadWorkerCancellation(ctx, dir, opID)
			return r, final(r.Effect), err
		})
		if err != nil {
			return answerFailure(stdio, asJSON, supervise.WorkerCancellation{OperationID: opID, Worker: req.Worker, Effect: kernel.EffectUnknown,
				RequestedAt: req.RequestedAt, Reason: reason, Detail: "the request was written; its answer could not be read: " + err.Error(), Terminated: []supervise.NodeID{}},
				&exitError{code: ExitFailed, err: err})
		}
		// The run answered when it wrote the record (ObservedAt); an
		// unknown it answered (a worker it never had) is its verdict,
		// one it has not given yet is not.
		if !final(rec.Effect) && (rec.ObservedAt == 0 || rec.Effect == kernel.EffectCancelRequested) {
			rec.Effect, rec.Detail = unconfirmed(wait)
			timedOut = wait > 0
		}
		effect, out = rec.Effect, rec
		if !asJSON {
			fmt.Fprintf(stdio.Out, "cancel %s of %s: %s%s\n", opID, orName(string(rec.WorkerID), rec.Worker), rec.Effect, detail(rec.Detail))
		}
	} else {
		req, err := supervise.CancelRun(ctx, dir, opID, supervise.RunCancelOptions{Source: "cli", Reason: reason, Operator: rc.operator, Deadline: rc.deadline})
		if ended, ok := errors.AsType[*supervise.RunEndedError](err); ok {
			// A run that ended before this request: not live, as a
			// worker cancel written after its end is answered.
			rec := &supervise.RunCancellation{OperationID: opID, Effect: ended.Effect(), RequestedAt: time.Now().UnixMilli(), ObservedAt: ended.EndedAtMS,
				Source: "cli", Reason: reason,
				Detail: fmt.Sprintf("the run had ended (%s) before the request was written; its cancellation was operation %s", ended.Status, ended.FirstOperationID)}
			if asJSON {
				if err := writeJSON(stdio.Out, rec); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(stdio.Out, "cancel %s of the run: %s%s\n", opID, rec.Effect, detail(rec.Detail))
			}
			return refused() // not_live is never success (§3.6)
		}
		if err != nil {
			return answerFailure(stdio, asJSON, &supervise.RunCancellation{OperationID: opID, Effect: kernel.EffectUnknown, RequestedAt: time.Now().UnixMilli(),
				Source: "cli", Reason: reason, Detail: "whether the request was written is not known: " + err.Error()}, controlError(err))
		}
		if !asJSON && wait > 0 {
			fmt.Fprintf(stdio.Err, "cancel %s requested for the run; waiting up to %s\n", opID, wait)
		}
		rec, err := pollAck(ctx, wait, func() (*supervise.RunCancellation, bool, error) {
			r, err := supervise.ReadRunCancellation(ctx, dir)
			return r, r != nil && (final(r.Effect) || r.Effect == kernel.EffectUnknown), err
		})
		if err != nil {
			return answerFailure(stdio, asJSON, &supervise.RunCancellation{OperationID: req.OperationID, Effect: kernel.EffectUnknown, RequestedAt: req.At,
				Source: req.Source, Reason: req.Reason, Detail: "the request was written; its answer could not be read: " + err.Error()}, &exitError{code: ExitFailed, err: err})
		}
		if rec == nil {
			// Nobody answered (no supervisor holds the run, or it has
			// not read the request yet): requested when no wait was
			// asked, else unknown, never success.
			effect, why := unconfirmed(wait)
			rec = &supervise.RunCancellation{OperationID: req.OperationID, Effect: effect, RequestedAt: req.At,
				Source: req.Source, Reason: req.Reason, Detail: why}
			timedOut = wait > 0
		} else if rec.Effect == kernel.EffectCancelRequested {
			// Acknowledged, not yet applied.
			rec.Effect, rec.Detail = unconfirmed(wait)
			timedOut = wait > 0
		}
		effect, out = rec.Effect, rec
		if !asJSON {
			fmt.Fprintf(stdio.Out, "cancel %s of the run: %s%s\n", opID, rec.Effect, detail(rec.Detail))
		}
	}
	if asJSON {
		if err := writeJSON(stdio.Out, out); err != nil {
			return err
		}
	}
	if effect == kernel.EffectCancelRequested {
		// Hints go to stderr: stdout carries the outcome alone.
		fmt.Fprintln(stdio.Err, againHint)
	}
	switch {
	case effect == kernel.EffectCancelled || effect == kernel.EffectCancelRequested:
		// cancel_requested only with --wait 0: the request is written
		// and no wait was asked. not_live is final but never success
		// (§3.6): nothing was cancelled.
		return nil
	case timedOut:
		return &exitError{code: ExitFailed, err: fmt.Errorf("the run did not confirm the cancellation within %s; it may still apply it: run this again with --operation-id %s to see the outcome%s", wait, opID, noAnswerHint(dir))}
	}
	return refused()
}

// noAnswerHint is what a request to run dir dir that nobody answered
// adds, said from what dir tells of the run's supervisor. A run that
// keeps its journal in the store (journalPlace) takes no supervise.lock
// in its dir, and a --resume may continue it from another run dir,
// whose supervisor reads requests only there; nothing in dir says
// whether that happened (the store's lease names the holding process,
// not its dir), so the hint says where else to look. A run whose
// supervise.lock no live process holds (supervise.ProbeRunDirLock) has
// no supervisor: it stopped without ending, and only a --resume answers
// the request. "" when dir tells nothing more.
func noAnswerHint(dir string) string {
	if journalPlace(dir) == journalInStore {
		return fmt.Sprintf("; %s is the dir of a run whose journal is in the store: a supervisor that resumed it from another run dir (--resume --journal-in-store with another --run-dir, on this machine or another) answers only requests written in that dir, so if one did, send this there", dir)
	}
	if p, err := supervise.ProbeRunDirLock(dir); err == nil && p.State == supervise.HolderGone {
		return fmt.Sprintf("; no supervisor drives %s (%s): the run stopped without ending, and a --resume of it (agentrt supervise or agentrt graph with --resume and this run dir) answers the request", dir, p.Why)
	}
	return ""
}

// waitFlag refuses a negative --wait of a steer or cancellation, a bad
// value as a negative --deadline is: 0 is how not to wait.
func waitFlag(wait time.Duration) error {
	if wait < 0 {
		return usage("--wait %s is negative: give how long to wait for the answer, or 0 not to wait", wait)
	}
	return nil
}

// againHint tells how to learn a request's outcome later; a hint, it
// goes to stderr.
const againHint = "run this again with the same --operation-id to see the outcome"

// unconfirmed is the effect of a cancellation the run has not confirmed
// after wait: requested when no wait was asked (--wait 0: the request is
// written, which is all that was asked), else unknown.
func unconfirmed(wait time.Duration) (kernel.Effect, string) {
	if wait <= 0 {
		return kernel.EffectCancelRequested, "not waited for (--wait 0)"
	}
	return kernel.EffectUnknown, fmt.Sprintf("not confirmed by the run within %s", wait)
}

func detail(s string) string {
	if s == "" {
		return ""
	}
	return " (" + s + ")"
}

// controlError maps a refused control request to its exit code: a
// malformed or conflicting request is a usage error.
func controlError(err error) error {
	var conflict *supervise.ConflictError
	if errors.Is(err, supervise.ErrInvalidControl) || errors.As(err, &conflict) {
		return usage("%v", err)
	}
	return &exitError{code: ExitFailed, err: err}
}

// pollAck reads an acknowledgement every control scan until done says it
// is final or wait elapsed, and returns the last one read.
func pollAck[T any](ctx context.Context, wait time.Duration, read func() (T, bool, error)) (T, error) {
	deadline := time.Now().Add(wait)
	for {
		v, done, err := read()
		if err != nil || done || !time.Now().Before(deadline) {
			return v, err
		}
		select {
		case <-ctx.Done():
			return v, ctx.Err()
		case <-time.After(supervise.ControlScanInterval):
		}
	}
}

// journalIncomplete reports whether err came with a real result whose
// journal or store does not hold all of it (supervise.JournalLossError,
// the finished record refused, or the run's store record not written).
func journalIncomplete(err error) bool {
	return errors.Is(err, supervise.ErrJournalIncomplete) || errors.Is(err, supervise.ErrOutcomeNotJournaled) ||
		errors.Is(err, supervise.ErrRunNotRecorded)
}

// timeoutFlag checks --timeout of supervise and graph: the run's
// deadline, journaled at its start, which a resume keeps (spec §3.6:
// the original deadline holds), so a resume refuses a new one.
func timeoutFlag(timeout time.Duration, resume bool) error {
	switch {
	case timeout < 0:
		return usage("--timeout must not be negative")
	case resume && timeout != 0:
		return usage("--timeout cannot be given with --resume: the run keeps the deadline it was started with")
	}
	return nil
}

// journalLossText says what a run's journal (or store) could not hold,
// for the first line of its human output: lost is the error Supervise
// returned beside its result (journalIncomplete).
func journalLossText(lost error) string {
	var e *supervise.JournalLossError
	if !errors.As(lost, &e) {
		return "its journal or store does not hold it: " + lost.Error()
	}
	names := make([]string, len(e.Lost))
	for i, r := range e.Lost {
		names[i] = r.Kind
		if r.Node != "" {
			names[i] += " of " + string(r.Node)
		}
	}
	if e.Count > len(e.Lost) {
		names = append(names, fmt.Sprintf("and %d more", e.Count-len(e.Lost)))
	}
	return fmt.Sprintf("its journal lost %d record(s) (%s)", e.Count, strings.Join(names, ", "))
}

// journalLossValue is v, a result as --json prints it, with member
// journalIncomplete {count?, lost?[{kind, node?}], error} when lost, the
// error Supervise returned beside the result, says its journal (or
// store) does not hold all of it; v unchanged when lost is nil.
func journalLossValue(v canonjson.Value, lost error) canonjson.Value {
	if lost == nil {
		return v
	}
	var m []canonjson.Member
	var e *supervise.JournalLossError
	if errors.As(lost, &e) {
		recs := make([]canonjson.Value, len(e.Lost))
		for i, r := range e.Lost {
			rm := []canonjson.Member{{Name: "kind", Value: canonjson.StringValue(r.Kind)}}
			if r.Node != "" {
				rm = append(rm, canonjson.Member{Name: "node", Value: canonjson.StringValue(string(r.Node))})
			}
			recs[i] = canonjson.ObjectValue(rm)
		}
		m = append(m, canonjson.Member{Name: "count", Value: canonjson.NumberValue(float64(e.Count))},
			canonjson.Member{Name: "lost", Value: canonjson.ArrayValue(recs)})
	}
	m = append(m, canonjson.Member{Name: "error", Value: canonjson.StringValue(lost.Error())})
	return v.With("journalIncomplete", canonjson.ObjectValue(m))
}

// graceFlag is --child-settle-grace: a duration, or "wait" for
// supervise.WaitForChildren.
type graceFlag time.Duration

func (g *graceFlag) String() string {
	switch d := time.Duration(*g); d {
	case 0:
		return "0s"
	case supervise.WaitForChildren:
		return "wait"
	default:
		return d.String()
	}
}

func (g *graceFlag) Set(s string) error {
	if s == "wait" {
		*g = graceFlag(supervise.WaitForChildren)
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("want a duration such as 30s, or wait: %w", err)
	}
	*g = graceFlag(d)
	return nil
}

func (g *graceFlag) Type() string { return "duration|wait" }
