package cli_test

import (
	"context"
	"errors"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store/sqlite"
)

// toolsFirst is a subscription profile whose first seat keeps the
// profile's tools map and whose second removes it: a provider that
// cannot apply tools can run stage 1 only.
const toolsFirst = `{"name":"staged-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "tools":{"read":true},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"},"tools":{}}]}`

// stageRecorder is a scripted provider that records the profile of every
// create it receives; noTools makes it declare it cannot apply a tools
// map; loseCreate makes its create take effect and lose its answer.
type stageRecorder struct {
	*scripted.Provider
	noTools, loseCreate bool

	mu       *sync.Mutex
	profiles *[]*profile.Profile
}

func newStageRecorder(noTools bool) stageRecorder {
	return stageRecorder{Provider: subscriptionProvider(), noTools: noTools, mu: new(sync.Mutex), profiles: new([]*profile.Profile)}
}

// reconnect is another client of the same provider.
func (r stageRecorder) reconnect(loseCreate bool) stageRecorder {
	r.Provider, r.loseCreate = r.Provider.Reconnect(), loseCreate
	return r
}

func (r stageRecorder) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c, err := r.Provider.Capabilities(ctx)
	if err != nil || !r.noTools {
		return c, err
	}
	cc := *c
	cc.Profile.Tools = false
	return &cc, nil
}

func (r stageRecorder) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	r.mu.Lock()
	*r.profiles = append(*r.profiles, in.Profile.Inline)
	r.mu.Unlock()
	env, err := r.Provider.Create(ctx, in)
	if err == nil && r.loseCreate {
		return nil, errors.New("the create's answer was lost on the way back")
	}
	return env, err
}

func (r stageRecorder) created() []*profile.Profile {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*profile.Profile(nil), *r.profiles...)
}

func projected(t *testing.T, src string, k int) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(src))
	if err != nil {
		t.Fatal(err)
	}
	eff, err := profile.Project(p, k)
	if err != nil {
		t.Fatal(err)
	}
	return eff
}

// recordedStage reads the stage the retained run's intent recorded.
func recordedStage(t *testing.T, db, record string) *int {
	t.Helper()
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	rec, err := retained.Load(context.Background(), s, record)
	if err != nil {
		t.Fatal(err)
	}
	return rec.Intent.Stage
}

// PRF-07, RG-07 at the CLI: agentrt run --retain on a seated profile
// creates the environment with the projection of the first stage the
// provider can honor — without seats, with that stage's model and tools —
// never the whole authored profile; the intent records the stage, and
// the credential requests are that stage's. A provider that cannot apply
// stage 0's tools runs stage 1, and says on stderr why it passed stage 0
// over.
func TestRunRetainCreatesTheStageProjection(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name    string
		noTools bool
		stage   int
	}{
		{"provider with tools runs stage 0", false, 0},
		{"tool-less provider runs stage 1", true, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := t.TempDir() + "/agentrt.db"
			prof := writeFile(t, "staged.json", toolsFirst)
			p := newStageRecorder(tc.noTools)
			open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
			out, errOut, code := runWith(t, open, "run", prof, "--task", "Write it.", "--retain", "--key", "k-stage", "--db", db)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("run --retain: exit %d\n%s%s", code, out, errOut)
			}
			if diff := cmp.Diff([]*profile.Profile{projected(t, toolsFirst, tc.stage)}, p.created()); diff != "" {
				t.Errorf("profile the provider was asked to create (-want +got):\n%s", diff)
			}
			if !strings.Contains(out, "stage     "+string(rune('0'+tc.stage))) {
				t.Errorf("the output does not name stage %d:\n%s", tc.stage, out)
			}
			passed := strings.Contains(errOut, "passing over stage 0") && strings.Contains(errOut, "/tools")
			if passed != tc.noTools {
				t.Errorf("stderr says stage 0 was passed over: %v; want %v:\n%s", passed, tc.noTools, errOut)
			}
			_, record, _ := retained.DeriveIdentity("k-stage", "turn-1")
			if got := recordedStage(t, db, record); got == nil || *got != tc.stage {
				t.Errorf("intent records stage %v; want %d", got, tc.stage)
			}
			for i, c := range p.CredentialRequests() {
				if c.Stage != tc.stage {
					t.Errorf("credential request %d is stage %d's; want stage %d's", i, c.Stage, tc.stage)
				}
			}
			if len(p.CredentialRequests()) != 2 {
				t.Errorf("%d credential requests; want the create's and the turn's", len(p.CredentialRequests()))
			}
		})
	}
}

// PRF-07 at the CLI: a provider that can honor no stage of the chain is
// refused before anything is admitted or created, with the typed refusal
// naming each stage and the missing capability.
func TestRunRetainRefusesWhenNoStageCanRun(t *testing.T) {
	t.Parallel()
	both := strings.Replace(toolsFirst, `"tools":{}`, `"tools":{"write":true}`, 1)
	db := t.TempDir() + "/agentrt.db"
	prof := writeFile(t, "staged.json", both)
	p := newStageRecorder(true)
	open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
	out, errOut, code := runWith(t, open, "run", prof, "--task", "Write it.", "--retain", "--key", "k-none", "--db", db)
	if code != cli.ExitFailed {
		t.Fatalf("run --retain: exit %d; want %d\n%s%s", code, cli.ExitFailed, out, errOut)
	}
	for _, want := range []string{"stage 0 (/seats/0", "stage 1 (/seats/1", "/tools", "nothing was started"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr does not say %q:\n%s", want, errOut)
		}
	}
	if n := p.Creates(); n != 0 || len(p.created()) != 0 {
		t.Errorf("%d creates; want none", n)
	}
	if _, err := os.Stat(db); err == nil {
		out, errOut, code = runWith(t, open, "runs", "list", "--db", db, "--json")
		if code != 0 || strings.Contains(out, "retained-") {
			t.Errorf("runs list: exit %d; want no retained run\n%s%s", code, out, errOut)
		}
	}
}

// RES-05 with a stage: a retained run of stage 1 whose create answer was
// lost is recovered by replaying the keyed create of the same stage's
// projection (the intent's stage), so the provider answers with the
// environment it holds and creates no second one.
func TestRunsRecoverReplaysTheRecordedStage(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/agentrt.db"
	prof := writeFile(t, "staged.json", toolsFirst)
	p := newStageRecorder(true)
	lost := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(true), nil }
	open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
	out, errOut, code := runWith(t, lost, "run", prof, "--task", "Write it.", "--retain", "--key", "k-lost", "--db", db)
	if code != cli.ExitFailed {
		t.Fatalf("run --retain whose create answer was lost: exit %d\n%s%s", code, out, errOut)
	}
	_, record, _ := retained.DeriveIdentity("k-lost", "turn-1")
	out, errOut, code = runWith(t, open, "runs", "recover", record, "--profile", prof, "--task", "Write it.", "--db", db, "--json")
	if code != 0 || member(decode(t, out), "outcome").Str() != "recovered" {
		t.Fatalf("runs recover: exit %d\n%s%s", code, out, errOut)
	}
	want := projected(t, toolsFirst, 1)
	if diff := cmp.Diff([]*profile.Profile{want, want}, p.created()); diff != "" {
		t.Errorf("profiles of the create and its replay (-want +got):\n%s", diff)
	}
	if p.Creates() != 1 {
		t.Errorf("%d environments; the replayed keyed create must make none", p.Creates())
	}
	out, errOut, code = runWith(t, open, "runs", "attach", record, "--db", db, "--json")
	lines := jsonLines(t, out)
	if code != 0 || !canonjson.Equal(member(lines[len(lines)-1], "success"), canonjson.BoolValue(true)) {
		t.Fatalf("runs attach: exit %d\n%s%s", code, out, errOut)
	}
}

// RG-12 at the CLI: an older admission — made before runs recorded their
// stage, its environment created with the whole authored profile and
// stage 0's credential request — whose create answer was lost is
// recovered from the same profile file by replaying exactly the admitted
// create (retained.AdmittedRequest): the provider answers with the
// environment it holds and creates no second one. The recovery once
// re-projected stage 0 and refused the file as "not the profile the run
// was started with".
func TestRunsRecoverReplaysAnOlderAdmissionsCreationTimeProfile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	db := t.TempDir() + "/agentrt.db"
	profPath := writeFile(t, "staged.json", toolsFirst)
	authored, err := profile.Parse([]byte(toolsFirst))
	if err != nil {
		t.Fatal(err)
	}
	p := newStageRecorder(false)
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	key, turnID, task := "k-older", "turn-1", "Write it."
	_, err = retained.StartRetainedRun(ctx, retained.StartOptions{Provider: p.reconnect(true), Store: st,
		Environment: &contract.CreateInput{Profile: profile.Ref{Inline: authored}, IdempotencyKey: &key,
			Credential: contract.CredentialRequestFor(authored, 0, contract.CredentialOnCreate)},
		Turn:        contract.TurnInput{TurnID: &turnID, Prompt: &task, Credential: contract.CredentialRequestFor(authored, 0, contract.CredentialOnTurn)},
		OnAdmission: func(context.Context, retained.Admission) error { return nil }})
	st.Close()
	if err == nil {
		t.Fatal("the older start whose create answer was lost succeeded")
	}
	_, record, _ := retained.DeriveIdentity(key, turnID)
	if recordedStage(t, db, record) != nil {
		t.Fatal("the older admission must record no stage")
	}
	open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
	out, errOut, code := runWith(t, open, "runs", "recover", record, "--profile", profPath, "--task", task, "--db", db, "--json")
	if code != 0 || member(decode(t, out), "outcome").Str() != "recovered" {
		t.Fatalf("runs recover: exit %d\n%s%s", code, out, errOut)
	}
	if diff := cmp.Diff([]*profile.Profile{authored, authored}, p.created()); diff != "" {
		t.Errorf("profiles of the create and its replay (-want +got):\n%s", diff)
	}
	if p.Creates() != 1 {
		t.Errorf("%d environments; the replayed keyed create must make none", p.Creates())
	}
}
