package cli_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
)

// seatedWriter is a subscription profile: its first seat is the account
// team-a of the scripted provider, which only the provider's account
// owner resolves.
const seatedWriter = `{"name":"seated-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/first"},
 "seats":[{"harness":"cli-base","provider":"scripted","model":"scripted/first","selector":{"kind":"seat","id":"team-a"}},
          {"harness":"cli-base","provider":"scripted","model":"scripted/second","selector":{"kind":"all-eligible"}}]}`

// subscriptionProvider is a scripted provider serving the accounts team-a
// and team-b: it refuses any create or turn without a credential request.
func subscriptionProvider() *scripted.Provider {
	done := "done"
	return scripted.New(&scripted.Script{Accounts: map[string]scripted.Account{"team-a": {}, "team-b": {}},
		Turns: []scripted.Turn{{Repeat: true, Steps: []scripted.Step{{Text: &done}}}}}, scripted.Options{})
}

// createLost is a provider whose create takes effect and whose answer is
// lost: agentrt run --retain dies with only the run's intent recorded
// while the provider holds its environment under the key.
type createLost struct{ *scripted.Provider }

func (c createLost) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if _, err := c.Provider.Create(ctx, in); err != nil {
		return nil, err
	}
	return nil, errors.New("the create's answer was lost on the way back")
}

// seatRequests are the credential requests stage 0 of seatedWriter makes,
// one per occasion given.
func seatRequests(t *testing.T, occasions ...string) []contract.CredentialRequest {
	t.Helper()
	prof, err := profile.Parse([]byte(seatedWriter))
	if err != nil {
		t.Fatal(err)
	}
	var out []contract.CredentialRequest
	for _, o := range occasions {
		out = append(out, *contract.CredentialRequestFor(prof, 0, o))
	}
	return out
}

func retainStores() []struct {
	name  string
	store func(t *testing.T) []string
} {
	return []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"sqlite", func(t *testing.T) []string { return []string{"--db", filepath.Join(t.TempDir(), "agentrt.db")} }},
		{"postgres", func(t *testing.T) []string { return []string{"--database", pgtest.Schema(t)} }},
	}
}

// RG-07 at the CLI: agentrt run --retain on a subscription profile sends
// the first seat stage's credential request with the create and with
// the turn, as a plain run does; the provider's account owner binds the
// account, and nothing the command prints names it.
func TestRunRetainSendsTheSeatCredentialRequestRG07(t *testing.T) {
	t.Parallel()
	for _, tc := range retainStores() {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.store(t)
			prof := writeFile(t, "seated.json", seatedWriter)
			p := subscriptionProvider()
			open := func(string, string, string, string) (contract.Provider, error) { return p.Reconnect(), nil }
			out, errOut, code := runWith(t, open, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-seat"}, db...)...)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("run --retain: exit %d\n%s%s", code, out, errOut)
			}
			want := seatRequests(t, contract.CredentialOnCreate, contract.CredentialOnTurn)
			if diff := cmp.Diff(want, p.CredentialRequests()); diff != "" {
				t.Errorf("credential requests the provider received (-want +got):\n%s", diff)
			}
			if strings.Contains(out+errOut, "team-a") {
				t.Errorf("the output names the account:\n%s%s", out, errOut)
			}
			// Without $AGENTRT_CREDENTIAL_KEY a SQLite store keys the
			// digest with its own key file; PostgreSQL has none, which
			// the run says once.
			notice := "set AGENTRT_CREDENTIAL_KEY, the same on every machine, so a recovery can prove the account selector did not change"
			if got, want := strings.Count(errOut, notice), map[string]int{"sqlite": 0, "postgres": 1}[tc.name]; got != want {
				t.Errorf("stderr says %d times to set the key; want %d:\n%s", got, want, errOut)
			}
		})
	}
}

// RES-05, RES-06, RG-09 at the CLI: agentrt run --retain died after the
// provider created the environment under the key and before the
// environment record was written. agentrt runs recover alone reports
// unverifiable (never not_found: the provider holds an environment) and
// says exactly what goes on with the run; runs recover --profile --task
// replays the keyed create (no second environment), re-sends the
// admitted turn with the seat's credential request and recovers the run;
// and, as the message says too, running agentrt run --retain again with
// the same profile, task, key and turn id continues the same run.
func TestRunsRecoverWithProfileAndTaskRES05RG09(t *testing.T) {
	t.Parallel()
	for _, tc := range retainStores() {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.store(t)
			prof := writeFile(t, "seated.json", seatedWriter)
			p := subscriptionProvider()
			lost := func(string, string, string, string) (contract.Provider, error) { return createLost{p.Reconnect()}, nil }
			open := func(string, string, string, string) (contract.Provider, error) { return p.Reconnect(), nil }
			for _, key := range []string{"k-recover", "k-rerun"} {
				out, errOut, code := runWith(t, lost, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", key}, db...)...)
				if code != cli.ExitFailed {
					t.Fatalf("run --retain whose create answer was lost: exit %d\n%s%s", code, out, errOut)
				}
			}
			if p.Creates() != 2 {
				t.Fatalf("%d creates; want one per start", p.Creates())
			}
			_, record, err := retained.DeriveIdentity("k-recover", "turn-1")
			if err != nil {
				t.Fatal(err)
			}

			out, errOut, code := runWith(t, open, append([]string{"runs", "recover", record}, db...)...)
			if code != cli.ExitFailed || !strings.Contains(out, "unverifiable") || strings.Contains(out, "not_found") {
				t.Fatalf("runs recover without the request: exit %d\n%s%s", code, out, errOut)
			}
			for _, next := range []string{
				"agentrt runs recover " + record + " --profile PROFILE --task TASK",
				"agentrt run PROFILE --task TASK --retain --key k-recover --turn-id turn-1",
			} {
				if !strings.Contains(out, next) {
					t.Errorf("runs recover does not say %q:\n%s", next, out)
				}
			}

			other := writeFile(t, "other.json", strings.Replace(seatedWriter, "seated-writer", "other-writer", 1))
			out, errOut, code = runWith(t, open, append([]string{"runs", "recover", record, "--task", "Write it.", "--profile", other}, db...)...)
			if code != cli.ExitUsage || !strings.Contains(errOut, "not the profile") {
				t.Fatalf("runs recover with another profile: exit %d\n%s%s", code, out, errOut)
			}
			out, errOut, code = runWith(t, open, append([]string{"runs", "recover", record, "--task", "Write something else.", "--profile", prof, "--json"}, db...)...)
			if v := decode(t, out); code != cli.ExitFailed || member(v, "outcome").Str() != "unverifiable" ||
				!strings.Contains(member(v, "reason").Str(), "turnDigest") || len(member(v, "next").Items()) != 1 {
				t.Fatalf("runs recover with another task: exit %d\n%s%s", code, out, errOut)
			}
			out, errOut, code = runWith(t, open, append([]string{"runs", "recover", record, "--task", "Write it.", "--profile", prof, "--json"}, db...)...)
			if code != 0 {
				t.Fatalf("runs recover --profile --task: exit %d\n%s%s", code, out, errOut)
			}
			rec := decode(t, out)
			if member(rec, "outcome").Str() != "recovered" || member(rec, "via").Str() != "resumed" {
				t.Fatalf("recover %s", out)
			}
			out, errOut, code = runWith(t, open, append([]string{"runs", "attach", record}, db...)...)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("runs attach: exit %d\n%s%s", code, out, errOut)
			}

			// The other run goes on by its derived identity.
			out, errOut, code = runWith(t, open, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-rerun", "--turn-id", "turn-1"}, db...)...)
			_, rerun, _ := retained.DeriveIdentity("k-rerun", "turn-1")
			if code != 0 || !strings.Contains(out, "retained run "+rerun) || !strings.Contains(out, "completed") {
				t.Fatalf("run --retain again: exit %d\n%s%s", code, out, errOut)
			}
			if p.Creates() != 2 || p.Turns() != 2 {
				t.Errorf("%d creates, %d turns; the recoveries must replay each run's environment and run each turn once", p.Creates(), p.Turns())
			}
			for i, c := range p.CredentialRequests() {
				if c.Stage != 0 || c.Selector.Kind != profile.SelectorSeat {
					t.Errorf("credential request %d is %+v; want stage 0's", i, c)
				}
			}
		})
	}
}

// RG-12, RG-10 at the CLI (issue 15): agentrt run --retain with
// $AGENTRT_CREDENTIAL_KEY died with only its intent recorded. The seat's
// account selector changed in the profile file since (team-a to team-b,
// the same stage otherwise): agentrt runs recover --profile --task with
// the same key is unverifiable, names the stage and neither account,
// says to recover with the profile the run was started with, and sends
// nothing — no create replayed, no turn, under either account. With the
// profile it was started with the run is recovered under team-a.
// Not parallel: it sets the key in the environment.
func TestRunsRecoverRefusesAChangedSeatSelectorRG12(t *testing.T) {
	t.Setenv("AGENTRT_CREDENTIAL_KEY", strings.Repeat("k", retained.MinCredentialKeySize))
	for _, tc := range retainStores() {
		t.Run(tc.name, func(t *testing.T) { recoverRefusesAChangedSelector(t, tc.store(t)) })
	}
}

// RG-12 by default (issue 15): with no $AGENTRT_CREDENTIAL_KEY, on the
// default store ($AGENTRT_HOME/agentrt.db, no --db), a changed seat
// selector is refused all the same: the store's own key, kept in a file
// beside its database (owner-only, 32 bytes), keyed the digest the run
// recorded, and runs recover read it back. The key is never printed.
// Not parallel: it sets the environment.
func TestRunsRecoverRefusesAChangedSeatSelectorByDefaultRG12(t *testing.T) {
	home := t.TempDir()
	t.Setenv("AGENTRT_HOME", home)
	t.Setenv("AGENTRT_CREDENTIAL_KEY", "")
	t.Setenv("AGENTRT_DATABASE_URL", "")
	recoverRefusesAChangedSelector(t, nil)
	path := filepath.Join(home, "agentrt.db") + cli.CredentialKeySuffix
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatalf("no key file beside the default store: %v", err)
	}
	if fi.Mode().Perm() != 0o600 || fi.Size() != int64(retained.MinCredentialKeySize) {
		t.Errorf("key file %s: mode %v, %d bytes; want 0600 and %d", path, fi.Mode().Perm(), fi.Size(), retained.MinCredentialKeySize)
	}
}

// recoverRefusesAChangedSelector is RG-12 at the CLI on the store db
// names (none: the default store): a seated run --retain died with only
// its intent recorded; runs recover with the seat's selector changed
// since is refused before anything is sent, and with the admitted
// profile the run is recovered.
func recoverRefusesAChangedSelector(t *testing.T, db []string) {
	t.Helper()
	prof := writeFile(t, "seated.json", seatedWriter)
	p := subscriptionProvider()
	lost := func(string, string, string, string) (contract.Provider, error) { return createLost{p.Reconnect()}, nil }
	open := func(string, string, string, string) (contract.Provider, error) { return p.Reconnect(), nil }
	out, errOut, code := runWith(t, lost, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-reseated"}, db...)...)
	if code != cli.ExitFailed {
		t.Fatalf("run --retain whose create answer was lost: exit %d\n%s%s", code, out, errOut)
	}
	_, record, _ := retained.DeriveIdentity("k-reseated", "turn-1")
	sent := len(p.CredentialRequests())

	reseated := writeFile(t, "reseated.json", strings.Replace(seatedWriter, `"id":"team-a"`, `"id":"team-b"`, 1))
	out, errOut, code = runWith(t, open, append([]string{"runs", "recover", record, "--task", "Write it.", "--profile", reseated, "--json"}, db...)...)
	v := decode(t, out)
	if code != cli.ExitFailed || member(v, "outcome").Str() != "unverifiable" || !strings.Contains(member(v, "reason").Str(), "seat stage 0") {
		t.Fatalf("runs recover with a changed selector: exit %d\n%s%s", code, out, errOut)
	}
	if next := member(v, "next").Items(); len(next) != 1 || !strings.Contains(next[0].Str(), "started with") {
		t.Errorf("runs recover with a changed selector says next %s", out)
	}
	if strings.Contains(out+errOut, "team-a") || strings.Contains(out+errOut, "team-b") {
		t.Errorf("the refusal names an account:\n%s%s", out, errOut)
	}
	if p.Creates() != 1 || p.Turns() != 0 || len(p.CredentialRequests()) != sent {
		t.Fatalf("%d creates, %d turns, %d credential requests after the refusal; want 1, 0, %d", p.Creates(), p.Turns(), len(p.CredentialRequests()), sent)
	}

	out, errOut, code = runWith(t, open, append([]string{"runs", "recover", record, "--task", "Write it.", "--profile", prof, "--json"}, db...)...)
	if rec := decode(t, out); code != 0 || member(rec, "outcome").Str() != "recovered" || member(rec, "via").Str() != "resumed" {
		t.Fatalf("runs recover with the admitted profile: exit %d\n%s%s", code, out, errOut)
	}
	if diff := cmp.Diff(seatRequests(t, contract.CredentialOnCreate, contract.CredentialOnCreate, contract.CredentialOnTurn), p.CredentialRequests()); diff != "" {
		t.Errorf("credential requests the provider received (-want +got):\n%s", diff)
	}
}
