package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/anthropic"
	"github.com/agentrt/agentrt/providers/openai"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/store"
)

// ExitHold is the exit code of `agentrt improve PROFILE` when the run
// finished and decided hold: nothing failed, but nothing should ship.
const ExitHold = 3

const improveSearchLong = `Search a profile's surface for a better candidate and measure it:

  agentrt improve PROFILE --scenarios FILE --judge exact [flags]

The method (the built-in greedy search over system-prompt variants, which a
model proposes) sees the train and selection cases by id only, never the
test cases. agentrt then runs the base profile and the selected candidate on
every test case itself, scores both with the judges, and decides:

  ship  the paired-bootstrap interval of the lift clears --minimum-lift and
        every cost is known                                     (exit 0)
  hold  anything else; the reasons say why                       (exit 3)

Nothing is activated: the candidate is printed (with --json, the complete
profile, its diffs and the candidate population) for the production path
(improve propose/review/activate). A failure exits 1, a usage error 2.

The scenarios FILE is JSON:

  {"cases": [{"id": "c1", "input": "…", "expected": "…", "partition": "train"},
             {"id": "c2", "input": "…", "expected": "…", "partition": "test"}]}

partition is train, selection or test; ids are unique.

--surface names what a candidate may change (runtime §3.9): prompt,
skills, memory, tools, mcp, hooks, subagents or agent-profile; each
candidate is the base profile with only that part replaced. skills is
resources.skills (with --skill NAME, the content of that one inline
skill), memory is resources.instructions (the AGENTS.md-style document),
hooks and subagents are the profile's maps. The built-in greedy method
rewrites text: the prompt's system prompt, or a text surface (memory text,
--skill content); searching the other surfaces takes a method from the Go
API (search.Method), and so do profile-component (the caller's own read
and apply of a named component) and code (patches run in git work trees).
The built-in agent is the kernel's tool loop: it honors the system prompt
and tools, and refuses (exit 1, saying which) a profile with skills,
instruction resources, hooks or subagents it cannot mount rather than run
it without them; search those with an agent that runs them (Go API). A
candidate with hooks or a local MCP server runs commands and needs
--allow-commands.

Judges: --judge contains (the output contains expected, any case),
--judge exact (the trimmed output equals expected), --judge-cmd PROGRAM
(run with the case and output as JSON on stdin, {"input","expected",
"output","id"}; it prints {"score": 0..1, "costUsd": n}; without costUsd
its cost is unknown and the run holds). A case's score is the judges' mean.

--provider scripted runs offline: the agent repeats the case input, in
uppercase when its system prompt says "uppercase", and the proposer offers
the base prompt plus " Be brief." and plus " Answer in uppercase."; both
report a cost of exactly 0. openai and anthropic run the profile's
model.default through the tool loop ($OPENAI_API_KEY, $ANTHROPIC_API_KEY).

--proposal-inputs FILE with --proposal OUT writes, when the run ships, the
AgentImprovementProposal built from agentrt's own test receipts to OUT, for
agentrt improve propose OUT. The inputs pin what agentrt cannot know:

  {"runId": "…", "source": {"kind": "…", "sourceIdentity": "…", "sourceRevision": 1},
   "executionRef": {"identity": "…", "digest": "sha256:…"},
   "grader": {…pinned grader…}, "model": {…resolved model…}, "limits": {…}}

--run-dir DIR keeps a journal: the same command again resumes, reusing
every measurement already taken. The journal belongs to one recipe
identity (execution ref, the complete base profile, surface, method and
its settings, cases, judges, statistics options). --resume if-compatible
(the default) resumes a journal of the same identity and, when the run dir
holds another one, moves it aside (improve.superseded-<recipe>-<n>.jsonl)
and starts fresh; --resume required refuses to start without a journal of
the same identity. The result says which happened (resumeStatus fresh,
resumed or restarted). Progress goes to stderr.

What the method is shown: case ids and scores by default. --share-case-bodies
adds the train and selection inputs and answers, --share-outputs the agent's
outputs on them; both pass a scrubber that replaces recognised credentials
and email addresses first. Test cases and their outputs are never shown.

--mode training also hands the method byte-pinned training datasets to
train on through a separate executor:

  --training-dataset FILE@sha256:HEX   (repeatable; sha256sum FILE gives HEX)
  --training-execution-ref REF         (must differ from --execution-ref)

A dataset FILE is JSON: {"examples": [{"input": "…", "expected": "…"}, …]}.
Bytes that do not match their pin are refused, and so is the final
measurement when a test case's input and expected answer appear in a
dataset or in the method's training receipts (a held-out case was trained
on). The built-in greedy method shows its proposer the first examples.`

type improveSearchFlags struct {
	scenarios, provider, baseURL, openaiAPI, surface, runDir, resume, executionRef string
	proposalInputs, proposalOut                                                    string
	mode, trainingExecutionRef                                                     string
	judges, judgeCmds, trainingDatasets                                            []string
	costCeiling, minimumLift, confidence                                           float64
	resamples, rounds, variants                                                    int
	seed                                                                           uint64
	shareBodies, shareOutputs, asJSON, allowCommands                               bool
	sf                                                                             storeFlags
	skill                                                                          string
}

// registerImproveSearch makes `agentrt improve PROFILE` the improve
// command's own action.
func registerImproveSearch(cmd *cobra.Command, stdio IO) {
	var f improveSearchFlags
	cmd.Use = "improve [PROFILE --scenarios FILE --judge NAME | COMMAND]"
	cmd.Long = improveSearchLong + "\n\n" + cmd.Long
	cmd.Args = cobra.MaximumNArgs(1)
	cmd.RunE = func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return c.Help()
		}
		return runImproveSearch(c, stdio, args[0], &f)
	}
	fl := cmd.Flags()
	fl.StringVar(&f.scenarios, "scenarios", "", "scenarios FILE (JSON: cases with id, input, expected, partition)")
	fl.StringArrayVar(&f.judges, "judge", nil, "built-in judge: contains or exact (repeatable)")
	fl.StringArrayVar(&f.judgeCmds, "judge-cmd", nil, "judge PROGRAM [ARGS…] (split on spaces; repeatable)")
	fl.StringVar(&f.provider, "provider", "scripted", "the agent's and proposer's models: scripted, openai or anthropic")
	fl.StringVar(&f.baseURL, "base-url", "", "base URL of the openai or anthropic API")
	fl.StringVar(&f.openaiAPI, "openai-api", "chat", "OpenAI API: chat or responses")
	fl.StringVar(&f.surface, "surface", "prompt", "surface searched: prompt, skills, memory, tools, mcp, hooks, subagents or agent-profile")
	fl.StringVar(&f.skill, "skill", "", "with --surface skills, search the content of the inline skill NAME only")
	fl.StringVar(&f.executionRef, "execution-ref", "", "names the executor in the recipe identity (default the provider)")
	fl.StringVar(&f.runDir, "run-dir", "", "directory of the run's journal (resume)")
	fl.StringVar(&f.resume, "resume", "if-compatible", "if-compatible (resume the same recipe's journal, else start fresh) or required (refuse without one)")
	fl.StringVar(&f.mode, "mode", "search", "search, or training (needs --training-dataset and --training-execution-ref)")
	fl.StringArrayVar(&f.trainingDatasets, "training-dataset", nil, "training dataset FILE@sha256:HEX, pinned to its bytes (repeatable; --mode training)")
	fl.StringVar(&f.trainingExecutionRef, "training-execution-ref", "", "names the executor training runs on, not the measured one (--mode training)")
	fl.Float64Var(&f.costCeiling, "cost-ceiling", -1, "most the run may report spending, US dollars (default: no ceiling)")
	fl.Float64Var(&f.minimumLift, "minimum-lift", 0, "lift the interval's lower bound must exceed to ship")
	fl.Float64Var(&f.confidence, "confidence", search.DefaultConfidence, "confidence level of the interval")
	fl.IntVar(&f.resamples, "resamples", search.DefaultResamples, "bootstrap resamples")
	fl.Uint64Var(&f.seed, "seed", 1, "bootstrap seed")
	fl.IntVar(&f.rounds, "rounds", 2, "greedy rounds")
	fl.IntVar(&f.variants, "variants", 2, "prompt variants per round")
	fl.BoolVar(&f.shareBodies, "share-case-bodies", false, "show the method the train and selection inputs and answers, scrubbed (default ids only)")
	fl.BoolVar(&f.shareOutputs, "share-outputs", false, "show the method the agent's outputs on train and selection cases, scrubbed and cut to 4 KiB (default scores only)")
	fl.BoolVar(&f.allowCommands, "allow-commands", false, "let candidates (and the base) that run commands — a local MCP server, a hook — run; each is named on stderr (default: refused)")
	fl.StringVar(&f.proposalInputs, "proposal-inputs", "", "FILE pinning what a proposal needs beside the result (source, executionRef, grader, model, limits, runId)")
	fl.StringVar(&f.proposalOut, "proposal", "", "on ship, write the AgentImprovementProposal to FILE (needs --proposal-inputs)")
	fl.BoolVar(&f.asJSON, "json", false, "print the result as JSON")
	f.sf.register(cmd)
	cmd.Flags().Lookup("db").Usage = "SQLite file recording the agent's and proposer's runs (default: not recorded)"
}

func runImproveSearch(c *cobra.Command, stdio IO, profilePath string, f *improveSearchFlags) error {
	ctx := c.Context()
	if f.scenarios == "" {
		return usage("give the cases with --scenarios FILE")
	}
	if len(f.judges)+len(f.judgeCmds) == 0 {
		return usage("give at least one judge: --judge contains, --judge exact or --judge-cmd PROGRAM")
	}
	switch search.Surface(f.surface) {
	case search.SurfaceComponent, search.SurfaceCode:
		return usage("--surface %s needs the caller's own code (profile components' read and apply, or an agent that runs in a git work tree): use the Go API, search.Improve", f.surface)
	}
	if f.skill != "" && f.surface != string(search.SurfaceSkills) {
		return usage("--skill NAME goes with --surface skills")
	}
	if (f.proposalOut == "") != (f.proposalInputs == "") {
		return usage("--proposal FILE and --proposal-inputs FILE go together")
	}
	base, err := loadProfile(stdio, profilePath, f.asJSON)
	if err != nil {
		return err
	}
	var inputs search.ProposalInputs
	if f.proposalInputs != "" {
		data, err := readInput(stdio, f.proposalInputs)
		if err != nil {
			return err
		}
		if inputs, err = search.ParseProposalInputs(data); err != nil {
			var se *schema.Error
			if errors.As(err, &se) {
				writeIssues(stdio.Err, f.proposalInputs, se.Issues)
				return refused()
			}
			return &exitError{code: ExitFailed, err: err}
		}
	}
	data, err := readInput(stdio, f.scenarios)
	if err != nil {
		return err
	}
	scs, err := search.ParseScenarios(data)
	if err != nil {
		var se *schema.Error
		if errors.As(err, &se) {
			writeIssues(stdio.Err, f.scenarios, se.Issues)
			return refused()
		}
		return &exitError{code: ExitFailed, err: err}
	}
	var judges []search.Judge
	for _, j := range f.judges {
		switch j {
		case "contains":
			judges = append(judges, search.Contains{})
		case "exact":
			judges = append(judges, search.Exact{})
		default:
			return usage("--judge %s: the built-in judges are contains and exact (or use --judge-cmd)", j)
		}
	}
	for _, j := range f.judgeCmds {
		argv := strings.Fields(j)
		if len(argv) == 0 {
			return usage("--judge-cmd is empty")
		}
		judges = append(judges, search.Command{Argv: argv})
	}
	var st store.Store
	if f.sf.path != "" || f.sf.url() != "" {
		if st, err = f.sf.open(ctx); err != nil {
			return err
		}
		defer st.Close()
	}
	agentModel, proposer, err := improveModels(f, base)
	if err != nil {
		return err
	}
	ref := f.executionRef
	if ref == "" {
		ref = f.provider
	}
	o := search.Options{
		Surface: search.Surface(f.surface), ExecutionRef: ref, Scenarios: scs, Judges: judges,
		Method: search.Greedy{Model: proposer, Store: st, Rounds: f.rounds, Variants: f.variants},
		Agent:  search.KernelAgent{Model: agentModel, Store: st}, Store: st,
		RunDir: f.runDir, Resume: search.Resume(f.resume), Resamples: f.resamples, Confidence: f.confidence,
		Seed: f.seed, MinimumLift: f.minimumLift, ShareCaseBodies: f.shareBodies, DescribeArtifact: shareOutputs(f.shareOutputs),
		Progress: func(p search.Progress) { printImproveProgress(stdio, p) },
	}
	if f.costCeiling >= 0 {
		o.CostCeiling = &f.costCeiling
	}
	if f.skill != "" {
		o.Skills = &search.Skills{ResourceName: f.skill}
	}
	if o.Mode, o.Training, err = improveTraining(stdio, f); err != nil {
		return err
	}
	if f.allowCommands {
		o.AuthorizeSensitiveCandidate = func(_ context.Context, c search.SensitiveCandidate) error {
			fmt.Fprintf(stdio.Err, "allowing %s to run commands at %s (--allow-commands)\n", short(c.Digest), strings.Join(c.Coordinates, ", "))
			return nil
		}
	}
	res, err := search.Improve(ctx, base, o)
	if err != nil {
		var oe *search.OptionsError
		if errors.As(err, &oe) {
			return usage("%v", improveOptionHint(oe))
		}
		return &exitError{code: ExitFailed, err: err}
	}
	if f.proposalOut != "" && res.Decision == search.Ship {
		p, err := search.Proposal(res, inputs)
		if err != nil {
			return &exitError{code: ExitFailed, err: fmt.Errorf("the result ships but cannot be proposed: %w", err)}
		}
		if err := writeProposal(f.proposalOut, p); err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		fmt.Fprintf(stdio.Err, "proposal %s written to %s; record it with: agentrt improve propose %s\n", p.Digest, f.proposalOut, f.proposalOut)
	}
	if f.asJSON {
		if err := writeJSON(stdio.Out, improveJSON(res)); err != nil {
			return err
		}
	} else {
		printImproveResult(stdio, res)
	}
	if res.Decision != search.Ship {
		return &exitError{code: ExitHold}
	}
	return nil
}

func printImproveProgress(stdio IO, p search.Progress) {
	switch p.Phase {
	case "done":
		fmt.Fprintf(stdio.Err, "measured; candidate %s\n", short(p.Candidate))
	default:
		how := "measuring"
		if p.Reused {
			how = "reusing"
		}
		fmt.Fprintf(stdio.Err, "%s %-6s %s case %s\n", how, p.Phase, short(p.Candidate), p.Case)
	}
}

func short(digest string) string {
	d := strings.TrimPrefix(digest, "sha256:")
	if len(d) > 12 {
		d = d[:12]
	}
	return d
}

func printImproveResult(stdio IO, r search.Result) {
	w := stdio.Out
	fmt.Fprintf(w, "decision  %s\n", r.Decision)
	for _, why := range r.Reasons {
		fmt.Fprintf(w, "  %s\n", why)
	}
	fmt.Fprintf(w, "lift      %+.4f  (%.0f%% interval [%+.4f, %+.4f], %d resamples, seed %d)\n", r.Lift, r.LiftInterval.Level*100,
		r.LiftInterval.Lower, r.LiftInterval.Upper, r.LiftInterval.Resamples, r.LiftInterval.Seed)
	fmt.Fprintf(w, "test      baseline %.4f  candidate %.4f  over %d cases\n", r.BaselineScore, r.CandidateScore, len(r.Test))
	fmt.Fprintf(w, "candidate %s\n", r.Candidate.Digest)
	if p := r.Candidate.Profile; p != nil && p.Prompt != nil && p.Prompt.SystemPrompt != nil {
		fmt.Fprintf(w, "  system prompt %q\n", *p.Prompt.SystemPrompt)
	}
	fmt.Fprintf(w, "searched  %d candidates, %d measurements (%d reused from the run dir)\n", len(r.Population), r.Provenance.Evaluations, r.Provenance.Reused)
	fmt.Fprintf(w, "spend     %s (optimizer %s, candidates %s, judges %s, final %s)\n", usd(r.Spend.Total),
		usd(r.Spend.Optimizer), usd(r.Spend.Candidates), usd(r.Spend.Judges), usd(r.Spend.Final))
	fmt.Fprintf(w, "recipe    %s\n", r.Provenance.RecipeDigest)
	printImproveProvenance(w, r.Provenance)
	fmt.Fprintln(w, "nothing was activated (the production path is agentrt improve propose|review|activate)")
}

// amountJSON is a ledger amount for --json: usd is null when unknown.
type amountJSON struct {
	USD      *float64 `json:"usd"`
	Complete bool     `json:"complete"`
}

func toAmountJSON(a ledger.Amount[float64]) amountJSON {
	if !a.Reported {
		return amountJSON{}
	}
	v := a.Value
	return amountJSON{USD: &v, Complete: a.Complete}
}

// improveJSON is the --json form of a result.
func improveJSON(r search.Result) map[string]any {
	return map[string]any{
		"decision": r.Decision, "reasons": r.Reasons, "lift": r.Lift, "liftInterval": r.LiftInterval,
		"baselineScore": r.BaselineScore, "candidateScore": r.CandidateScore, "test": r.Test,
		"candidate": r.Candidate, "population": r.Population, "provenance": r.Provenance,
		"spend": map[string]amountJSON{
			"optimizer": toAmountJSON(r.Spend.Optimizer), "candidates": toAmountJSON(r.Spend.Candidates),
			"judges": toAmountJSON(r.Spend.Judges), "final": toAmountJSON(r.Spend.Final), "total": toAmountJSON(r.Spend.Total),
		},
	}
}

// improveModels returns the agent's and the proposer's chat models.
func improveModels(f *improveSearchFlags, base *profile.Profile) (contract.ChatModel, contract.ChatModel, error) {
	model := ""
	if base.Model != nil && base.Model.Default != nil {
		model = *base.Model.Default
		if i := strings.IndexByte(model, '/'); i >= 0 {
			model = model[i+1:]
		}
	}
	switch f.provider {
	case "scripted":
		prompt := ""
		if base.Prompt != nil && base.Prompt.SystemPrompt != nil {
			prompt = *base.Prompt.SystemPrompt
		}
		return scripted.NewReplyModel(offlineAgentReply), offlineProposer(prompt), nil
	case "openai":
		m, err := openai.New(openai.Options{API: openai.API(f.openaiAPI), BaseURL: f.baseURL, APIKey: os.Getenv("OPENAI_API_KEY"), Model: model})
		if err != nil {
			return nil, nil, usage("%v", err)
		}
		return m, m, nil
	case "anthropic":
		m, err := anthropic.NewModel(anthropic.Options{BaseURL: f.baseURL, APIKey: os.Getenv("ANTHROPIC_API_KEY"), Model: model})
		if err != nil {
			return nil, nil, usage("%v", err)
		}
		return m, m, nil
	}
	return nil, nil, usage("--provider %s: improve runs on scripted, openai or anthropic", f.provider)
}

// offlineAgentReply is the scripted agent: it repeats the user's message,
// in uppercase when the system prompt says "uppercase", at a cost of 0.
func offlineAgentReply(messages []contract.ChatMessage, _ []contract.Tool) []contract.ChatEvent {
	var system, user string
	for _, m := range messages {
		if m.Content == nil {
			continue
		}
		switch m.Role {
		case contract.ChatSystem:
			system = *m.Content
		case contract.ChatUser:
			user = *m.Content
		}
	}
	answer := user
	if strings.Contains(strings.ToLower(system), "uppercase") {
		answer = strings.ToUpper(user)
	}
	return []contract.ChatEvent{scripted.Text(answer), scripted.UsageCost(int64(len(system)+len(user)), int64(len(answer)), 0)}
}

// offlineProposer is the scripted proposer: two variants of the base
// prompt, over and over, at a cost of 0.
func offlineProposer(prompt string) *scripted.ChatModel {
	turn := func(text string) scripted.ChatTurn {
		return scripted.ChatTurn{Events: []contract.ChatEvent{scripted.Text(text), scripted.UsageCost(int64(len(prompt)), int64(len(text)), 0)}}
	}
	prompt = strings.TrimSpace(prompt)
	return scripted.NewChatModel(scripted.ChatScript{Cycle: true, Turns: []scripted.ChatTurn{
		turn(strings.TrimSpace(prompt + " Be brief.")), turn(strings.TrimSpace(prompt + " Answer in uppercase.")),
	}})
}

// writeProposal writes a proposal's canonical JSON to path, atomically.
func writeProposal(path string, p *candidate.ImprovementProposal) error {
	v, err := canonjson.ToValue(p)
	if err != nil {
		return err
	}
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, append(canonjson.Marshal(v), '\n'), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}
