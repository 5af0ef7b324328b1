package improve_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve"
	"github.com/agentrt/agentrt/schema"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

const (
	base      = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
	candDig   = "sha256:8888888888888888888888888888888888888888888888888888888888888888"
	expDigest = "sha256:ef35615f49689a0ce9260618b6349d42da125cc8d59c48dd2b310b08b813b39f"
	// other is a digest that is neither the base nor the candidate.
	other = "sha256:1111111111111111111111111111111111111111111111111111111111111111"
)

var t0 = time.Date(2026, 7, 25, 0, 0, 0, 0, time.UTC)

// proposalValue is the reference's valid profile proposal vector, given
// its self-digest (the vector carries a placeholder digest).
func proposalValue(t *testing.T) canonjson.Value {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", "vectors", "AgentImprovementProposal.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		if c.Name == "recorded-78fc9629aa" {
			v, err := canonjson.Decode(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			return redigest(t, v)
		}
	}
	t.Fatal("proposal vector recorded-78fc9629aa not found")
	return canonjson.Value{}
}

func redigest(t *testing.T, v canonjson.Value) canonjson.Value {
	t.Helper()
	d, err := candidate.SelfDigestValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return v.With("digest", canonjson.StringValue(d))
}

func digestOf(v canonjson.Value) string { d, _ := v.Get("digest"); return d.Str() }

func doc(t *testing.T, x any) canonjson.Value {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	return redigest(t, v)
}

func review(t *testing.T, proposalDigest, decision string) canonjson.Value {
	return doc(t, &candidate.ImprovementReview{
		Kind: candidate.KindImprovementReviewValue, ProposalDigest: proposalDigest, Decision: decision,
		ReviewedBy: "operator@example.com", ReviewedAt: "2026-07-24T01:00:00.000Z", Reason: "Measured winner passed review.",
	})
}

func activation(t *testing.T, proposalDigest, reviewDigest string, edit func(*candidate.ImprovementActivation)) canonjson.Value {
	a := &candidate.ImprovementActivation{
		Kind: candidate.KindImprovementActivationValue, ProposalDigest: proposalDigest, ReviewDigest: reviewDigest,
		ExperimentDigest: expDigest, CandidateDigest: candDig, Intent: "activate-candidate",
		Targets:      []candidate.ActivationTarget{{Surface: "prompt", Identity: "agent-profile:support", ExpectedBaseDigest: base}},
		FundingOwner: "tenant:test", AuthorizedBy: "policy:tenant-admin",
		AuthorizedAt: "2026-07-25T00:00:00.000Z", ExpiresAt: "2026-07-25T00:05:00.000Z",
	}
	if edit != nil {
		edit(a)
	}
	return doc(t, a)
}

type fixture struct {
	svc     *improve.Service
	targets *improve.MemoryTargets
	clock   *time.Time
}

func newFixture(st store.Store) *fixture {
	clock := t0
	targets := improve.NewMemoryTargets()
	targets.Set("prompt", "agent-profile:support", base)
	return &fixture{svc: &improve.Service{Store: st, Targets: targets, Now: func() time.Time { return clock }}, targets: targets, clock: &clock}
}

func bytesOf(v canonjson.Value) []byte { return canonjson.Marshal(v) }

// runHappyPath walks the whole path once and checks each replay.
func runHappyPath(t *testing.T, st store.Store) {
	ctx := context.Background()
	f := newFixture(st)
	p := proposalValue(t)
	rec, err := f.svc.ProposeImprovement(ctx, bytesOf(p))
	if err != nil || rec.Digest != digestOf(p) || rec.Replayed {
		t.Fatalf("propose = %+v, %v", rec, err)
	}
	if again, err := f.svc.ProposeImprovement(ctx, bytesOf(p)); err != nil || !again.Replayed {
		t.Fatalf("propose replay = %+v, %v", again, err)
	}
	r := review(t, rec.Digest, "approve")
	if _, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil {
		t.Fatal(err)
	}
	if again, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil || !again.Replayed {
		t.Fatalf("review replay = %+v, %v", again, err)
	}
	if f.targets.Applied() != 0 {
		t.Fatal("a target changed before execution")
	}
	a := activation(t, rec.Digest, digestOf(r), nil)
	act, err := f.svc.CreateActivation(ctx, bytesOf(a))
	if err != nil {
		t.Fatal(err)
	}
	if again, err := f.svc.CreateActivation(ctx, bytesOf(a)); err != nil || !again.Replayed {
		t.Fatalf("activation replay = %+v, %v", again, err)
	}
	*f.clock = f.clock.Add(time.Minute)
	exec, err := f.svc.ExecuteActivation(ctx, act.Digest)
	if err != nil {
		t.Fatal(err)
	}
	if exec.Result.Outcome.Status != "applied" || exec.Result.IdempotencyKey != act.Digest {
		t.Fatalf("result = %+v", exec.Result)
	}
	if got, _ := f.targets.Base(ctx, "prompt", "agent-profile:support"); got != candDig {
		t.Fatalf("target = %s, want the candidate", got)
	}
	shown, err := f.svc.Show(ctx, act.Digest)
	if err != nil || shown.Status != store.StatusCompleted {
		t.Fatalf("show = %+v, %v", shown, err)
	}
	if _, ok := shown.Doc.Get("result"); !ok {
		t.Fatal("the result is not recorded")
	}
	if shown, err := f.svc.Show(ctx, rec.Digest); err != nil || shown.Status != store.StatusCompleted {
		t.Fatalf("show proposal = %+v, %v", shown, err)
	}
}

func TestHappyPath(t *testing.T) { runHappyPath(t, memory.New(nil)) }

// TestRefusals: every way the path refuses, and that no refusal writes a
// target.
func TestRefusals(t *testing.T) {
	runRefusals(t, func(*testing.T) store.Store { return memory.New(nil) })
}

func runRefusals(t *testing.T, open func(*testing.T) store.Store) {
	type step func(t *testing.T, ctx context.Context, f *fixture, proposal string) error
	approve := func(t *testing.T, ctx context.Context, f *fixture, p string) string {
		r := review(t, p, "approve")
		if _, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil {
			t.Fatal(err)
		}
		return digestOf(r)
	}
	create := func(t *testing.T, ctx context.Context, f *fixture, p string, edit func(*candidate.ImprovementActivation)) string {
		rec, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, approve(t, ctx, f, p), edit)))
		if err != nil {
			t.Fatal(err)
		}
		return rec.Digest
	}
	cases := []struct {
		name    string
		want    error
		run     step
		applied int
	}{
		{"proposal digest mismatch", improve.ErrDigestMismatch, func(t *testing.T, ctx context.Context, f *fixture, _ string) error {
			p := proposalValue(t).With("digest", canonjson.StringValue(base))
			_, err := f.svc.ProposeImprovement(ctx, bytesOf(p))
			return err
		}, 0},
		{"proposal key conflict", improve.ErrKeyConflict, func(t *testing.T, ctx context.Context, f *fixture, _ string) error {
			p := redigest(t, proposalValue(t).With("findings", canonjson.ArrayValue([]canonjson.Value{canonjson.ObjectValue(nil)})))
			_, err := f.svc.ProposeImprovement(ctx, bytesOf(p))
			return err
		}, 0},
		{"review digest mismatch", improve.ErrDigestMismatch, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			r := review(t, p, "approve").With("reason", canonjson.StringValue("edited after digesting"))
			_, err := f.svc.ReviewProposal(ctx, bytesOf(r))
			return err
		}, 0},
		{"review of an unknown proposal", improve.ErrUnknown, func(t *testing.T, ctx context.Context, f *fixture, _ string) error {
			_, err := f.svc.ReviewProposal(ctx, bytesOf(review(t, base, "approve")))
			return err
		}, 0},
		{"second different review", improve.ErrKeyConflict, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			approve(t, ctx, f, p)
			_, err := f.svc.ReviewProposal(ctx, bytesOf(review(t, p, "reject")))
			return err
		}, 0},
		{"rejected review stops the path", improve.ErrNotApproved, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			r := review(t, p, "reject")
			if _, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil {
				t.Fatal(err)
			}
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, digestOf(r), nil)))
			return err
		}, 0},
		{"activation without review", improve.ErrNotApproved, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, base, nil)))
			return err
		}, 0},
		{"activation names another review", improve.ErrBinding, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			approve(t, ctx, f, p)
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, base, nil)))
			return err
		}, 0},
		{"activation names another experiment", improve.ErrBinding, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, approve(t, ctx, f, p), func(a *candidate.ImprovementActivation) { a.ExperimentDigest = base })))
			return err
		}, 0},
		{"activation names another candidate", improve.ErrBinding, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, approve(t, ctx, f, p), func(a *candidate.ImprovementActivation) { a.CandidateDigest = base })))
			return err
		}, 0},
		{"activation targets an unchanged surface", improve.ErrBinding, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, approve(t, ctx, f, p), func(a *candidate.ImprovementActivation) { a.Targets[0].Surface = "tools" })))
			return err
		}, 0},
		{"activation digest mismatch", improve.ErrDigestMismatch, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			a := activation(t, p, approve(t, ctx, f, p), nil).With("fundingOwner", canonjson.StringValue("tenant:other"))
			_, err := f.svc.CreateActivation(ctx, bytesOf(a))
			return err
		}, 0},
		{"activation key conflict", improve.ErrKeyConflict, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			create(t, ctx, f, p, nil)
			r := review(t, p, "approve")
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, digestOf(r), func(a *candidate.ImprovementActivation) { a.FundingOwner = "tenant:other" })))
			return err
		}, 0},
		{"expired at creation", improve.ErrExpired, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			*f.clock = t0.Add(time.Hour)
			_, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, p, approve(t, ctx, f, p), nil)))
			return err
		}, 0},
		{"expired at execution", improve.ErrExpired, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			d := create(t, ctx, f, p, nil)
			*f.clock = t0.Add(5 * time.Minute)
			exec, err := f.svc.ExecuteActivation(ctx, d)
			if exec.Result == nil || exec.Result.Outcome.Status != "expired" {
				t.Errorf("result = %+v, want expired recorded", exec.Result)
			}
			return err
		}, 0},
		{"base changed", improve.ErrBaseChanged, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			d := create(t, ctx, f, p, nil)
			f.targets.Set("prompt", "agent-profile:support", other)
			exec, err := f.svc.ExecuteActivation(ctx, d)
			if exec.Result == nil || exec.Result.Outcome.Status != "conflict" || *exec.Result.Outcome.Targets[0].CurrentDigest != other {
				t.Errorf("result = %+v, want a recorded conflict", exec.Result)
			}
			return err
		}, 0},
		{"restore when the target holds neither", improve.ErrBaseChanged, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			d := create(t, ctx, f, p, func(a *candidate.ImprovementActivation) { a.Intent = "restore-baseline" })
			f.targets.Set("prompt", "agent-profile:support", other)
			exec, err := f.svc.ExecuteActivation(ctx, d)
			if exec.Result == nil || exec.Result.Outcome.Status != "conflict" {
				t.Errorf("result = %+v, want a recorded conflict", exec.Result)
			}
			return err
		}, 0},
		{"double execute", improve.ErrAlreadyExecuted, func(t *testing.T, ctx context.Context, f *fixture, p string) error {
			d := create(t, ctx, f, p, nil)
			first, err := f.svc.ExecuteActivation(ctx, d)
			if err != nil {
				t.Fatal(err)
			}
			second, err := f.svc.ExecuteActivation(ctx, d)
			if second.Result == nil || second.Result.Digest != first.Result.Digest {
				t.Errorf("second = %+v, want the first result", second.Result)
			}
			return err
		}, 1},
		{"execute an unknown activation", improve.ErrUnknown, func(t *testing.T, ctx context.Context, f *fixture, _ string) error {
			_, err := f.svc.ExecuteActivation(ctx, base)
			return err
		}, 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			f := newFixture(open(t))
			p := proposalValue(t)
			if _, err := f.svc.ProposeImprovement(ctx, bytesOf(p)); err != nil {
				t.Fatal(err)
			}
			err := tc.run(t, ctx, f, digestOf(p))
			if !errors.Is(err, tc.want) {
				t.Fatalf("err = %v, want %v", err, tc.want)
			}
			if got := f.targets.Applied(); got != tc.applied {
				t.Fatalf("targets applied %d times, want %d", got, tc.applied)
			}
		})
	}
}

// A restore-baseline activation undoes an applied candidate: it writes
// each target's expectedBaseDigest back when the target holds the
// candidate, and an activation whose writes are already in place writes
// nothing and records already-applied, a success.
func TestRestoreBaselineAndAlreadyApplied(t *testing.T) {
	ctx := context.Background()
	f := newFixture(memory.New(nil))
	p := proposalValue(t)
	rec, err := f.svc.ProposeImprovement(ctx, bytesOf(p))
	if err != nil {
		t.Fatal(err)
	}
	r := review(t, rec.Digest, "approve")
	if _, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil {
		t.Fatal(err)
	}
	execute := func(intent, wantStatus string) string {
		t.Helper()
		a := activation(t, rec.Digest, digestOf(r), func(a *candidate.ImprovementActivation) { a.Intent = intent })
		act, err := f.svc.CreateActivation(ctx, bytesOf(a))
		if err != nil {
			t.Fatalf("%s: %v", intent, err)
		}
		exec, err := f.svc.ExecuteActivation(ctx, act.Digest)
		if err != nil || exec.Result.Outcome.Status != wantStatus {
			t.Fatalf("%s: result %+v, %v; want %s", intent, exec.Result, err, wantStatus)
		}
		if shown, err := f.svc.Show(ctx, act.Digest); err != nil || shown.Status != store.StatusCompleted {
			t.Fatalf("%s: recorded %+v, %v; want completed", intent, shown, err)
		}
		got, _ := f.targets.Base(ctx, "prompt", "agent-profile:support")
		return got
	}
	if got := execute("activate-candidate", "applied"); got != candDig {
		t.Fatalf("after activating, the target holds %s, want the candidate", got)
	}
	if got := execute("restore-baseline", "applied"); got != base {
		t.Fatalf("after restoring, the target holds %s, want the base", got)
	}
	if f.targets.Applied() != 2 {
		t.Fatalf("%d writes, want 2", f.targets.Applied())
	}

	// A second proposal's activation finds its candidate already in
	// place: nothing is written.
	g := newFixture(memory.New(nil))
	g.targets.Set("prompt", "agent-profile:support", candDig)
	rec2, err := g.svc.ProposeImprovement(ctx, bytesOf(p))
	if err != nil {
		t.Fatal(err)
	}
	r2 := review(t, rec2.Digest, "approve")
	if _, err := g.svc.ReviewProposal(ctx, bytesOf(r2)); err != nil {
		t.Fatal(err)
	}
	act, err := g.svc.CreateActivation(ctx, bytesOf(activation(t, rec2.Digest, digestOf(r2), nil)))
	if err != nil {
		t.Fatal(err)
	}
	exec, err := g.svc.ExecuteActivation(ctx, act.Digest)
	if err != nil || exec.Result.Outcome.Status != "already-applied" || *exec.Result.Outcome.Targets[0].CurrentDigest != candDig {
		t.Fatalf("result %+v, %v; want already-applied naming the candidate", exec.Result, err)
	}
	if g.targets.Applied() != 0 {
		t.Fatalf("%d writes, want none", g.targets.Applied())
	}
}

// Nothing is recorded from a comparison that did not pass: a proposal
// whose measured decision is hold is refused by its schema.
func TestHoldIsNotProposable(t *testing.T) {
	p := proposalValue(t)
	eval, _ := p.Get("evaluation")
	decision, _ := eval.Get("decision")
	p = redigest(t, p.With("evaluation", eval.With("decision", decision.With("outcome", canonjson.StringValue("hold")))))
	f := newFixture(memory.New(nil))
	_, err := f.svc.ProposeImprovement(context.Background(), bytesOf(p))
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want a schema refusal", err)
	}
	if _, err := f.svc.Show(context.Background(), digestOf(p)); !errors.Is(err, improve.ErrUnknown) {
		t.Fatalf("show = %v, want nothing recorded", err)
	}
}

// A review that requests changes stops the path like a rejection.
func TestRequestChangesStopsThePath(t *testing.T) {
	ctx := context.Background()
	f := newFixture(memory.New(nil))
	p := proposalValue(t)
	if _, err := f.svc.ProposeImprovement(ctx, bytesOf(p)); err != nil {
		t.Fatal(err)
	}
	r := review(t, digestOf(p), "request-changes")
	if _, err := f.svc.ReviewProposal(ctx, bytesOf(r)); err != nil {
		t.Fatal(err)
	}
	if _, err := f.svc.CreateActivation(ctx, bytesOf(activation(t, digestOf(p), digestOf(r), nil))); !errors.Is(err, improve.ErrNotApproved) {
		t.Fatalf("err = %v, want ErrNotApproved", err)
	}
	if rec, _ := f.svc.Show(ctx, digestOf(p)); rec.Status != store.StatusCancelled {
		t.Fatalf("proposal status %s, want cancelled", rec.Status)
	}
}
