package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/coordmcp"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

func newSuperviseCmd(stdio IO, open providerOpener) *cobra.Command {
	var sf storeFlags
	var asJSON, resume bool
	var task, providerName, scriptPath, managerScript, baseURL, openaiAPI, expect, checkCmd, runDir, runID, analystsPath string
	var checkTimeout time.Duration
	var workers []string
	var budgetTokens, iterations, workerTokens int64
	var budgetUSD, workerUSD float64
	var maxLive, maxTurns int
	var timeout time.Duration
	cmd := &cobra.Command{
		Use:   "supervise MANAGER-PROFILE --task TEXT --worker PROFILE...",
		Short: "Run a manager agent that delegates to workers under one conserved budget",
		Long: `Run the manager profile in MANAGER-PROFILE (harness cli-base, declaring the
coordination verbs it may use as agent_runtime_coordination_* tools) on --task.
Its model spawns workers from the --worker profiles (named by their "name"),
every spawn reserved from one budget (--budget-tokens, --iterations and
optionally --budget-usd; each worker reserves --worker-tokens, one iteration and
--worker-usd unless its spawn asks otherwise). A result is delivered only when
it contains --expect TEXT, or when --check-cmd CMD (run by /bin/sh with the
result on stdin, within --check-timeout) exits 0; with neither, when it is not
empty.

Workers run on --provider (the run flags: scripted by default, offline, with
--script FILE; openai; anthropic; ...), each recorded in the run store. The
manager's model is, with --provider scripted, --manager-script FILE, a JSON
script of the manager's turns:

  {"turns": [{"calls": [{"verb": "spawn_worker", "args": {"profile": "note-writer", "task": "..."}}],
              "text": "...", "usage": {"inputTokens": 10, "outputTokens": 2}, "hang": false}]}

and without one a plan that spawns each worker once on the task and awaits
them. With --provider openai or anthropic the manager's model is the manager
profile's model.default on the same endpoint.

With --provider claude-code, codex or opencode that harness CLI is the
manager (and runs the workers): the manager profile declares that harness
and grants coordination verbs as agent_runtime_coordination_* tools. This
process serves the live run's verbs on 127.0.0.1 behind a per-run token it
writes to RUN-DIR/coordination-endpoint.json (0600, removed at run end),
and the harness gets one MCP server, "agentrt": agentrt mcp coordination
RUN-DIR, a relay to them. The run ends when the harness's turn ends, when
it calls stop, or 60s after its submit_result was accepted.

The run's journal lives in --run-dir DIR (a fresh temporary directory when
not given); --resume continues the run a journal in DIR holds after its
process exited: settled workers are replayed, not run again. While it runs,
another process steers and cancels it with agentrt supervise steer and
agentrt supervise cancel.

Progress (spawns, settlements and their verdicts, steers, cancels) shows on
stderr; the result (winner or no winner with its reason, the spend with
what is unknown shown as unknown, the run dir) on stdout, or as JSON with
--json.

With OTEL_EXPORTER_OTLP_ENDPOINT set, the supervised run is traced over
OTLP/HTTP: a supervisor.run span, a supervisor.node span per worker and each
worker's run under its node, in a trace derived from the run id.

Exit status: 0 when the run has a winner, 1 when it has none, 2 on usage errors.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			switch {
			case strings.TrimSpace(task) == "" && !resume:
				return usage("--task is required")
			case len(workers) == 0:
				return usage("at least one --worker PROFILE is required")
			case expect != "" && checkCmd != "":
				return usage("--expect and --check-cmd are two checks; give one")
			case checkTimeout <= 0:
				return usage("--check-timeout must be positive")
			case budgetTokens <= 0 || iterations <= 0:
				return usage("--budget-tokens and --iterations must be positive")
			case budgetUSD < 0 || workerUSD < 0 || workerTokens < 0 || maxLive < 0:
				return usage("budgets and --max-live cannot be negative")
			case resume && runDir == "":
				return usage("--resume needs --run-dir, the directory of the run to continue")
			case managerScript != "" && providerName != "scripted":
				return usage("--manager-script applies to --provider scripted only")
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
			var router contract.ChatModel
			if external {
				if string(mgr.Harness) != providerName {
					return usage("--provider %s runs the manager on that harness: the manager profile must declare \"harness\": %q (it declares %q)", providerName, providerName, mgr.Harness)
				}
			} else if router, err = routerModel(providerName, managerScript, baseURL, openaiAPI, mgr, names, task); err != nil {
				return err
			}
			lenses, err := readAnalysts(stdio, analystsPath)
			if err != nil {
				return err
			}
			provider, err := open(providerName, scriptPath, baseURL, openaiAPI)
			if err != nil {
				return err
			}
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			var brain supervise.Brain
			if external {
				// The harness is the manager: it reaches this run's verbs
				// through agentrt mcp coordination RUN-DIR, a relay to the
				// endpoint this process serves while the run is live.
				hb, err := coordmcp.NewHarnessBrain(mgr, provider, coordmcp.HarnessOptions{Store: s, Version: Version,
					Logger: slog.New(slog.NewTextHandler(stdio.Err, &slog.HandlerOptions{Level: slog.LevelWarn}))})
				if err != nil {
					return usage("%v", err)
				}
				brain = hb
			}
			if runDir == "" {
				if runDir, err = os.MkdirTemp("", "agentrt-supervise-"); err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
			}
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
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
				Deliverable:    expectDeliverable(expect),
				Executor:       &supervise.KernelExecutor{Provider: provider, Store: s},
				Router:         router,
				Brain:          brain,
				MaxTurns:       maxTurns,
				RunDir:         runDir,
				RunID:          runID,
				Resume:         resume,
				Analysts:       lenses,
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			o.Observer = tracing.SuperviseObserver()
			if checkCmd != "" {
				o.Deliverable = commandDeliverable(checkCmd, checkTimeout)
			}
			if budgetUSD > 0 {
				o.Budget.MicroUSD = int64p(int64(math.Round(budgetUSD * 1e6)))
			}
			if workerUSD > 0 {
				o.PerWorker.MicroUSD = int64p(int64(math.Round(workerUSD * 1e6)))
			}
			prog := startProgress(ctx, stdio.Err, runDir, resume)
			res, err := supervise.Supervise(ctx, mgr, task, o)
			prog.stop()
			if err != nil {
				var exists *supervise.RunExistsError
				if errors.Is(err, supervise.ErrInvalidOptions) || errors.Is(err, supervise.ErrUnsupportedHarness) || errors.As(err, &exists) {
					return usage("%v", err)
				}
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				if err := writeJSON(stdio.Out, supervisedValue(res, runDir)); err != nil {
					return err
				}
			} else {
				printSupervised(stdio.Out, res, runDir)
			}
			if res.Status != supervise.StatusWinner {
				return refused()
			}
			return nil
		},
	}
	sf.register(cmd)
	f := cmd.Flags()
	f.StringVar(&task, "task", "", "the manager's task (required, except with --resume)")
	f.StringArrayVar(&workers, "worker", nil, "a worker profile the manager may spawn, by its name (repeatable, at least one)")
	f.StringVar(&providerName, "provider", "scripted", "provider the workers (and, for openai, anthropic, claude-code, codex and opencode, the manager) run on")
	f.StringVar(&baseURL, "base-url", "", "the model endpoint of the provider (default: the vendor's)")
	f.StringVar(&openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses")
	f.StringVar(&scriptPath, "script", "", "script for the workers' scripted provider (default: answer every task)")
	f.StringVar(&managerScript, "manager-script", "", "script of the manager's scripted model (default: spawn each worker once and await them)")
	f.StringVar(&expect, "expect", "", "deliver only a result that contains this text")
	f.StringVar(&checkCmd, "check-cmd", "", "deliver only a result for which this shell command, given the result on stdin, exits 0")
	f.DurationVar(&checkTimeout, "check-timeout", 2*time.Minute, "how long --check-cmd may run before the result counts as not judged")
	f.StringVar(&runDir, "run-dir", "", "directory of the run's journal (default: a new temporary directory)")
	f.StringVar(&runID, "run-id", "", "the run's id, the root of its worker ids (default: generated)")
	f.BoolVar(&resume, "resume", false, "continue the run journaled in --run-dir")
	f.StringVar(&analystsPath, "analysts", "", analystsFlagUsage+"; the manager runs them with run_analyst")
	f.Int64Var(&budgetTokens, "budget-tokens", 100_000, "token ceiling of the whole run, manager included")
	f.Float64Var(&budgetUSD, "budget-usd", 0, "dollar ceiling of the whole run (default: none)")
	f.Int64Var(&iterations, "iterations", 8, "worker iteration ceiling of the whole run (each worker run is one)")
	f.Int64Var(&workerTokens, "worker-tokens", 0, "tokens each worker reserves (default: a quarter of --budget-tokens, half with one worker profile)")
	f.Float64Var(&workerUSD, "worker-usd", 0, "dollars each worker reserves (default: none)")
	f.IntVar(&maxLive, "max-live", 0, "most workers live at once (default: no cap)")
	f.IntVar(&maxTurns, "max-turns", 0, "most tool turns of the manager's model (default: the kernel's backstop)")
	f.DurationVar(&timeout, "timeout", 0, "give up after this long (the run ends cancelled)")
	f.BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.AddCommand(newSuperviseSteerCmd(stdio), newSuperviseCancelCmd(stdio))
	return cmd
}

func int64p(v int64) *int64 { return &v }

func expectDeliverable(expect string) supervise.Deliverable {
	check := expectCheck(expect)
	d := supervise.Deliverable{Describe: "a result that is not empty"}
	if expect != "" {
		d.Describe = fmt.Sprintf("a result that contains %q", expect)
	}
	d.Check = func(ctx context.Context, out supervise.Output) (kernel.Verdict, error) {
		return check(ctx, kernel.Outcome{Text: out.Text})
	}
	return d
}

// routerModel is the manager's chat model: a script, the default plan, or
// the manager profile's model on the openai or anthropic endpoint.
func routerModel(providerName, scriptPath, baseURL, openaiAPI string, mgr *profile.Profile, workers []string, task string) (contract.ChatModel, error) {
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
			return scripted.NewChatModel(defaultPlan(workers, task)), nil
		}
		data, err := os.ReadFile(scriptPath)
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: err}
		}
		script, err := parseManagerScript(data)
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", scriptPath, err)}
		}
		return scripted.NewChatModel(script), nil
	case "openai":
		m, err := openai.New(openai.Options{API: openai.API(openaiAPI), BaseURL: baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: model})
		if err != nil {
			return nil, usage("%v", err)
		}
		return m, nil
	case "anthropic":
		m, err := anthropic.NewModel(anthropic.Options{BaseURL: baseURL, APIKey: os.Getenv("ANTHROPIC_API_KEY"), Model: model})
		if err != nil {
			return nil, usage("%v", err)
		}
		return m, nil
	}
	return nil, usage("--provider %s runs workers only; the manager's model needs scripted, openai or anthropic", providerName)
}

// isHarnessProvider reports whether --provider names an external
// harness CLI, which then runs the manager too (coordmcp.HarnessBrain).
func isHarnessProvider(name string) bool {
	return name == "claude-code" || name == "codex" || name == "opencode"
}

// defaultPlan spawns each worker once on the task, awaits every
// settlement, and ends.
func defaultPlan(workers []string, task string) scripted.ChatScript {
	return defaultPlanAwaiting(workers, len(workers), task)
}

// defaultPlanAwaiting is defaultPlan awaiting n events (settlements and
// findings) instead of one per worker.
func defaultPlanAwaiting(workers []string, n int, task string) scripted.ChatScript {
	var spawns, awaits []contract.ChatEvent
	for i, w := range workers {
		spawns = append(spawns, managerCall(fmt.Sprintf("s%d", i+1), supervise.VerbSpawnWorker, map[string]any{"profile": w, "label": w, "task": task}))
	}
	for i := range n {
		awaits = append(awaits, managerCall(fmt.Sprintf("a%d", i+1), supervise.VerbAwaitEvent, map[string]any{"timeoutMs": supervise.MaxAwaitTimeout.Milliseconds()}))
	}
	return scripted.ChatScript{Turns: []scripted.ChatTurn{{Events: spawns}, {Events: awaits}, {Events: []contract.ChatEvent{scripted.Text("Every worker settled.")}}}}
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
			Args json.RawMessage `json:"args"`
		} `json:"calls"`
		Text  string `json:"text"`
		Usage *struct {
			InputTokens  int64 `json:"inputTokens"`
			OutputTokens int64 `json:"outputTokens"`
		} `json:"usage"`
		Hang bool `json:"hang"`
	} `json:"turns"`
	Cycle bool `json:"cycle"`
}

func parseManagerScript(data []byte) (scripted.ChatScript, error) {
	var ms managerScript
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&ms); err != nil {
		return scripted.ChatScript{}, err
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
			turn.Events = append(turn.Events, scripted.Call(fmt.Sprintf("call%d", n), supervise.ToolPrefix+c.Verb, args))
		}
		if t.Text != "" {
			turn.Events = append(turn.Events, scripted.Text(t.Text))
		}
		if t.Usage != nil {
			turn.Events = append(turn.Events, scripted.Usage(t.Usage.InputTokens, t.Usage.OutputTokens, contract.UsageDelta))
		}
		turn.Hang = t.Hang
		script.Turns = append(script.Turns, turn)
	}
	return script, nil
}

// progress prints the journal's records on w as the run appends them.
type progress struct {
	cancel context.CancelFunc
	done   chan struct{}
	once   sync.Once
}

func startProgress(ctx context.Context, w io.Writer, dir string, resume bool) *progress {
	ctx, cancel := context.WithCancel(ctx)
	p := &progress{cancel: cancel, done: make(chan struct{})}
	seen := 0
	if resume {
		if recs, _, err := supervise.ReadRunDir(ctx, dir); err == nil {
			seen = len(recs)
			fmt.Fprintf(w, "resuming %s: %d journaled records\n", dir, seen)
		}
	}
	go func() {
		defer close(p.done)
		t := time.NewTicker(supervise.ControlScanInterval)
		defer t.Stop()
		for {
			stopped := ctx.Err() != nil
			if recs, _, err := supervise.ReadRunDir(context.WithoutCancel(ctx), dir); err == nil {
				for _, r := range recs[min(seen, len(recs)):] {
					if line := progressLine(r); line != "" {
						fmt.Fprintln(w, line)
					}
				}
				seen = max(seen, len(recs))
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

// stop prints what is left of the journal and returns.
func (p *progress) stop() {
	p.once.Do(func() {
		p.cancel()
		<-p.done
	})
}

func progressLine(r supervise.Record) string {
	switch r.Kind {
	case supervise.KindRunStarted:
		return fmt.Sprintf("run %s started", r.RunID)
	case supervise.KindSpawned:
		return fmt.Sprintf("spawned %s %s (%s)", r.Node, orName(r.Label, r.Profile), r.Profile)
	case supervise.KindSettled:
		return fmt.Sprintf("settled %s %s, %s", r.Node, r.State, deliveryText(r.Delivered, r.Verdict, r.CheckError, r.Reason))
	case supervise.KindSubmitted:
		return "submitted the manager's result: " + deliveryText(r.Verdict != nil && r.Verdict.Passed, r.Verdict, "", "")
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
	case v != nil && v.Reason != "":
		s += " (" + v.Reason + ")"
	case checkErr != "":
		s += " (check not judged: " + checkErr + ")"
	case reason != "":
		s += " (" + reason + ")"
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
	switch res.Status {
	case supervise.StatusWinner:
		fmt.Fprintf(w, "supervised run %s  winner %s\n", res.RunID, res.Winner.Node)
		if res.Winner.Verdict != nil && res.Winner.Verdict.Reason != "" {
			fmt.Fprintf(w, "  check     passed: %s\n", res.Winner.Verdict.Reason)
		}
		fmt.Fprintf(w, "  result    %s\n", clip(strings.ReplaceAll(res.Winner.Text, "\n", " "), 120))
	default:
		fmt.Fprintf(w, "supervised run %s  NO winner: %s\n", res.RunID, res.Reason)
		if res.Error != nil {
			fmt.Fprintf(w, "  why       %s: %s\n", res.Error.Name, res.Error.Message)
		}
		if res.Cancellation != nil {
			fmt.Fprintf(w, "  cancelled by %s %s\n", res.Cancellation.Source, res.Cancellation.Reason)
		}
	}
	for _, n := range res.Tree {
		replayed := ""
		if n.Replayed {
			replayed = ", replayed"
		}
		fmt.Fprintf(w, "  worker    %s %s %s, %s%s\n", n.ID, orName(n.Label, n.Profile), n.State, deliveryText(n.Delivered, n.Verdict, "", ""), replayed)
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
	if res.Resumed {
		fmt.Fprintf(w, "  resumed   from the journal of an earlier process\n")
	}
	fmt.Fprintf(w, "  run dir   %s\n", runDir)
}

func knownNumber(n int64, known bool) canonjson.Value {
	if !known {
		return canonjson.NullValue()
	}
	return canonjson.NumberValue(float64(n))
}

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
			{Name: "tokens", Value: canonjson.NumberValue(float64(s.Tokens))},
			{Name: "iterations", Value: canonjson.NumberValue(float64(s.Iterations))},
			{Name: "usd", Value: canonjson.NumberValue(float64(s.MicroUSD) / 1e6)},
		})},
	})
}

func supervisedValue(res supervise.SupervisedResult, runDir string) canonjson.Value {
	m := []canonjson.Member{
		{Name: "runId", Value: canonjson.StringValue(res.RunID)},
		{Name: "status", Value: canonjson.StringValue(string(res.Status))},
	}
	if res.Winner != nil {
		w := []canonjson.Member{
			{Name: "node", Value: canonjson.StringValue(string(res.Winner.Node))},
			{Name: "text", Value: canonjson.StringValue(res.Winner.Text)},
			{Name: "submitted", Value: canonjson.BoolValue(res.Winner.Submitted)},
		}
		if res.Winner.OutRef != "" {
			w = append(w, canonjson.Member{Name: "outRef", Value: canonjson.StringValue(res.Winner.OutRef)})
		}
		m = append(m, canonjson.Member{Name: "winner", Value: canonjson.ObjectValue(w)})
	} else {
		m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(string(res.Reason))})
	}
	if res.Error != nil {
		m = append(m, canonjson.Member{Name: "error", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "name", Value: canonjson.StringValue(res.Error.Name)},
			{Name: "message", Value: canonjson.StringValue(res.Error.Message)},
		})})
	}
	if c := res.Cancellation; c != nil {
		m = append(m, canonjson.Member{Name: "cancellation", Value: canonjson.ObjectValue([]canonjson.Member{
			{Name: "source", Value: canonjson.StringValue(c.Source)},
			{Name: "reason", Value: canonjson.StringValue(c.Reason)},
			{Name: "operationId", Value: canonjson.StringValue(c.OperationID)},
		})})
	}
	var workers []canonjson.Value
	for _, n := range res.Tree {
		wm := []canonjson.Member{
			{Name: "id", Value: canonjson.StringValue(string(n.ID))},
			{Name: "label", Value: canonjson.StringValue(n.Label)},
			{Name: "profile", Value: canonjson.StringValue(n.Profile)},
			{Name: "state", Value: canonjson.StringValue(string(n.State))},
			{Name: "delivered", Value: canonjson.BoolValue(n.Delivered)},
			{Name: "replayed", Value: canonjson.BoolValue(n.Replayed)},
		}
		if n.Verdict != nil {
			v, _ := canonjson.ToValue(n.Verdict)
			wm = append(wm, canonjson.Member{Name: "verdict", Value: v})
		}
		workers = append(workers, canonjson.ObjectValue(wm))
	}
	var gaps []canonjson.Value
	for _, g := range res.SpendGaps {
		ch := make([]canonjson.Value, len(g.Channels))
		for i, c := range g.Channels {
			ch[i] = canonjson.StringValue(c)
		}
		gaps = append(gaps, canonjson.ObjectValue([]canonjson.Member{
			{Name: "id", Value: canonjson.StringValue(string(g.ID))},
			{Name: "kind", Value: canonjson.StringValue(string(g.Kind))},
			{Name: "channels", Value: canonjson.ArrayValue(ch)},
		}))
	}
	m = append(m,
		canonjson.Member{Name: "workers", Value: canonjson.ArrayValue(workers)},
		canonjson.Member{Name: "spent", Value: spentValue(res.Spent)},
		canonjson.Member{Name: "manager", Value: spentValue(res.Breakdown.DriverInference)},
		canonjson.Member{Name: "spendGaps", Value: canonjson.ArrayValue(gaps)},
		canonjson.Member{Name: "resumed", Value: canonjson.BoolValue(res.Resumed)},
		canonjson.Member{Name: "ms", Value: canonjson.NumberValue(float64(res.MS))},
		canonjson.Member{Name: "runDir", Value: canonjson.StringValue(runDir)},
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
label or profile name, or the run id for the manager) and wait up to --wait for
the running supervisor's acknowledgement. Repeating the same --operation-id
with the same message is safe; with another message it is refused. A worker
run through the kernel takes the message as its next turn's input, and the
acknowledgement says delivered only then: until its current turn ends it stays
unknown, and running this again with the same --operation-id shows the outcome.

Exit status: 0 when the acknowledgement says delivered, 1 for any other
acknowledgement or none within --wait, 2 on usage errors.`,
		Args: cobra.ExactArgs(2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if message == "" || opID == "" {
				return usage("--message and --operation-id are required")
			}
			req, err := supervise.WriteWorkerSteer(ctx, args[0], args[1], supervise.WorkerSteer{OperationID: opID, Message: message, Source: "cli", Interrupt: interrupt})
			if err != nil {
				return controlError(err)
			}
			if !asJSON {
				fmt.Fprintf(stdio.Err, "steer %s requested for %s; waiting up to %s\n", req.OperationID, req.Worker, wait)
			}
			ack, err := pollAck(ctx, wait, func() (*supervise.SteerAck, bool, error) {
				// The supervisor claims a request (effect unknown) before
				// it tries to deliver it; only what follows is its answer.
				a, err := supervise.ReadSteerAck(ctx, args[0], opID)
				return a, a != nil && a.Effect != supervise.SteerUnknown, err
			})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				if err := writeJSON(stdio.Out, map[string]any{"request": req, "acknowledgement": ack}); err != nil {
					return err
				}
			} else if ack == nil {
				fmt.Fprintf(stdio.Out, "steer %s: no acknowledgement within %s\n", opID, wait)
			} else if ack.Effect == supervise.SteerUnknown {
				fmt.Fprintf(stdio.Out, "steer %s to %s: unknown after %s: the supervisor holds it until the worker's next turn takes it; run this again with the same --operation-id to see the outcome\n", opID, ack.Worker, wait)
			} else {
				fmt.Fprintf(stdio.Out, "steer %s to %s: %s%s\n", opID, ack.Worker, ack.Effect, detail(ack.Detail))
			}
			if ack == nil || ack.Effect != supervise.SteerDelivered {
				return refused()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&message, "message", "", "the message to deliver (required)")
	cmd.Flags().StringVar(&opID, "operation-id", "", "the request's operation id, [A-Za-z0-9._-] (required)")
	cmd.Flags().BoolVar(&interrupt, "interrupt", false, "ask the worker to act on it at once")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the acknowledgement")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the request and acknowledgement as JSON")
	return cmd
}

func newSuperviseCancelCmd(stdio IO) *cobra.Command {
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

Exit status: 0 when the cancellation was confirmed (cancelled) or found
nothing live (not_live), 1 otherwise, 2 on usage errors.`,
		Args: cobra.RangeArgs(1, 2),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if opID == "" {
				return usage("--operation-id is required")
			}
			dir := args[0]
			final := func(e kernel.Effect) bool { return e == kernel.EffectCancelled || e == kernel.EffectNotLive }
			var effect kernel.Effect
			var out any
			if len(args) == 2 {
				req, err := supervise.CancelWorker(ctx, dir, args[1], opID, supervise.CancelOptions{Reason: reason, Source: "cli"})
				if err != nil {
					return controlError(err)
				}
				if !asJSON {
					fmt.Fprintf(stdio.Err, "cancel %s requested for %s; waiting up to %s\n", opID, req.Worker, wait)
				}
				rec, err := pollAck(ctx, wait, func() (supervise.WorkerCancellation, bool, error) {
					r, err := supervise.ReadWorkerCancellation(ctx, dir, opID)
					return r, final(r.Effect), err
				})
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				effect, out = rec.Effect, rec
				if !asJSON {
					fmt.Fprintf(stdio.Out, "cancel %s of %s: %s%s\n", opID, orName(string(rec.WorkerID), rec.Worker), rec.Effect, detail(rec.Detail))
				}
			} else {
				if _, err := supervise.CancelRun(ctx, dir, opID, supervise.RunCancelOptions{Source: "cli", Reason: reason}); err != nil {
					return controlError(err)
				}
				if !asJSON {
					fmt.Fprintf(stdio.Err, "cancel %s requested for the run; waiting up to %s\n", opID, wait)
				}
				rec, err := pollAck(ctx, wait, func() (*supervise.RunCancellation, bool, error) {
					r, err := supervise.ReadRunCancellation(ctx, dir)
					return r, r != nil && (final(r.Effect) || r.Effect == kernel.EffectUnknown), err
				})
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				out = rec
				if rec == nil {
					effect = kernel.EffectUnknown
					if !asJSON {
						fmt.Fprintf(stdio.Out, "cancel %s of the run: no acknowledgement within %s\n", opID, wait)
					}
				} else {
					effect = rec.Effect
					if !asJSON {
						fmt.Fprintf(stdio.Out, "cancel %s of the run: %s%s\n", opID, rec.Effect, detail(rec.Detail))
					}
				}
			}
			if asJSON {
				if err := writeJSON(stdio.Out, out); err != nil {
					return err
				}
			}
			if !final(effect) {
				return refused()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&opID, "operation-id", "", "the request's operation id, [A-Za-z0-9._-] (required)")
	cmd.Flags().StringVar(&reason, "reason", "", "why, recorded with the request")
	cmd.Flags().DurationVar(&wait, "wait", 10*time.Second, "how long to wait for the cancellation to be confirmed")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the acknowledgement as JSON")
	return cmd
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
