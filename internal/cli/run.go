package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/clibridge"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
)

func newRunCmd(stdio IO, open providerOpener) *cobra.Command {
	var sf storeFlags
	var asJSON, quiet bool
	var task, providerName, scriptPath, expect, baseURL, openaiAPI string
	var stage int
	var lease, timeout time.Duration
	var rf retainFlags
	var enqueue bool
	var idemKey, riverSchema string
	var seatsPath string
	cmd := &cobra.Command{
		Use:   "run PROFILE --task TEXT",
		Short: "Run one exact turn of an agent profile and record what happened",
		Long: `Run one exact turn of the profile in PROFILE (or - for stdin) and record it in
the run store. The provider must honor the profile or the run is refused before
anything is spent. The run is delivered only if the completion check passes:
the result contains --expect TEXT, or, without --expect, the result is not empty.

The default provider is "scripted": offline, deterministic, no credentials. It
answers each task with a note; --script FILE plays a script instead (see
providers/scripted). --provider openai runs harness cli-base profiles on an
OpenAI-compatible Chat Completions endpoint (or, with --openai-api responses, a
Responses endpoint): OpenAI's, or --base-url URL, with the key in
OPENAI_API_KEY. --provider anthropic runs them on the Anthropic Messages API:
Anthropic's, or --base-url URL, with the key in ANTHROPIC_API_KEY.
--provider claude-code, codex and opencode run the harness CLI (claude from
npm @anthropic-ai/claude-code, codex from @openai/codex, opencode from
opencode-ai, found in PATH) as a child process in a fresh working directory,
its model endpoint --base-url or the vendor's, with the key in
ANTHROPIC_API_KEY (claude-code) or OPENAI_API_KEY (codex, opencode).
--provider remote runs on an agentrt serve sidecar at --base-url URL, with
its bearer token in AGENTRT_SERVE_TOKEN; an https:// server's certificate is
checked against the system's roots and the CA in the PEM file
AGENTRT_SERVE_CA_FILE, when set.
Unknown usage is printed as unknown, never as 0.

While the run goes, the model's text streams to stdout as it arrives and
what the run waits for (the first token, a retry of a refused model
request with its delay, tool calls, the model, an answer) shows on stderr:
as one updating status line on a terminal, as plain lines otherwise. The summary follows the text. --json prints only the result as
JSON on stdout; --quiet prints only the summary.

agentrt run is a one-shot driver: its decision is "done" when the run was
delivered and "fail" otherwise (use kernel.Rounds for plan/decide loops).

--retain starts a retained run instead: the provider owns it, its admission
(intent, environment, dispatched) is recorded in the run store before anything
is printed, and the first thing printed is its control ref; then its events
and result follow, or, with --detach, the command exits. agentrt runs attach
RUN re-attaches to it from any process that shares the store and reaches the
provider, and agentrt runs recover RUN recovers it after this process died. A
run that must outlive this process needs a provider outside it (--provider
remote); the scripted provider lives in this process and ends with it.
On a profile with seats, --retain runs the seat chain on the provider from
the first stage it can honor: each stage is a retained run of its own (its
projection, its admission records, its credential requests), and a typed
quota refusal — at the stage's create, its dispatch or, while followed, part
way through its turn — moves on to the next authored stage under the same
seated run id and logical node; stderr says so, and a summary names every
stage tried. With --seats ACCOUNTS.json each stage runs on the provider the
file names for it instead (see --seats below). runs attach and runs recover
on the seated run's id act on the stage it is on.

With OTEL_EXPORTER_OTLP_ENDPOINT (or OTEL_EXPORTER_OTLP_TRACES_ENDPOINT) set,
a run is traced over OTLP/HTTP with the OpenTelemetry GenAI conventions
(headers from OTEL_EXPORTER_OTLP_HEADERS); its trace id is derived from the
run id. A --retain run's trace is derived from its record id: its root span is
exported once the run is dispatched, and agentrt runs attach and runs recover,
from any process, add their spans to the same trace. Without one, nothing is
traced.

--enqueue submits the run to the worker fleet instead of running it here: the
run is recorded pending in the PostgreSQL run store (--database URL or
$AGENTRT_DATABASE_URL) and its job enqueued on the --provider queue, and its
run id is printed at once (--json: the run id, job id and queue). An
"agentrt worker --provider NAME" process on any machine executes it, with its
own credentials; "agentrt runs show RUN" and "agentrt runs events RUN --follow"
read it from any machine that shares the database. --idempotency-key makes
the submission safe to retry: the same key and request print the same run id.

--seats ACCOUNTS.json runs the profile's seat chain instead of one provider:
from --stage on, each stage runs on the provider the file names for its stage
index or its seat's account, and a typed quota refusal moves the run on to the
next authored stage under the same run id and deadline (never to a provider
outside the chain). The summary lists every stage tried and why it moved on:
the refusal with its retry-after, and each stage's continuity (native: it went
on in the session the refused stage left; fresh, with the reason). The file
holds no secret:
  {"accounts": {"acct-a": {"provider": "openai", "apiKeyEnv": "TEAM_A_KEY"}},
   "stages": {"1": {"provider": "remote", "baseUrl": "http://host:8080",
                    "tokenFile": "serve.token"},
              "2": {"provider": "scripted", "script": "script.json"}}}
A stage that the file does not resolve, or whose key variable is unset, is
refused before anything runs. agentrt runs resume RUN --seats FILE goes on
with a seated run whose process died (it reads the profile file the run
recorded again).

Exit status: 0 when the run completed and was delivered (with --enqueue: when
it was submitted), 1 otherwise.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if strings.TrimSpace(task) == "" {
				return usage("--task is required")
			}
			if err := checkTexts("--task", task, "--expect", expect); err != nil {
				return err
			}
			if err := checkGivenNotEmpty(cmd, "idempotency-key"); err != nil {
				return err
			}
			if err := checkKey("--idempotency-key", idemKey); err != nil {
				return err
			}
			if seatsPath != "" && rf.retain {
				return runRetainedSeatsCmd(ctx, cmd, stdio, sf, rf, args[0], seatsPath, task, timeout, asJSON, quiet)
			}
			if seatsPath != "" {
				if err := checkSeatedFlags(cmd); err != nil {
					return err
				}
				return runSeatedCmd(ctx, stdio, sf, args[0], seatedRun{seatsPath: seatsPath, task: task, expect: expect,
					stage: stage, lease: lease, asJSON: asJSON, quiet: quiet}, timeout)
			}
			if enqueue {
				return enqueueRun(cmd, stdio, sf, args[0], fleet.Spec{Task: task, Provider: providerName, Expect: expect, Stage: stage,
					TimeoutMillis: timeout.Milliseconds()}, idemKey, riverSchema, asJSON)
			}
			for _, name := range []string{"idempotency-key", "river-schema"} {
				if cmd.Flags().Changed(name) {
					return usage("--%s applies to --enqueue only", name)
				}
			}
			if err := rf.check(cmd); err != nil {
				return err
			}
			p, err := loadProfile(stdio, args[0], asJSON)
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
			if timeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, timeout)
				defer cancel()
			}
			if rf.retain {
				return runRetained(ctx, stdio, rf, provider, s, p, task, asJSON)
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			live := liveOptions{Label: args[0] + " with " + provider.Name(), Short: provider.Name()}
			if !quiet {
				live.Status = stdio.Err
				if !asJSON {
					live.Text = stdio.Out
				}
			}
			res, runErr := runLive(ctx, live, kernel.Request{Profile: p, Task: task, Provider: provider, Store: s,
				Check: kernel.ExpectCheck(expect), Stage: stage, LeaseTTL: lease, Observer: tracing.Observer()})
			if errors.Is(runErr, kernel.ErrInvalidOptions) {
				return usage("%v", runErr)
			}
			if res == nil {
				return &exitError{code: ExitFailed, err: runErr}
			}
			if asJSON {
				if err := writeJSON(stdio.Out, resultValue(res)); err != nil {
					return err
				}
			} else {
				printResult(stdio.Out, res, sf.describe())
			}
			var re *kernel.RunError
			if runErr != nil && !errors.As(runErr, &re) {
				return &exitError{code: ExitFailed, err: runErr}
			}
			if res.Status != store.StatusCompleted || !res.Delivered {
				return refused()
			}
			return nil
		},
	}
	sf.register(cmd)
	rf.register(cmd)
	cmd.Flags().StringVar(&task, "task", "", "the task to give the agent (required)")
	cmd.Flags().StringVar(&providerName, "provider", "scripted", "provider to run on (scripted, openai, anthropic, claude-code, codex, opencode, remote)")
	cmd.Flags().StringVar(&baseURL, "base-url", "", "the model endpoint of the openai, anthropic, claude-code, codex or opencode provider (default: the vendor's), or the agentrt serve address of the remote provider")
	cmd.Flags().StringVar(&openaiAPI, "openai-api", "", "the wire protocol of the openai provider: chat-completions or responses (default chat-completions)")
	cmd.Flags().StringVar(&scriptPath, "script", "", "script for the scripted provider (default: answer every task)")
	cmd.Flags().StringVar(&expect, "expect", "", "deliver only if the result contains this text")
	cmd.Flags().StringVar(&seatsPath, "seats", "", "run the profile's seat chain: a JSON file naming each stage's provider (see above)")
	cmd.Flags().IntVar(&stage, "stage", 0, "seat stage to run (0 is the first)")
	cmd.Flags().DurationVar(&lease, "lease", kernel.DefaultLeaseTTL, "how long the run stays running if this process dies or stalls (at least 1s); once it lapses the run is interrupted and this process may record nothing more")
	cmd.Flags().DurationVar(&timeout, "timeout", 0, "give up after this long (the run is recorded as timed out)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVarP(&quiet, "quiet", "q", false, "print only the summary (or the JSON result): no streamed text, no progress")
	cmd.Flags().BoolVar(&enqueue, "enqueue", false, "submit the run to the worker fleet on --database and print its run id at once, instead of running it here")
	cmd.Flags().StringVar(&idemKey, "idempotency-key", "", "with --enqueue: a retry with this key and request returns the same run")
	cmd.Flags().StringVar(&riverSchema, "river-schema", fleet.DefaultRiverSchema, "with --enqueue: schema of River's job tables")
	return cmd
}

// enqueueFlagsRefused are the run flags that say how to run here, which a
// run submitted to the fleet does not: its worker's own flags do.
var enqueueFlagsRefused = []string{"db", "script", "base-url", "openai-api", "lease", "quiet", "retain", "detach", "key", "turn-id"}

// enqueueRun submits the run to the fleet (agentrt run --enqueue).
func enqueueRun(cmd *cobra.Command, stdio IO, sf storeFlags, path string, spec fleet.Spec, key, riverSchema string, asJSON bool) error {
	for _, name := range enqueueFlagsRefused {
		if cmd.Flags().Changed(name) {
			return usage("--%s does not apply to --enqueue: the worker that takes the run decides how it runs (agentrt worker --help)", name)
		}
	}
	u := sf.url()
	if u == "" {
		return usage("--enqueue needs the fleet's PostgreSQL database: --database URL or $AGENTRT_DATABASE_URL")
	}
	if spec.TimeoutMillis < 0 {
		return usage("--timeout cannot be negative")
	}
	p, err := loadProfile(stdio, path, asJSON)
	if err != nil {
		return err
	}
	if spec.Profile, err = p.Value(); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	ctx, cancel := bounded(cmd)
	defer cancel()
	return submitToFleet(ctx, stdio, fleetFlags{database: u, riverSchema: riverSchema, storeSchema: sf.schema}, fleet.Submission{Spec: spec, IdempotencyKey: key}, asJSON, true)
}

// runLive runs one turn as kernel.Execute does, showing it as it happens
// (see liveRun): every envelope the moment it is durable, then the
// recorded result.
func runLive(ctx context.Context, o liveOptions, req kernel.Request) (*kernel.Result, error) {
	l := newLiveRun(o)
	l.begin()
	sr := kernel.StreamRun(ctx, req)
	// Never break out of the loop: that would cancel the run. An error
	// the stream yields is the run's own, which Result returns as well.
	for env, err := range sr.Events() {
		if err == nil {
			l.event(env)
		}
	}
	res, err := sr.Result()
	final := ""
	if res != nil {
		final = res.Text
	}
	l.end(final)
	return res, err
}

func openProvider(name, scriptPath, baseURL, openaiAPI string) (contract.Provider, error) {
	if baseURL != "" && name == "scripted" {
		return nil, usage("--base-url does not apply to --provider scripted")
	}
	if openaiAPI != "" && name != "openai" {
		return nil, usage("--openai-api applies to --provider openai only")
	}
	spec := providerSpec{Name: name, ScriptPath: scriptPath, BaseURL: baseURL, OpenAIAPI: openaiAPI}
	switch name {
	case "remote":
		// An agentrt serve sidecar; its token comes from the environment,
		// never from a flag (flags show in process listings).
		if baseURL == "" {
			return nil, usage("--provider remote needs --base-url, the sidecar's address")
		}
		spec.Token = os.Getenv("AGENTRT_SERVE_TOKEN")
	case "claude-code", "anthropic":
		// The model endpoint's key comes from the vendor's variable, never
		// from the profile.
		spec.APIKey = os.Getenv("ANTHROPIC_API_KEY")
	case "codex", "opencode", "openai":
		// opencode's endpoint is OpenAI-compatible.
		spec.APIKey = os.Getenv("OPENAI_API_KEY")
	}
	return buildProvider(spec)
}

// providerSpec is a provider and how to reach it: what --provider and
// its flags, or an entry of a --seats file, name. Keys and tokens are
// values read from where the user keeps them, never from a flag or file
// that is echoed.
type providerSpec struct {
	Name, ScriptPath, BaseURL, OpenAIAPI string
	// APIKey is the model endpoint's key; Token a remote sidecar's.
	APIKey, Token string
}

// buildProvider opens the provider spec names: the one owner of how each
// provider agentrt knows is built.
func buildProvider(spec providerSpec) (contract.Provider, error) {
	switch spec.Name {
	case "remote":
		if spec.BaseURL == "" {
			return nil, usage("the remote provider needs the sidecar's address")
		}
		roots, err := serveRoots()
		if err != nil {
			return nil, err
		}
		p, err := remote.New(remote.Options{BaseURL: spec.BaseURL, Token: spec.Token, RootCAs: roots})
		if err != nil {
			return nil, usage("%v", err)
		}
		return p, nil
	case "claude-code", "codex", "opencode":
		// The harness CLI runs as a child process.
		p, err := clibridge.New(clibridge.Options{Harness: harness.Type(spec.Name), BaseURL: spec.BaseURL, APIKey: spec.APIKey})
		if errors.Is(err, clibridge.ErrBinaryNotFound) {
			return nil, &exitError{code: ExitFailed, err: err}
		}
		if err != nil {
			return nil, usage("%v", err)
		}
		return p, nil
	case "openai":
		// The provider knows OpenAI's own endpoint's rules (usage, bare
		// model ids); another endpoint is not vouched for and gets the
		// profile's id.
		p, err := openai.NewProvider(openai.ProviderOptions{
			Options: openai.Options{API: openai.API(spec.OpenAIAPI), BaseURL: spec.BaseURL, APIKey: spec.APIKey},
		})
		if err != nil {
			return nil, usage("%v", err)
		}
		return p, nil
	case "anthropic":
		// The provider knows the Messages API's rules (usage, bare model
		// ids) itself.
		p, err := anthropic.NewProvider(anthropic.ProviderOptions{
			Options: anthropic.Options{BaseURL: spec.BaseURL, APIKey: spec.APIKey},
		})
		if err != nil {
			return nil, usage("%v", err)
		}
		return p, nil
	case "scripted":
		script := scripted.DefaultScript()
		if spec.ScriptPath != "" {
			var err error
			data, err := readFile(spec.ScriptPath)
			if err != nil {
				return nil, err
			}
			if script, err = scripted.ParseScript(data); err != nil {
				return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", spec.ScriptPath, err)}
			}
		}
		return scripted.New(script, scripted.Options{}), nil
	}
	return nil, usage("unknown provider %q (available: scripted, openai, anthropic, claude-code, codex, opencode, remote)", spec.Name)
}

func resultValue(r *kernel.Result) canonjson.Value {
	m := []canonjson.Member{
		{Name: "runId", Value: canonjson.StringValue(r.RunID)},
		{Name: "status", Value: canonjson.StringValue(string(r.Status))},
		{Name: "decision", Value: canonjson.StringValue(string(decision(r)))},
		{Name: "delivered", Value: canonjson.BoolValue(r.Delivered)},
		{Name: "usage", Value: kernel.UsageValue(r.Usage)},
		{Name: "requestedModel", Value: nullableString(r.RequestedModel)},
		{Name: "servedModel", Value: nullableString(r.Served.Model)},
		{Name: "authoredProfileDigest", Value: canonjson.StringValue(r.AuthoredDigest)},
		{Name: "effectiveProfileDigest", Value: nullableString(r.EffectiveDigest)},
		{Name: "text", Value: canonjson.StringValue(r.Text)},
		{Name: "events", Value: canonjson.NumberValue(float64(r.Events))},
	}
	if r.Reason != "" {
		m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(r.Reason)},
			canonjson.Member{Name: "detail", Value: canonjson.StringValue(r.Detail)})
	}
	if r.Verdict != nil {
		v, _ := canonjson.ToValue(r.Verdict)
		m = append(m, canonjson.Member{Name: "verdict", Value: v})
	}
	if r.CheckError != "" {
		m = append(m, canonjson.Member{Name: "checkError", Value: canonjson.StringValue(r.CheckError)})
	}
	if r.Output.IsValid() {
		m = append(m, canonjson.Member{Name: "output", Value: r.Output})
	}
	if r.TeardownUnconfirmed != "" {
		m = append(m, canonjson.Member{Name: "teardownUnconfirmed", Value: canonjson.StringValue(r.TeardownUnconfirmed)})
	}
	return canonjson.ObjectValue(m)
}

func nullableString(s string) canonjson.Value {
	if s == "" {
		return canonjson.NullValue()
	}
	return canonjson.StringValue(s)
}

// printCheck writes the completion check's line: its verdict, or why it
// could not judge; nothing when no check ran.
func printCheck(w io.Writer, v *kernel.Verdict, checkErr string) {
	switch {
	case v != nil:
		verdict := "failed"
		if v.Passed {
			verdict = "passed"
		}
		fmt.Fprintf(w, "  check     %s: %s\n", verdict, v.Reason)
	case checkErr != "":
		fmt.Fprintf(w, "  check     not judged: %s\n", checkErr)
	}
}

func printResult(w io.Writer, r *kernel.Result, where string) {
	state := string(r.Status)
	if r.Status == store.StatusCompleted {
		if r.Delivered {
			state += ", delivered"
		} else {
			state += ", NOT delivered"
		}
	}
	fmt.Fprintf(w, "run %s  %s\n", r.RunID, state)
	fmt.Fprintf(w, "  decision  %s\n", decision(r))
	if r.Reason != "" {
		fmt.Fprintf(w, "  why       %s: %s\n", r.Reason, r.Detail)
	}
	served := r.Served.Model
	if served == "" {
		served = "unknown (not reported)"
	}
	fmt.Fprintf(w, "  model     requested %s, served %s\n", orUnknown(r.RequestedModel), served)
	fmt.Fprintf(w, "  profile   %s\n", r.AuthoredDigest)
	if r.EffectiveDigest != "" && r.EffectiveDigest != r.AuthoredDigest {
		fmt.Fprintf(w, "  effective %s\n", r.EffectiveDigest)
	}
	printCheck(w, r.Verdict, r.CheckError)
	fmt.Fprintf(w, "  usage     input %s, output %s, cost %s\n", r.Usage.InputTokens, r.Usage.OutputTokens, usd(r.Usage.CostUSD))
	if r.Text != "" {
		fmt.Fprintf(w, "  result    %s\n", clip(strings.ReplaceAll(r.Text, "\n", " "), 120))
	}
	if r.TeardownUnconfirmed != "" {
		fmt.Fprintf(w, "  teardown  NOT confirmed: %s\n", r.TeardownUnconfirmed)
	}
	fmt.Fprintf(w, "  recorded  %d events in %s\n", r.Events, where)
	fmt.Fprintf(w, "  next      agentrt runs show %s\n", r.RunID)
}

// decision is the one-shot driver's decision: done when delivered.
func decision(r *kernel.Result) kernel.Decision {
	if r.Status == store.StatusCompleted && r.Delivered {
		return kernel.DecisionDone
	}
	return kernel.DecisionFail
}

// orUnknown renders an empty string as unknown.
func orUnknown(s string) string {
	if s == "" {
		return "unknown"
	}
	return s
}

// usd renders a cost for people: "unknown", "≥ $0.25" (a floor) or "$0.25".
func usd(a ledger.Amount[float64]) string {
	switch s := a.String(); {
	case !a.Reported:
		return s
	case !a.Complete:
		return "≥ $" + strings.TrimPrefix(s, "≥ ")
	default:
		return "$" + s
	}
}

// clip shortens s to at most n runes, marking the cut with "…".
func clip(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	r := []rune(s)
	return string(r[:n-1]) + "…"
}
