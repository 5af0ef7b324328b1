package search

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// Surface names the part of a profile a search may change.
type Surface string

// The surfaces Improve searches.
const (
	// SurfacePrompt is the profile's prompt object.
	SurfacePrompt Surface = "prompt"
	// SurfaceTools is the profile's tools map.
	SurfaceTools Surface = "tools"
	// SurfaceMCP is the profile's MCP server map.
	SurfaceMCP Surface = "mcp"
	// SurfaceAgentProfile is the whole profile.
	SurfaceAgentProfile Surface = "agent-profile"
)

// Surfaces lists every surface Improve searches, in a stable order.
func Surfaces() []Surface {
	return []Surface{SurfacePrompt, SurfaceSkills, SurfaceMemory, SurfaceTools, SurfaceMCP, SurfaceHooks, SurfaceSubagents,
		SurfaceAgentProfile, SurfaceComponent, SurfaceCode}
}

// Partition is the split a scenario belongs to.
type Partition string

// The partitions of a scenario set.
const (
	// Train cases are the method's to learn from.
	Train Partition = "train"
	// Selection cases are the method's to choose among candidates with.
	Selection Partition = "selection"
	// Test cases are measured by Improve alone, after the search.
	Test Partition = "test"
)

// Scenario is one case: what the agent is asked, what a judge expects,
// and its partition.
type Scenario struct {
	ID        string    `json:"id"`
	Input     string    `json:"input"`
	Expected  string    `json:"expected,omitzero"`
	Partition Partition `json:"partition"`
}

// digest is the scenario's content identity (id, input, expected,
// partition).
func (s Scenario) digest() string {
	d, _ := canonjson.Digest(canonjson.ObjectValue([]canonjson.Member{
		{Name: "id", Value: canonjson.StringValue(s.ID)},
		{Name: "input", Value: canonjson.StringValue(s.Input)},
		{Name: "expected", Value: canonjson.StringValue(s.Expected)},
		{Name: "partition", Value: canonjson.StringValue(string(s.Partition))},
	}))
	return d
}

// Output is what an agent produced for one scenario.
type Output struct {
	// Text is the agent's final text.
	Text string
	// RunID is the kernel run that produced it ("" when unrecorded).
	RunID string
	// Usage is the run's token usage and cost; an unreported cost is
	// unknown, never zero.
	Usage ledger.Usage
	// ModelCalls is how many model turns the run took (nil: unknown).
	ModelCalls *int64
}

// Agent runs one complete candidate profile on one scenario (spec: the
// caller's agent(candidateProfile, scenario, ctx)). The profile is the
// Agent's to read, not to change.
type Agent interface {
	Run(ctx context.Context, candidate *profile.Profile, sc Scenario) (Output, error)
}

// AgentFunc adapts a function to Agent.
type AgentFunc func(ctx context.Context, candidate *profile.Profile, sc Scenario) (Output, error)

// Run implements Agent.
func (f AgentFunc) Run(ctx context.Context, candidate *profile.Profile, sc Scenario) (Output, error) {
	return f(ctx, candidate, sc)
}

// Score is a judge's verdict on one output: a value in [0, 1] and what
// judging cost.
type Score struct {
	Value float64
	// CostUSD is what the judgement cost; unknown when not reported.
	CostUSD ledger.Amount[float64]
}

// Judge scores an agent's output for a scenario.
type Judge interface {
	// Name identifies the judge in the recipe identity.
	Name() string
	Score(ctx context.Context, sc Scenario, out Output) (Score, error)
}

// CaseView is what a method is shown of a train or selection case: its
// id, and its input and expected answer only when
// Options.ShareCaseBodies allows it.
type CaseView struct {
	ID        string    `json:"id"`
	Partition Partition `json:"partition"`
	Input     string    `json:"input,omitzero"`
	Expected  string    `json:"expected,omitzero"`
	// Description is Options.DescribeScenario's descriptor of the case,
	// redacted and scrubbed ("" without the hook).
	Description string `json:"description,omitzero"`
}

// CaseScore is one measured case of an evaluation.
type CaseScore struct {
	ID    string  `json:"id"`
	Score float64 `json:"score"`
	// Description is Options.DescribeArtifact's descriptor of the output,
	// redacted and scrubbed ("" without the hook).
	Description string `json:"description,omitzero"`
}

// Evaluation is Improve's measurement of one candidate surface on the
// cases a method named.
type Evaluation struct {
	// Digest is the materialized candidate profile's digest.
	Digest string
	// Mean is the mean score over Cases.
	Mean float64
	// Cases are the per-case scores, in the order asked.
	Cases []CaseScore
}

// Evaluator measures a candidate surface value on train or selection
// cases named by id. A test case id, an unknown id, an invalid profile or
// a surface carrying credentials is refused with a typed error.
type Evaluator func(ctx context.Context, surface canonjson.Value, caseIDs []string) (Evaluation, error)

// MethodInput is everything a method receives.
type MethodInput struct {
	// Surface names the surface searched; Current is its value in the
	// base profile (a copy: the absent Value when the base omits it).
	Surface Surface
	Current canonjson.Value
	// Encoding names how a profile component's Current is encoded
	// (ProfileComponents.Encoding; "" on other surfaces).
	Encoding string
	// Train and Selection are the cases the method may use; there is no
	// test partition here.
	Train, Selection []CaseView
	// Evaluate measures a candidate surface on train or selection cases.
	Evaluate Evaluator
	// Training, in ModeTraining, is the verified training data and the
	// executor to train on (nil otherwise).
	Training *TrainingInput
}

// MethodIdentity names a method for the recipe identity and the result's
// provenance (OPT-02, OPT-05).
type MethodIdentity struct {
	// Name and Version name the method (for an external optimizer, its
	// package and version).
	Name    string `json:"name"`
	Version string `json:"version"`
	// Digest, when known, pins the method's code or package
	// ("sha256:<hex>").
	Digest string `json:"digest,omitzero"`
	// Settings are the method's own options, part of the recipe identity.
	Settings canonjson.Value `json:"settings,omitzero"`
}

// MethodOutput is a method's answer: the surface value it selects and
// what it spent finding it.
type MethodOutput struct {
	// Selected is the selected surface value.
	Selected canonjson.Value
	// Rationale says why, for people.
	Rationale string
	// Usage is what the method itself spent (its own model calls), not
	// the evaluations Improve ran for it; an unreported cost is unknown.
	Usage ledger.Usage
	// RunIDs are the runs the method recorded in Options.Store; Improve
	// reconciles Usage's cost with their ledgers (OPT-04).
	RunIDs []string
	// Provenance is what the method reports of itself (an optimizer's
	// run id, artifact dir, package digest); it is recorded as given.
	Provenance map[string]string
	// TrainingReceipts, in ModeTraining, record what the method's own
	// training consumed; a receipt listing a test case refuses the final
	// measurement (*HeldOutError).
	TrainingReceipts []TrainingReceipt
}

// Method is a complete search method (an agent-eval OptimizationMethod):
// from the surface and the train and selection cases it proposes one
// surface value. It never sees test cases.
type Method interface {
	Identity() MethodIdentity
	Search(ctx context.Context, in MethodInput) (MethodOutput, error)
}

// Resume says how a run directory that already holds a journal is used.
type Resume string

// Resume modes.
const (
	// ResumeIfCompatible (the default) reuses a journal with the same
	// recipe identity, starts one when there is none, and refuses a
	// journal of another recipe.
	ResumeIfCompatible Resume = "if-compatible"
	// ResumeRequired refuses to start without a journal of the same
	// recipe.
	ResumeRequired Resume = "required"
)

// Progress is one step of an Improve run, for people.
type Progress struct {
	// Phase is "search", "final" or "done".
	Phase string
	// Candidate is the profile digest measured; Case the case id.
	Candidate, Case string
	// Reused is set when the measurement came from the journal.
	Reused bool
}

// Options configure Improve.
type Options struct {
	// Surface is the surface searched (required).
	Surface Surface
	// ExecutionRef names the executor the agent runs on (required); it is
	// part of the recipe identity.
	ExecutionRef string
	// Method searches the surface (required).
	Method Method
	// Scenarios are the cases, each in one partition; ids are unique.
	// Train plus selection and test must each be non-empty.
	Scenarios []Scenario
	// Judges score outputs (at least one); a case's score is their mean.
	Judges []Judge
	// Agent runs a candidate profile on a scenario (required).
	Agent Agent
	// Store, when set, holds the runs a method reports (MethodOutput.RunIDs),
	// whose ledgers its spend must reconcile with.
	Store store.Store
	// RunDir, when set, holds the run's journal (improve.jsonl); Resume
	// says how an existing one is used.
	RunDir string
	Resume Resume
	// CostCeiling, when set, is the most the run may report spending in
	// US dollars (optimizer, candidates, judges and final scoring): a
	// reported total above it stops the run with *CostCeilingError.
	CostCeiling *float64
	// Resamples (default 2000, at most 100000) and Confidence (default
	// 0.95, in (0, 1)) shape the paired bootstrap; Seed makes it
	// deterministic (0 is a seed like any other).
	Resamples  int
	Confidence float64
	Seed       uint64
	// MinimumLift is what the interval's lower bound must exceed to ship.
	MinimumLift float64
	// ShareCaseBodies shows the method train and selection cases' inputs
	// and expected answers, each passed through Redact and Scrub like a
	// descriptor; by default it sees their ids only.
	ShareCaseBodies bool
	// MaxEvaluations bounds how many (candidate, case) measurements the
	// search may ask for (default 10000).
	MaxEvaluations int
	// Progress, when set, is told each measurement (on the calling
	// goroutine).
	Progress func(Progress)
	// AuthorizeSensitiveCandidate decides whether a profile with
	// execution-capable coordinates (a local MCP server's command, a hook
	// command) may run: it is asked once per distinct profile, the
	// baseline included, before the profile first runs, and a nil hook or
	// an error refuses it (*SensitiveCandidateError). A refused candidate
	// is recorded refused in the population; a refused baseline stops the
	// run before its final measurement.
	AuthorizeSensitiveCandidate func(ctx context.Context, c SensitiveCandidate) error
	// Skills, with surface skills, narrows it to one named inline skill.
	Skills *Skills
	// ProfileComponents, with surface profile-component, reads and
	// applies the named component searched.
	ProfileComponents *ProfileComponents
	// Code, with surface code, is the repository and pinned commit whose
	// code candidates change.
	Code *Code
	// DescribeScenario and DescribeArtifact, when set, describe a train
	// or selection case, or a search measurement's output, to the method
	// (CaseView.Description, CaseScore.Description); a test case is never
	// described. Every descriptor passes Redact (when set) and then Scrub;
	// a failing or panicking hook fails the run (*DescriptorError).
	DescribeScenario func(ctx context.Context, sc Scenario) (string, error)
	DescribeArtifact func(ctx context.Context, a Artifact) (string, error)
	Redact           func(ctx context.Context, descriptor string) (string, error)
	// ValidateCandidate, when set, accepts a candidate profile (the base
	// excepted) by returning nil before it first runs; an error or a panic
	// refuses it (*ValidationError), recorded refused in the population.
	ValidateCandidate func(ctx context.Context, candidate *profile.Profile) error
	// Mode is ModeSearch (the default) or ModeTraining; Training
	// configures the latter.
	Mode     Mode
	Training *TrainingOptions
}

// SensitiveCandidate is a profile Improve would run that has
// execution-capable coordinates.
type SensitiveCandidate struct {
	// Digest is the profile's digest; Baseline says it is the base.
	Digest   string
	Baseline bool
	// Coordinates are the JSON pointers of the commands it would run
	// (such as "/mcp/files/command" or "/hooks/PreToolUse/0/command"),
	// and "/code" for a code candidate's patch.
	Coordinates []string
	// Profile is a copy of the profile, for the hook to inspect.
	Profile *profile.Profile
	// Patch is a code candidate's patch, for the hook to inspect ("" on
	// other surfaces).
	Patch string
}

// SensitiveCandidateError refuses a profile with execution-capable
// coordinates that AuthorizeSensitiveCandidate did not authorize (or
// that no hook was given to authorize).
type SensitiveCandidateError struct {
	Digest      string
	Baseline    bool
	Coordinates []string
	// Err is the hook's refusal; nil when no hook was given.
	Err error
}

func (e *SensitiveCandidateError) Error() string {
	what := "the candidate"
	if e.Baseline {
		what = "the baseline"
	}
	msg := "search: " + what + " " + e.Digest + " runs commands at " + strings.Join(e.Coordinates, ", ")
	if e.Err == nil {
		return msg + " and no AuthorizeSensitiveCandidate hook authorized it"
	}
	return msg + " and AuthorizeSensitiveCandidate refused it: " + e.Err.Error()
}

func (e *SensitiveCandidateError) Unwrap() error { return e.Err }

// Limits of Improve's inputs.
const (
	MaxScenarios       = 10000
	MaxScenarioBytes   = 1 << 20
	MaxResamples       = 100000
	DefaultResamples   = 2000
	DefaultConfidence  = 0.95
	DefaultEvaluations = 10000
)

// ErrInvalidOptions matches every *OptionsError.
var ErrInvalidOptions = errors.New("search: invalid options")

// OptionsError refuses Options before anything runs; Path is the JSON
// pointer of the offending option (such as "/scenarios/3/id").
type OptionsError struct {
	Path   string
	Reason string
}

func (e *OptionsError) Error() string {
	return fmt.Sprintf("search: option %s: %s", e.Path, e.Reason)
}

// Is reports ErrInvalidOptions.
func (e *OptionsError) Is(target error) bool { return target == ErrInvalidOptions }

// CredentialError refuses a candidate (or base) surface that carries
// credential material. It names where and by which rule, never what.
type CredentialError struct {
	// Digest is the candidate profile's digest, when it had one.
	Digest   string
	Findings []candidate.SecretFinding
}

func (e *CredentialError) Error() string {
	paths := make([]string, len(e.Findings))
	for i, f := range e.Findings {
		paths[i] = f.Path + " (" + f.Rule + ")"
	}
	return "search: the candidate surface carries credential material at " + strings.Join(paths, ", ") +
		"; reference a secret by name instead of embedding it"
}

// CandidateError refuses a candidate surface that does not make a valid
// profile; Err is the profile's validation error (a *schema.Error), or
// the surface's own refusal: a *ComponentError, or a code patch that does
// not apply (a *gitsafe.RefusedError).
type CandidateError struct {
	Err error
}

func (e *CandidateError) Error() string {
	return "search: the candidate is not a valid profile: " + e.Err.Error()
}

// Unwrap returns the validation error.
func (e *CandidateError) Unwrap() error { return e.Err }

// PartitionError refuses an evaluation of a case the method may not use:
// a test case, or an id that is no case at all.
type PartitionError struct {
	CaseID string
	Reason string
}

func (e *PartitionError) Error() string {
	return fmt.Sprintf("search: case %q: %s", e.CaseID, e.Reason)
}

// CostCeilingError stops a run whose reported spend went above the
// ceiling.
type CostCeilingError struct {
	CeilingUSD  float64
	ReportedUSD float64
}

func (e *CostCeilingError) Error() string {
	return fmt.Sprintf("search: reported spend $%.6f is above the cost ceiling $%.6f; raise --cost-ceiling or shrink the search", e.ReportedUSD, e.CeilingUSD)
}

// ResumeError refuses a run directory that does not fit the run.
type ResumeError struct {
	RunDir string
	Reason string
}

func (e *ResumeError) Error() string {
	return fmt.Sprintf("search: run dir %s: %s", e.RunDir, e.Reason)
}

// LimitError refuses an evaluation beyond Options.MaxEvaluations.
type LimitError struct{ Max int }

func (e *LimitError) Error() string {
	return fmt.Sprintf("search: the method asked for more than %d measurements", e.Max)
}
