package cli_test

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
)

// pinnedWriter is a subscription profile of two pinned accounts: stage
// 0 on team-a, stage 1 on team-b, each its own model.
const pinnedWriter = `{"name":"pinned-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"seat","id":"team-b"}}]}`

// quotaRecorder is a stage recorder over a scripted provider playing
// script, whose account owner serves team-a and team-b.
func quotaRecorder(t *testing.T, script string) stageRecorder {
	t.Helper()
	var s scripted.Script
	if err := json.Unmarshal([]byte(script), &s); err != nil {
		t.Fatal(err)
	}
	return stageRecorder{Provider: scripted.New(&s, scripted.Options{}), mu: new(sync.Mutex), profiles: new([]*profile.Profile)}
}

// stageCredentials are the credential requests of pinnedWriter's stages,
// one per (stage, occasion) pair given.
func stageCredentials(t *testing.T, pairs ...any) []contract.CredentialRequest {
	t.Helper()
	prof, err := profile.Parse([]byte(pinnedWriter))
	if err != nil {
		t.Fatal(err)
	}
	var out []contract.CredentialRequest
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, *contract.CredentialRequestFor(prof, pairs[i].(int), pairs[i+1].(string)))
	}
	return out
}

// PRF-11, RG-07, RG-08, RG-10, RG-11 for agentrt run --retain: the first
// stage's subscription refuses for quota — at its create, or part way
// through its turn — and the retained run moves on to the next authored
// stage as a retained run of its own: that stage's projection, its own
// admission records (intent → environment → dispatched) and its own
// credential requests, reaching the provider on create and on the turn,
// under the same logical run, node and turn id. Refused part way
// through its turn, stage 0 leaves its session, and stage 1 goes on in it
// natively (RG-11): stage 0's run's native continuation, with its own
// credential request on the continued turn and no create. The refused stage's
// record says why the chain moved on and names the next; the next one's
// names every stage tried before it; the summary names both stages.
// On SQLite and PostgreSQL.
func TestRunRetainMovesOnAfterQuotaRefusalRG08(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, script string
		// credentials: what the provider's account owner received.
		credentials []any
		// environments: stage 0 reached an environment of its own.
		environment0 bool
		// native: stage 1 went on natively in the session stage 0's
		// refusal left (RG-11): stage 0's run's continuation, no create.
		native bool
	}{
		{"refused at create",
			`{"accounts":{"team-a":{"exhausted":true,"retryAfterMs":60000},"team-b":{}},"turns":[{"repeat":true,"steps":[{"text":"done"}]}]}`,
			[]any{0, contract.CredentialOnCreate, 1, contract.CredentialOnCreate, 1, contract.CredentialOnTurn}, false, false},
		{"refused mid-turn",
			`{"accounts":{"team-a":{},"team-b":{}},"turns":[{"steps":[{"text":"a draft"}],"end":"quota","error":"the window is used up"},{"repeat":true,"steps":[{"text":"done"}]}]}`,
			[]any{0, contract.CredentialOnCreate, 0, contract.CredentialOnTurn, 1, contract.CredentialOnTurn}, true, true},
	} {
		for _, backend := range graphStoreBackends {
			t.Run(tc.name+"/"+backend.name, func(t *testing.T) {
				flags := backend.flags(t)
				prof := writeFile(t, "pinned.json", pinnedWriter)
				p := quotaRecorder(t, tc.script)
				open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
				out, errOut, code := runWith(t, open, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-quota", "--json"}, flags...)...)
				if code != 0 {
					t.Fatalf("run --retain: exit %d\n%s%s", code, out, errOut)
				}
				_, first, _ := retained.DeriveIdentity("k-quota", "turn-1")
				_, second, _ := retained.DeriveIdentity(retained.StageKey("k-quota", 0, 1), "turn-1")
				created := []*profile.Profile{projected(t, pinnedWriter, 0), projected(t, pinnedWriter, 1)}
				if tc.native {
					second, _ = retained.NativeContinuationRecordID("k-quota", retained.StageKey("k-quota", 0, 1)+"/turn-1")
					created = created[:1]
				}
				node := kernel.SeatedNode(first)
				lines := jsonLines(t, out)
				var dispatched []canonjson.Value
				for _, l := range lines {
					if _, ok := l.Get("controlRef"); ok {
						dispatched = append(dispatched, l)
					}
				}
				last := dispatched[len(dispatched)-1]
				if member(member(last, "controlRef"), "record").Str() != second || member(last, "stage").Float() != 1 || member(last, "node").Str() != node {
					t.Errorf("the last stage dispatched %s; want stage 1's run %s as node %s", canonjson.Marshal(last), second, node)
				}
				summary := lines[len(lines)-1]
				stages := member(summary, "stages").Items()
				if member(summary, "seatedRun").Str() != first || member(summary, "node").Str() != node || len(stages) != 2 {
					t.Fatalf("summary %s; want seated run %s, node %s, two stages", canonjson.Marshal(summary), first, node)
				}
				if member(stages[0], "outcome").Str() != kernel.StageQuotaRefused || member(stages[0], "runId").Str() != first ||
					member(stages[1], "outcome").Str() != kernel.StageCompleted || member(stages[1], "runId").Str() != second {
					t.Errorf("stages %s; want stage 0 quota-refused, stage 1 completed", canonjson.Marshal(member(summary, "stages")))
				}
				if !strings.Contains(errOut, "moving on to stage 1") {
					t.Errorf("stderr does not say the run moved on:\n%s", errOut)
				}
				// RG-07, RG-08, RG-10: each stage's own request reached the
				// provider's account owner, which bound the account.
				if diff := cmp.Diff(stageCredentials(t, tc.credentials...), p.CredentialRequests()); diff != "" {
					t.Errorf("credential requests the provider received (-want +got):\n%s", diff)
				}
				if diff := cmp.Diff(created, p.created()); diff != "" {
					t.Errorf("profiles the provider was asked to create (-want +got):\n%s", diff)
				}
				if strings.Contains(out+errOut, "team-a") || strings.Contains(out+errOut, "team-b") {
					t.Errorf("the output names an account:\n%s%s", out, errOut)
				}

				s := backend.open(t, flags)
				defer s.Close()
				r0, err := retained.Load(context.Background(), s, first)
				if err != nil {
					t.Fatal(err)
				}
				if r0.Seat == nil || r0.Seat.MovedOn == nil || r0.Seat.MovedOn.Outcome != kernel.StageQuotaRefused || r0.Seat.Next != second ||
					r0.Seat.Logical != first || r0.Seat.Node != node || r0.Status.Terminal() == false {
					t.Errorf("stage 0's record: status %s, seat %+v; want it ended, moved on to %s", r0.Status, r0.Seat, second)
				}
				if (r0.Environment != nil) != tc.environment0 || r0.Intent.Stage == nil || *r0.Intent.Stage != 0 {
					t.Errorf("stage 0's admission: environment %+v, stage %v", r0.Environment, r0.Intent.Stage)
				}
				r1, err := retained.Load(context.Background(), s, second)
				if err != nil {
					t.Fatal(err)
				}
				if r1.Intent.Stage == nil || *r1.Intent.Stage != 1 || r1.Environment == nil || r1.Dispatched == nil || r1.Intent.TurnID != "turn-1" {
					t.Errorf("stage 1's admission records %+v; want intent (stage 1), environment and dispatched", r1)
				}
				if r1.Seat == nil || r1.Seat.Logical != first || r1.Seat.Node != node || len(r1.Seat.Tried) != 1 ||
					r1.Seat.Tried[0].Outcome != kernel.StageQuotaRefused || r1.Seat.Next != "" {
					t.Errorf("stage 1's seat link %+v; want it to name stage 0's refusal", r1.Seat)
				}
				// runs attach on the seated run follows the stage it is on.
				out, errOut, code = runWith(t, open, append([]string{"runs", "attach", first, "--json"}, flags...)...)
				lines = jsonLines(t, out)
				if code != 0 || member(lines[len(lines)-1], "record").Str() != second || !member(lines[len(lines)-1], "success").Bool() {
					t.Errorf("runs attach %s: exit %d\n%s%s", first, code, out, errOut)
				}
			})
		}
	}
}

// RES-05 on a seated retained run: the chain moved on from a refused
// stage 0 to stage 1, whose create answer was lost. agentrt runs recover
// on the seated run's id recovers the stage it was on — re-projecting
// stage 1 from its intent and replaying that stage's keyed create, so no
// second environment is made — and re-sends stage 1's turn with stage
// 1's credential request.
func TestRunsRecoverReprojectsTheStageTheSeatedRunWasOn(t *testing.T) {
	t.Parallel()
	db := t.TempDir() + "/agentrt.db"
	prof := writeFile(t, "pinned.json", pinnedWriter)
	p := quotaRecorder(t, `{"accounts":{"team-a":{"exhausted":true},"team-b":{}},"turns":[{"repeat":true,"steps":[{"text":"done"}]}]}`)
	lost := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(true), nil }
	open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
	out, errOut, code := runWith(t, lost, "run", prof, "--task", "Write it.", "--retain", "--key", "k-lost", "--db", db)
	if code != cli.ExitFailed {
		t.Fatalf("run --retain whose stage 1 create answer was lost: exit %d\n%s%s", code, out, errOut)
	}
	_, first, _ := retained.DeriveIdentity("k-lost", "turn-1")
	_, second, _ := retained.DeriveIdentity(retained.StageKey("k-lost", 0, 1), "turn-1")
	out, errOut, code = runWith(t, open, "runs", "recover", first, "--profile", prof, "--task", "Write it.", "--db", db, "--json")
	v := decode(t, out)
	if code != 0 || member(v, "outcome").Str() != "recovered" || member(v, "stageRun").Str() != second || member(v, "stage").Float() != 1 {
		t.Fatalf("runs recover %s: exit %d; want stage 1's run %s recovered\n%s%s", first, code, second, out, errOut)
	}
	want1 := projected(t, pinnedWriter, 1)
	if diff := cmp.Diff([]*profile.Profile{projected(t, pinnedWriter, 0), want1, want1}, p.created()); diff != "" {
		t.Errorf("profiles of the creates and the replay (-want +got):\n%s", diff)
	}
	if p.Creates() != 1 {
		t.Errorf("%d environments; the replayed keyed create must make none", p.Creates())
	}
	got := p.CredentialRequests()
	if diff := cmp.Diff(stageCredentials(t, 1, contract.CredentialOnTurn), got[len(got)-1:]); diff != "" {
		t.Errorf("the re-sent turn's credential request (-want +got):\n%s", diff)
	}
}

// PRF-11, RG-08 for agentrt run --retain --seats: each stage of the chain
// runs on the provider the --seats file names for it — stage 0 by its
// seat's account, stage 1 by its index — and stage 0's quota refusal at
// create moves the retained run on to stage 1's provider as a retained
// run of its own, with its own admission records; --provider is never
// opened. A flag that picks one provider is refused before anything runs.
func TestRunRetainSeatsMovesOnToTheNextStagesProvider(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeFile("alpha.json", `{"turns":[{"repeat":true,"steps":[{"text":"never"}]}],"accounts":{"team-a":{"exhausted":true,"retryAfterMs":90000}}}`)
	writeFile("bravo.json", `{"turns":[{"repeat":true,"steps":[{"text":"a release note"}]}],"accounts":{"team-b":{}}}`)
	seats := writeFile("seats.json", `{"accounts":{"team-a":{"provider":"scripted","script":"alpha.json"}},
		"stages":{"1":{"provider":"scripted","script":"bravo.json"}}}`)
	prof := writeFile("pinned.json", pinnedWriter)
	db := filepath.Join(dir, "runs.db")
	never := func(string, string, string, string) (contract.Provider, error) {
		t.Error("--provider was opened for a --seats run")
		return nil, errors.New("not this provider")
	}
	out, errOut, code := runWith(t, never, "run", prof, "--task", "write a note", "--retain", "--seats", seats, "--key", "k-file", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := jsonLines(t, out)
	summary := lines[len(lines)-1]
	stages := member(summary, "stages").Items()
	if len(stages) != 2 || member(stages[0], "outcome").Str() != kernel.StageQuotaRefused || member(stages[0], "retryAfterMs").Float() != 90000 ||
		member(stages[1], "outcome").Str() != kernel.StageCompleted {
		t.Fatalf("summary %s; want stage 0 quota-refused (retry after 90s), stage 1 completed", canonjson.Marshal(summary))
	}
	if !strings.Contains(errOut, "from /accounts/team-a") || !strings.Contains(errOut, "from /stages/1") {
		t.Errorf("stderr does not say where each stage was resolved:\n%s", errOut)
	}
	_, second, _ := retained.DeriveIdentity(retained.StageKey("k-file", 0, 1), "turn-1")
	s := backendSQLite(t, db)
	r1, err := retained.Load(context.Background(), s, second)
	if err != nil || r1.Intent.Stage == nil || *r1.Intent.Stage != 1 || r1.Environment == nil || r1.Dispatched == nil || r1.Seat == nil || len(r1.Seat.Tried) != 1 {
		t.Fatalf("stage 1's record %+v (%v); want its admission records and the stage tried before it", r1, err)
	}
	_, _, code = runWith(t, never, "run", prof, "--task", "write a note", "--retain", "--seats", seats, "--provider", "openai", "--db", db)
	if code != cli.ExitUsage {
		t.Errorf("--retain --seats --provider: exit %d; want a usage error", code)
	}
}
