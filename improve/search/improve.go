package search

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
)

// Improve searches base's surface with o.Method and measures the selected
// candidate against base on the test partition (runtime §3.9). base is
// read, never changed. The returned Result's Decision is Ship only when
// the paired interval's lower bound is above o.MinimumLift and every cost
// was reported; Improve activates nothing.
//
// A refused option is an *OptionsError; a base or selected surface with
// credentials a *CredentialError; a spend above o.CostCeiling a
// *CostCeilingError (with the Result so far); a run dir of another recipe
// a *ResumeError; a failing describe or redact hook a *DescriptorError;
// in ModeTraining, unpinned bytes a *DatasetDigestError, a bad receipt a
// *TrainingReceiptError and a trained-on test case a *HeldOutError. An
// agent or judge error fails the run (wrapped with %w): an unmeasured
// case is never scored.
func Improve(ctx context.Context, base *profile.Profile, o Options) (_ Result, err error) {
	r, err := newRun(base, &o)
	if err != nil {
		return Result{}, err
	}
	if o.Surface == SurfaceCode {
		if err := r.openCode(ctx); err != nil {
			return Result{}, err
		}
		defer func() {
			if cerr := r.closeCode(); err == nil {
				err = cerr
			}
		}()
	}
	log, prior, err := openRunLog(ctx, o.RunDir, o.Resume, r.recipe, r.recipeDigest)
	if err != nil {
		return Result{}, err
	}
	r.log, r.prior = log, prior
	if r.training != nil {
		// Fail before any spend when a pinned dataset holds a test case.
		if err := heldOut(r.order, r.training.receipts); err != nil {
			return finishEarly(r, log, err)
		}
	}
	// Every journaled measurement was spent by this recipe's run.
	for _, key := range prior.order {
		r.account(prior.measurements[key])
	}
	r.reused = len(prior.measurements)
	res, err := r.run(ctx)
	if cerr := log.close(); err == nil && cerr != nil {
		err = fmt.Errorf("search: journal: %w", cerr)
	}
	return res, err
}

// finishEarly closes the journal of a run refused before it searched.
func finishEarly(r *run, log *runLog, err error) (Result, error) {
	if cerr := log.close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("search: journal: %w", cerr))
	}
	return Result{Decision: Hold, Reasons: []string{err.Error()}, Provenance: r.provenance()}, err
}

// run is one Improve call's state.
type run struct {
	o          *Options
	base       *profile.Profile // a private copy
	baseValue  canonjson.Value
	baseDigest string
	// baselineID is the baseline's candidate identity: baseDigest, or on
	// the code surface the base profile with the pinned commit's tree.
	baselineID string
	code       *codeRun        // the code surface's work trees
	current    canonjson.Value // base's surface value
	cases      map[string]Scenario
	// authorized is AuthorizeSensitiveCandidate's answer per digest (nil:
	// may run).
	authorized map[string]error
	// validated is ValidateCandidate's answer per digest (nil: accepted).
	validated map[string]error
	// training is ModeTraining's verified data (nil in ModeSearch).
	training     *training
	order        []Scenario
	recipe       canonjson.Value
	recipeDigest string
	log          *runLog
	prior        resumed

	devSplit, testSplit string
	evaluations, reused int
	population          []*PopulationEntry
	byKey               map[string]*PopulationEntry    // canonical surface bytes → entry
	scores              map[string]map[string]*float64 // digest → case id → search score
	spend               Spend
}

func newRun(base *profile.Profile, o *Options) (*run, error) {
	if err := checkOptions(o); err != nil {
		return nil, err
	}
	tr, err := checkTraining(o)
	if err != nil {
		return nil, err
	}
	if base == nil {
		return nil, &OptionsError{Path: "/base", Reason: "a base profile is required"}
	}
	own, err := profile.Clone(base)
	if err != nil {
		return nil, &OptionsError{Path: "/base", Reason: err.Error()}
	}
	baseDigest, err := profile.Digest(own)
	if err != nil {
		return nil, &OptionsError{Path: "/base", Reason: "the base profile is invalid: " + err.Error()}
	}
	baseValue, err := own.Value()
	if err != nil {
		return nil, &OptionsError{Path: "/base", Reason: err.Error()}
	}
	r := &run{o: o, base: own, baseValue: baseValue, baseDigest: baseDigest, baselineID: baseDigest, cases: map[string]Scenario{}, authorized: map[string]error{},
		byKey: map[string]*PopulationEntry{}, scores: map[string]map[string]*float64{}, training: tr}
	if r.current, err = r.extractSurface(); err != nil {
		return nil, err
	}
	if f := candidate.ScanSecrets(r.current); len(f) > 0 {
		return nil, &CredentialError{Digest: baseDigest, Findings: f}
	}
	for _, sc := range o.Scenarios {
		r.cases[sc.ID] = sc
		r.order = append(r.order, sc)
	}
	r.recipe, r.recipeDigest, err = recipeOf(o, baseDigest, tr)
	if err != nil {
		return nil, err
	}
	dev, test := r.recipe, r.recipe
	r.devSplit, _ = canonjson.Digest(canonjson.ArrayValue([]canonjson.Value{member(dev, "train"), member(dev, "selection")}))
	r.testSplit, _ = canonjson.Digest(member(test, "test"))
	zero := ledger.ExactAmount(0.0)
	r.spend = Spend{Optimizer: zero, Candidates: zero, Judges: zero, Final: zero, Total: zero}
	return r, nil
}

func checkOptions(o *Options) error {
	bad := func(path, format string, args ...any) error {
		return &OptionsError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if err := checkSurface(o); err != nil {
		return err
	}
	if o.ExecutionRef == "" {
		return bad("/executionRef", "name the executor the agent runs on")
	}
	if o.Method == nil {
		return bad("/method", "a search method is required (search.Greedy is built in)")
	}
	if id := o.Method.Identity(); id.Name == "" || id.Version == "" {
		return bad("/method", "the method's identity needs a name and a version")
	}
	if o.Agent == nil {
		return bad("/agent", "an agent is required (search.KernelAgent runs the kernel)")
	}
	if len(o.Judges) == 0 {
		return bad("/judges", "at least one judge is required")
	}
	for i, j := range o.Judges {
		if j == nil || j.Name() == "" {
			return bad(fmt.Sprintf("/judges/%d", i), "a judge needs a name")
		}
	}
	switch o.Resume {
	case "":
		o.Resume = ResumeIfCompatible
	case ResumeIfCompatible, ResumeRequired:
	default:
		return bad("/resume", "%q is not if-compatible or required", o.Resume)
	}
	if o.Resamples == 0 {
		o.Resamples = DefaultResamples
	}
	if o.Resamples < 100 || o.Resamples > MaxResamples {
		return bad("/resamples", "%d is outside [100, %d]", o.Resamples, MaxResamples)
	}
	if o.Confidence == 0 {
		o.Confidence = DefaultConfidence
	}
	if !(o.Confidence > 0 && o.Confidence < 1) {
		return bad("/confidence", "%v is outside (0, 1)", o.Confidence)
	}
	if math.IsNaN(o.MinimumLift) || math.IsInf(o.MinimumLift, 0) {
		return bad("/minimumLift", "must be finite")
	}
	if c := o.CostCeiling; c != nil && (math.IsNaN(*c) || *c < 0 || math.IsInf(*c, 0)) {
		return bad("/costCeiling", "must be a finite amount of at least 0")
	}
	if o.MaxEvaluations == 0 {
		o.MaxEvaluations = DefaultEvaluations
	}
	if o.MaxEvaluations < 0 {
		return bad("/maxEvaluations", "must be positive")
	}
	return checkScenarios(o.Scenarios, "/scenarios")
}

// checkScenarios is the one rule for a scenario set: bounded, unique
// non-empty ids, known partitions, and cases to search and to test on.
func checkScenarios(scs []Scenario, at string) error {
	bad := func(path, format string, args ...any) error {
		return &OptionsError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	if len(scs) > MaxScenarios {
		return bad(at, "%d scenarios is more than %d", len(scs), MaxScenarios)
	}
	seen := map[string]bool{}
	var search, test int
	for i, sc := range scs {
		p := fmt.Sprintf("%s/%d", at, i)
		switch {
		case sc.ID == "":
			return bad(p+"/id", "a case needs an id")
		case len(sc.ID) > 200:
			return bad(p+"/id", "an id is at most 200 bytes")
		case seen[sc.ID]:
			return bad(p+"/id", "case id %q is used twice", sc.ID)
		case len(sc.Input)+len(sc.Expected) > MaxScenarioBytes:
			return bad(p, "a case's input and expected answer are at most %d bytes", MaxScenarioBytes)
		}
		seen[sc.ID] = true
		switch sc.Partition {
		case Train, Selection:
			search++
		case Test:
			test++
		default:
			return bad(p+"/partition", "%q is not train, selection or test", sc.Partition)
		}
	}
	if search == 0 {
		return bad(at, "the search needs at least one train or selection case")
	}
	if test == 0 {
		return bad(at, "the final comparison needs at least one test case")
	}
	return nil
}

// recipeOf is the resume identity: executor, base, surface, method,
// partitions (by case content), judges and the options that change a
// result (OPT-02).
func recipeOf(o *Options, baseDigest string, tr *training) (canonjson.Value, string, error) {
	type caseRef struct {
		ID     string `json:"id"`
		Digest string `json:"digest"`
	}
	parts := map[Partition][]caseRef{}
	for _, sc := range o.Scenarios {
		parts[sc.Partition] = append(parts[sc.Partition], caseRef{sc.ID, sc.digest()})
	}
	judges := make([]string, len(o.Judges))
	for i, j := range o.Judges {
		judges[i] = j.Name()
	}
	recipe := struct {
		Kind         string          `json:"kind"`
		ExecutionRef string          `json:"executionRef"`
		BaseDigest   string          `json:"baseDigest"`
		Surface      Surface         `json:"surface"`
		Method       MethodIdentity  `json:"method"`
		Train        []caseRef       `json:"train"`
		Selection    []caseRef       `json:"selection"`
		Test         []caseRef       `json:"test"`
		Judges       []string        `json:"judges"`
		Resamples    int             `json:"resamples"`
		Confidence   float64         `json:"confidence"`
		Seed         uint64          `json:"seed"`
		MinimumLift  float64         `json:"minimumLift"`
		CostCeiling  *float64        `json:"costCeiling,omitzero"`
		ShareBodies  bool            `json:"shareCaseBodies"`
		Extra        canonjson.Value `json:"extra,omitzero"`
		Privacy      []string        `json:"privacyHooks,omitzero"`
		Training     *trainingRecipe `json:"training,omitzero"`
	}{"agentrt-improve-recipe", o.ExecutionRef, baseDigest, o.Surface, o.Method.Identity(),
		parts[Train], parts[Selection], parts[Test], judges, o.Resamples, o.Confidence, o.Seed, o.MinimumLift, o.CostCeiling, o.ShareCaseBodies, surfaceRecipe(o),
		hookNames(o), tr.recipe()}
	v, err := canonjson.ToValue(recipe)
	if err != nil {
		return canonjson.Value{}, "", &OptionsError{Path: "/method/settings", Reason: "the recipe has no canonical form: " + err.Error()}
	}
	d, err := canonjson.Digest(v)
	if err != nil {
		return canonjson.Value{}, "", &OptionsError{Path: "/method/settings", Reason: "the recipe has no canonical form: " + err.Error()}
	}
	return v, d, nil
}

// RecipeDigest returns the resume identity Improve would give base and o
// (OPT-02): the same inputs give the same digest in every process.
func RecipeDigest(base *profile.Profile, o Options) (string, error) {
	r, err := newRun(base, &o)
	if err != nil {
		return "", err
	}
	return r.recipeDigest, nil
}

// materialize makes a complete candidate profile of a surface value:
// base with the surface replaced, validated and digested, refused when it
// carries credentials.
func (r *run) materialize(ctx context.Context, surface canonjson.Value) (*profile.Profile, string, error) {
	if f := candidate.ScanSecrets(surface); len(f) > 0 {
		return nil, "", &CredentialError{Findings: f}
	}
	var v canonjson.Value
	switch r.o.Surface {
	case SurfaceCode:
		return r.materializeCode(ctx, surface)
	case SurfaceComponent:
		p, err := r.applyComponent(surface)
		if err != nil {
			return nil, "", &CandidateError{Err: err}
		}
		if v, err = p.Value(); err != nil {
			return nil, "", &CandidateError{Err: err}
		}
	default:
		var err error
		if v, err = r.replaceSurface(surface); err != nil {
			return nil, "", &CandidateError{Err: err}
		}
	}
	if !v.IsValid() {
		return nil, "", &CandidateError{Err: errors.New("the candidate profile is absent")}
	}
	p, err := profile.FromValue(v)
	if err != nil {
		return nil, "", &CandidateError{Err: err}
	}
	d, err := profile.Digest(p)
	if err != nil {
		return nil, "", &CandidateError{Err: err}
	}
	return p, d, nil
}

// authorize asks AuthorizeSensitiveCandidate, once per digest, whether a
// profile with execution-capable coordinates may run; a profile without
// any needs nobody's leave.
func (r *run) authorize(ctx context.Context, p *profile.Profile, digest string) error {
	if err, ok := r.authorized[digest]; ok {
		return err
	}
	coords := append(executionCoordinates(p), r.codeCoordinates(digest)...)
	var err error
	if len(coords) > 0 {
		c := SensitiveCandidate{Digest: digest, Baseline: digest == r.baselineID, Coordinates: coords, Patch: r.codePatch(digest)}
		var cerr error
		if c.Profile, cerr = profile.Clone(p); cerr != nil {
			return cerr
		}
		switch h := r.o.AuthorizeSensitiveCandidate; {
		case h == nil:
			err = &SensitiveCandidateError{Digest: digest, Baseline: c.Baseline, Coordinates: coords}
		default:
			if herr := h(ctx, c); herr != nil {
				err = &SensitiveCandidateError{Digest: digest, Baseline: c.Baseline, Coordinates: coords, Err: herr}
			}
		}
	}
	if r.authorized == nil {
		r.authorized = map[string]error{}
	}
	r.authorized[digest] = err
	return err
}

// executionCoordinates lists the JSON pointers of the commands p would
// run: each enabled local MCP server's command and each hook command, in
// a fixed order.
func executionCoordinates(p *profile.Profile) []string {
	var out []string
	for _, name := range slices.Sorted(maps.Keys(p.MCP)) {
		if s := p.MCP[name]; s.IsLocal() {
			out = append(out, "/mcp/"+pointerToken(name)+"/command")
		}
	}
	for _, event := range slices.Sorted(maps.Keys(p.Hooks)) {
		for i := range p.Hooks[event] {
			out = append(out, "/hooks/"+pointerToken(event)+"/"+strconv.Itoa(i)+"/command")
		}
	}
	return out
}

// pointerToken escapes a JSON pointer token (RFC 6901).
func pointerToken(s string) string { return string(canonjson.AppendPointerToken(nil, s)[1:]) }

// entryFor returns the population entry of a surface value, adding it.
func (r *run) entryFor(surface canonjson.Value) *PopulationEntry {
	key := "absent"
	if surface.IsValid() {
		b, _ := canonjson.Canonical(surface)
		key = string(b)
	}
	if e, ok := r.byKey[key]; ok {
		return e
	}
	e := &PopulationEntry{Surface: surface, Status: "measured"}
	r.byKey[key] = e
	r.population = append(r.population, e)
	return e
}

// refuse marks a population entry refused. A surface carrying
// credentials is dropped from it: the entry says where and by which rule,
// and the secret reaches no result, journal or log.
func (r *run) refuse(e *PopulationEntry, err error) {
	e.Status, e.Reason = "refused", err.Error()
	var ce *CredentialError
	if errors.As(err, &ce) {
		e.Surface = canonjson.Value{}
	}
}

// evaluate is the Evaluator a method gets.
func (r *run) evaluate(ctx context.Context, surface canonjson.Value, caseIDs []string) (Evaluation, error) {
	entry := r.entryFor(surface)
	p, digest, err := r.materialize(ctx, surface)
	if err != nil {
		r.refuse(entry, err)
		return Evaluation{}, err
	}
	entry.Digest = digest
	if entry.Diffs == nil {
		entry.Diffs, _ = profile.Diffs(r.base, p)
	}
	if err := r.authorize(ctx, p, digest); err != nil {
		r.refuse(entry, err)
		return Evaluation{}, err
	}
	if err := r.validate(ctx, p, digest); err != nil {
		r.refuse(entry, err)
		return Evaluation{}, err
	}
	var scs []Scenario
	for _, id := range caseIDs {
		sc, ok := r.cases[id]
		switch {
		case !ok:
			return Evaluation{}, &PartitionError{CaseID: id, Reason: "no such train or selection case"}
		case sc.Partition == Test:
			return Evaluation{}, &PartitionError{CaseID: id, Reason: "a test case is measured by Improve alone, never by the method"}
		}
		scs = append(scs, sc)
	}
	ev := Evaluation{Digest: digest}
	for _, sc := range scs {
		m, err := r.measure(ctx, "search", p, digest, sc)
		if err != nil {
			return Evaluation{}, err
		}
		ev.Cases = append(ev.Cases, CaseScore{ID: sc.ID, Score: m.Score, Description: m.Description})
		if cases := r.scores[digest]; cases[sc.ID] == nil {
			if cases == nil {
				cases = map[string]*float64{}
				r.scores[digest] = cases
			}
			cases[sc.ID] = &m.Score
			entry.Measured = len(cases)
			total := 0.0
			for _, id := range slices.Sorted(maps.Keys(cases)) {
				total += *cases[id] // in a fixed order: the mean is reproducible
			}
			mean := total / float64(len(cases))
			entry.MeanScore = &mean
		}
	}
	ev.Mean = meanOf(ev.Cases)
	return ev, nil
}

// member returns v's member name, or JSON null when absent.
func member(v canonjson.Value, name string) canonjson.Value {
	if m, ok := v.Get(name); ok {
		return m
	}
	return canonjson.NullValue()
}

func meanOf(cs []CaseScore) float64 {
	xs := make([]float64, len(cs))
	for i, c := range cs {
		xs[i] = c.Score
	}
	return mean(xs)
}

// measure runs one candidate on one case and judges it, or takes the
// journaled measurement of the same cell.
func (r *run) measure(ctx context.Context, phase string, p *profile.Profile, digest string, sc Scenario) (measurement, error) {
	key := cellKey(digest, sc.digest())
	if m, ok := r.prior.measurements[key]; ok {
		// Measured before, in this run or one it resumes: its spend is
		// already accounted.
		r.progress(Progress{Phase: phase, Candidate: digest, Case: sc.ID, Reused: true})
		return m, nil
	}
	if r.evaluations >= r.o.MaxEvaluations {
		return measurement{}, &LimitError{Max: r.o.MaxEvaluations}
	}
	if err := ctx.Err(); err != nil {
		return measurement{}, err
	}
	if err := r.authorize(ctx, p, digest); err != nil {
		return measurement{}, err
	}
	if err := r.validate(ctx, p, digest); err != nil {
		return measurement{}, err
	}
	r.evaluations++
	r.progress(Progress{Phase: phase, Candidate: digest, Case: sc.ID})
	// The agent gets its own copy: whatever it does to it, the run's
	// candidate stays as measured.
	own, err := profile.Clone(p)
	if err != nil {
		return measurement{}, err
	}
	started := r.now()
	out, err := r.runAgent(ctx, own, digest, sc)
	if err != nil {
		return measurement{}, fmt.Errorf("search: agent on case %q: %w", sc.ID, err)
	}
	ended := r.now()
	var desc string
	if phase == "search" {
		if desc, err = r.describeArtifact(ctx, digest, sc, out); err != nil {
			return measurement{}, err
		}
	}
	m := measurement{Type: recMeasurement, Candidate: digest, Case: sc.ID, CaseDigest: sc.digest(), Phase: phase,
		AgentCost: toAmount(out.Usage.CostUSD), RunID: out.RunID, OutputBytes: int64(len(out.Text)),
		OutputDigest: canonjson.DigestBytes([]byte(out.Text)), InputTokens: known(out.Usage.InputTokens),
		OutputTokens: known(out.Usage.OutputTokens), CachedTokens: known(out.Usage.CacheReadTokens),
		ReasoningTokens: known(out.Usage.ReasoningTokens), ModelCalls: out.ModelCalls, StartedAtMs: started, EndedAtMs: ended,
		Description: desc}
	judgeCost := ledger.ExactAmount(0.0)
	for _, j := range r.o.Judges {
		s, err := j.Score(ctx, sc, out)
		if err != nil {
			return measurement{}, fmt.Errorf("search: judge %s on case %q: %w", j.Name(), sc.ID, err)
		}
		if math.IsNaN(s.Value) || s.Value < 0 || s.Value > 1 {
			return measurement{}, fmt.Errorf("search: judge %s on case %q scored %v, outside [0, 1]", j.Name(), sc.ID, s.Value)
		}
		m.JudgeScores = append(m.JudgeScores, s.Value)
		judgeCost = judgeCost.Plus(s.CostUSD)
	}
	m.Score = mean(m.JudgeScores)
	m.JudgeCost = toAmount(judgeCost)
	m.JudgedAtMs = max(r.now(), ended)
	if err := r.log.append(ctx, m); err != nil {
		return measurement{}, err
	}
	r.prior.measurements[key] = m
	r.account(m)
	return m, r.checkCeiling()
}

// now is the wall clock in Unix milliseconds.
func (r *run) now() float64 { return float64(time.Now().UnixMicro()) / 1000 }

func (r *run) progress(p Progress) {
	if r.o.Progress != nil {
		r.o.Progress(p)
	}
}

// account adds a measurement's spend.
func (r *run) account(m measurement) {
	agent, judge := m.AgentCost.ledger(), m.JudgeCost.ledger()
	if m.Phase == "final" {
		r.spend.Final = r.spend.Final.Plus(agent)
	} else {
		r.spend.Candidates = r.spend.Candidates.Plus(agent)
	}
	r.spend.Judges = r.spend.Judges.Plus(judge)
	r.spend.Total = r.spend.Total.Plus(agent).Plus(judge)
}

// checkCeiling refuses a reported total above the ceiling. An unknown
// channel's reported part still counts: what was reported was spent.
func (r *run) checkCeiling() error {
	c := r.o.CostCeiling
	if c == nil || !r.spend.Total.Reported || r.spend.Total.Value <= *c {
		return nil
	}
	return &CostCeilingError{CeilingUSD: *c, ReportedUSD: r.spend.Total.Value}
}

func (r *run) views() (train, selection []CaseView) {
	for _, sc := range r.order {
		v := CaseView{ID: sc.ID, Partition: sc.Partition}
		if r.o.ShareCaseBodies {
			v.Input, v.Expected = sc.Input, sc.Expected
		}
		switch sc.Partition {
		case Train:
			train = append(train, v)
		case Selection:
			selection = append(selection, v)
		}
	}
	return train, selection
}

// search runs the method, or takes its journaled answer.
func (r *run) search(ctx context.Context) (*methodRecord, error) {
	if m := r.prior.method; m != nil {
		for _, e := range m.Population {
			*r.entryFor(e.Surface) = e
		}
		return m, nil
	}
	train, selection := r.views()
	if err := r.describeViews(ctx, train, selection); err != nil {
		return nil, err
	}
	in := MethodInput{Surface: r.o.Surface, Current: r.current, Train: train, Selection: selection, Evaluate: r.evaluate}
	if c := r.o.ProfileComponents; c != nil {
		in.Encoding = c.encoding()
	}
	if r.training != nil {
		in.Training = r.training.inputCopy()
	}
	out, err := r.o.Method.Search(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("search: method %s: %w", r.o.Method.Identity().Name, err)
	}
	if f := candidate.ScanSecrets(out.Selected); len(f) > 0 {
		// Refused before anything of it is journaled.
		r.refuse(r.entryFor(out.Selected), &CredentialError{Findings: f})
		return nil, &CredentialError{Findings: f}
	}
	m := &methodRecord{Type: recMethod, Selected: out.Selected, Rationale: out.Rationale, Cost: toAmount(out.Usage.CostUSD),
		RunIDs: out.RunIDs, Provenance: out.Provenance, TrainingReceipts: out.TrainingReceipts}
	for _, e := range r.population {
		m.Population = append(m.Population, *e)
	}
	if err := r.log.append(ctx, m); err != nil {
		return nil, err
	}
	return m, nil
}

func (r *run) run(ctx context.Context) (Result, error) {
	res := Result{Decision: Hold, minimumLift: r.o.MinimumLift, Provenance: r.provenance()}
	finish := func(err error) (Result, error) {
		res.Spend = r.spend
		res.Provenance.Evaluations, res.Provenance.Reused = r.evaluations, r.reused
		for _, e := range r.population {
			res.Population = append(res.Population, *e)
		}
		return res, err
	}
	searchStart := r.now()
	m, err := r.search(ctx)
	if err != nil {
		return finish(err)
	}
	res.searchWallMs = r.now() - searchStart
	res.devSplit, res.testSplit = r.devSplit, r.testSplit
	res.Provenance.Reported, res.Provenance.MethodRunIDs = m.Provenance, m.RunIDs
	var reasons []string
	optimizer := m.Cost.ledger()
	if ok, why := r.reconcile(ctx, m); !ok {
		// What the method reported is at most a floor of what it spent.
		reasons = append(reasons, why)
		optimizer = optimizer.Floor()
	}
	r.spend.Optimizer = optimizer
	r.spend.Total = r.spend.Total.Plus(optimizer)
	if err := r.checkCeiling(); err != nil {
		return finish(err)
	}

	if r.training != nil {
		receipts, err := r.training.checkReceipts(r.order, m.TrainingReceipts)
		res.Provenance.Training = &TrainingProvenance{ExecutionRef: r.training.input.ExecutionRef, Receipts: receipts}
		if err != nil {
			return finish(err)
		}
	}
	entry := r.entryFor(m.Selected)
	cand, candDigest, err := r.materialize(ctx, m.Selected)
	if err != nil {
		r.refuse(entry, err)
		return finish(err)
	}
	if err := r.validate(ctx, cand, candDigest); err != nil {
		r.refuse(entry, err)
		return finish(err)
	}
	entry.Digest = candDigest
	diffs, err := profile.Diffs(r.base, cand)
	if err != nil {
		return finish(fmt.Errorf("search: diff of the candidate: %w", err))
	}
	entry.Diffs = diffs
	res.Candidate = Candidate{Profile: cand, Digest: candDigest, Diffs: diffs}

	// The final comparison: both arms on every test case, measured here.
	base, err := profile.Clone(r.base)
	if err != nil {
		return finish(err)
	}
	var deltas []float64
	for _, sc := range r.order {
		if sc.Partition != Test {
			continue
		}
		b, err := r.measure(ctx, "final", base, r.baselineID, sc)
		if err != nil {
			return finish(err)
		}
		c, err := r.measure(ctx, "final", cand, candDigest, sc)
		if err != nil {
			return finish(err)
		}
		res.Test = append(res.Test, PairedCase{ID: sc.ID, Baseline: b.Score, Candidate: c.Score})
		res.cells = append(res.cells, [2]measurement{b, c})
		res.testCases = append(res.testCases, sc)
		deltas = append(deltas, c.Score-b.Score)
	}
	for _, t := range res.Test {
		res.BaselineScore += t.Baseline
		res.CandidateScore += t.Candidate
	}
	n := float64(len(res.Test))
	res.BaselineScore, res.CandidateScore = res.BaselineScore/n, res.CandidateScore/n
	res.Lift = mean(deltas)
	res.LiftInterval = PairedBootstrap(deltas, r.o.Resamples, r.o.Confidence, r.o.Seed)
	r.progress(Progress{Phase: "done", Candidate: candDigest})

	if candDigest == r.baselineID {
		reasons = append(reasons, "the method selected the base profile itself: there is nothing to ship")
	}
	if !(res.LiftInterval.Lower > r.o.MinimumLift) {
		reasons = append(reasons, fmt.Sprintf("the lift interval's lower bound %.4f does not clear the minimum lift %.4f", res.LiftInterval.Lower, r.o.MinimumLift))
	}
	if !r.spend.Total.Known() {
		reasons = append(reasons, "some spend is unknown ("+unknownParts(r.spend)+"): an unaccounted run never ships")
	}
	if len(reasons) == 0 {
		res.Decision = Ship
		reasons = append(reasons, fmt.Sprintf("the lift interval [%.4f, %.4f] clears the minimum lift %.4f and all spend is known", res.LiftInterval.Lower, res.LiftInterval.Upper, r.o.MinimumLift))
	}
	res.Reasons = reasons
	return finish(nil)
}

// unknownParts names the spend channels that are not known.
func unknownParts(s Spend) string {
	var out []string
	for _, p := range []struct {
		name string
		a    ledger.Amount[float64]
	}{{"optimizer", s.Optimizer}, {"candidates", s.Candidates}, {"judges", s.Judges}, {"final scoring", s.Final}} {
		if !p.a.Known() {
			out = append(out, p.name)
		}
	}
	return fmt.Sprint(out)
}

// reconcile checks the method's reported cost against the ledgers of the
// runs it recorded (OPT-04). ok is false, with why, when they disagree or
// cannot be read.
func (r *run) reconcile(ctx context.Context, m *methodRecord) (ok bool, why string) {
	if len(m.RunIDs) == 0 {
		return true, ""
	}
	if r.o.Store == nil {
		return false, "the method recorded runs but Improve has no store to reconcile its spend with"
	}
	rec := ledger.ExactAmount(0.0)
	for _, id := range slices.Compact(slices.Sorted(slices.Values(m.RunIDs))) {
		rr, err := kernel.ReadRun(ctx, r.o.Store, id)
		if err != nil {
			return false, fmt.Sprintf("the method's run %s cannot be read: %v", id, err)
		}
		rec = rec.Plus(rr.Spend.CostUSD)
	}
	reported := m.Cost.ledger()
	if rec.Known() != reported.Known() || math.Abs(rec.Value-reported.Value) > 1e-9 {
		return false, fmt.Sprintf("the method reported %v USD but its runs' ledgers state %v USD: its spend does not reconcile", reported, rec)
	}
	return true, ""
}
