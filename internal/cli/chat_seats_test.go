package cli_test

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store/sqlite"
)

// chatWith runs agentrt chat with stdin, its provider opened by open.
func chatWith(t *testing.T, open func(string, string, string, string) (contract.Provider, error), stdin string, args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	code := cli.MainWith(ctx, append([]string{"chat"}, args...), cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb}, open)
	return out.String(), errb.String(), code
}

// PRF-11, RG-07, RG-08, RG-10, RG-11 for agentrt chat: on a seated
// profile each answer walks the seat chain. The first answer's stage 0
// is refused for quota at its create and the answer moves on to stage 1
// (its projection, its credential request on create and turn); the
// answers after it go on at stage 1 — never asking stage 0 again — in
// stage 1's one environment, each new turn carrying stage 1's credential
// request. Each answer is a seated run as the session's logical node,
// its record naming every stage tried.
func TestChatMovesOnAfterQuotaRefusalAndStaysThere(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	prof := writeFile(t, "pinned.json", pinnedWriter)
	p := quotaRecorder(t, `{"accounts":{"team-a":{"exhausted":true,"retryAfterMs":60000},"team-b":{}},"turns":[{"repeat":true,"steps":[{"text":"echo: {{prompt}}"}]}]}`)
	open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
	out, errOut, code := chatWith(t, open, "one\ntwo\nthree\n", "--json", "--db", db, prof)
	if code != 0 {
		t.Fatalf("chat: exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 3 {
		t.Fatalf("%d answers; want 3\n%s", len(lines), out)
	}
	var texts, envs, modes []string
	for _, l := range lines {
		texts = append(texts, member(l, "text").Str())
		envs = append(envs, member(l, "environmentId").Str())
		modes = append(modes, member(l, "continuation").Str())
	}
	if diff := cmp.Diff([]string{"echo: one", "echo: two", "echo: three"}, texts); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if envs[0] == "" || envs[1] != envs[0] || envs[2] != envs[0] {
		t.Errorf("environments %v; want stage 1's one environment for every answer", envs)
	}
	if diff := cmp.Diff([]string{"first", "native", "native"}, modes); diff != "" {
		t.Errorf("continuation (-want +got):\n%s", diff)
	}
	want := stageCredentials(t, 0, contract.CredentialOnCreate, 1, contract.CredentialOnCreate, 1, contract.CredentialOnTurn,
		1, contract.CredentialOnTurn, 1, contract.CredentialOnTurn)
	if diff := cmp.Diff(want, p.CredentialRequests()); diff != "" {
		t.Errorf("credential requests the provider received (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]*profile.Profile{projected(t, pinnedWriter, 0), projected(t, pinnedWriter, 1)}, p.created()); diff != "" {
		t.Errorf("profiles the provider was asked to create (-want +got):\n%s", diff)
	}
	for _, w := range []string{"turn 1: stage 0 (scripted/first on scripted) quota-refused (retry after 1m0s)", "moving on to stage 1", "answered on stage 1"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not say %q:\n%s", w, errOut)
		}
	}

	s := backendSQLite(t, db)
	session := member(lines[0], "session").Str()
	for i, l := range lines {
		rec, err := kernel.ReadRun(context.Background(), s, member(l, "runId").Str())
		if err != nil || rec.Seated == nil || rec.Status != "completed" {
			t.Fatalf("answer %d's run %+v (%v); want a completed seated run", i, rec, err)
		}
		if rec.Seated.Node != kernel.SeatedNode(session) {
			t.Errorf("answer %d is node %q; want the session's %q", i, rec.Seated.Node, kernel.SeatedNode(session))
		}
		var outcomes []string
		for _, at := range rec.Seated.Stages {
			outcomes = append(outcomes, at.Outcome)
		}
		wantOutcomes := []string{kernel.StageCompleted}
		if i == 0 {
			wantOutcomes = []string{kernel.StageQuotaRefused, kernel.StageCompleted}
		}
		if diff := cmp.Diff(wantOutcomes, outcomes); diff != "" {
			t.Errorf("answer %d's stages (-want +got):\n%s", i, diff)
		}
		if last := rec.Seated.Stages[len(rec.Seated.Stages)-1]; last.Stage != 1 {
			t.Errorf("answer %d served on stage %d; want 1", i, last.Stage)
		}
	}

	// Continued by another process (--session), the session goes on at
	// stage 1, the stage that answered last: stage 0 is not asked again.
	before := len(p.CredentialRequests())
	out, errOut, code = chatWith(t, open, "four\n", "--json", "--db", db, "--session", session, prof)
	if code != 0 {
		t.Fatalf("chat --session: exit %d\n%s%s", code, out, errOut)
	}
	if got := decodeLines(t, out); len(got) != 1 || !strings.Contains(member(got[0], "text").Str(), "four") {
		t.Fatalf("continued answer %s", out)
	}
	if !strings.Contains(errOut, "continuing on stage 1") {
		t.Errorf("stderr does not say the session goes on at stage 1:\n%s", errOut)
	}
	if diff := cmp.Diff(stageCredentials(t, 1, contract.CredentialOnCreate, 1, contract.CredentialOnTurn), p.CredentialRequests()[before:]); diff != "" {
		t.Errorf("credential requests of the continued session (-want +got):\n%s", diff)
	}
}

// A stage that starts fresh after the chat moved on holds none of the
// session: it is sent the whole conversation (kernel FreshTask), never
// only the new turn. Here stage 0 answers the first turn and its quota
// runs out before the second; the second answer moves on to stage 1,
// whose fresh environment is sent the transcript.
func TestChatFreshStageIsSentTheConversation(t *testing.T) {
	t.Parallel()
	db := filepath.Join(t.TempDir(), "runs.db")
	prof := writeFile(t, "pinned.json", pinnedWriter)
	p := quotaRecorder(t, `{"accounts":{"team-a":{},"team-b":{}},"turns":[
 {"match":"/one$/","steps":[{"text":"first"}]},
 {"match":"/two$/","steps":[{"text":"part"}],"end":"quota"},
 {"repeat":true,"steps":[{"text":"echo: {{prompt}}"}]}]}`)
	open := func(string, string, string, string) (contract.Provider, error) { return p.reconnect(false), nil }
	out, errOut, code := chatWith(t, open, "one\ntwo\n", "--json", "--db", db, prof)
	if code != 0 {
		t.Fatalf("chat: exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 2 {
		t.Fatalf("%d answers; want 2\n%s", len(lines), out)
	}
	second := member(lines[1], "text").Str()
	// Stage 1 either went on natively in stage 0's session (the
	// provider proved continuity: only the new turn was sent) or started
	// fresh and was sent the conversation so far.
	switch mode := member(lines[1], "continuation").Str(); mode {
	case "native":
		if second != "echo: two" {
			t.Errorf("native continuation answered %q", second)
		}
	case "resent":
		if !strings.Contains(second, "user: one") || !strings.Contains(second, "assistant: first") {
			t.Errorf("the fresh stage was not sent the conversation: %q", second)
		}
	default:
		t.Errorf("second answer's continuation %q", mode)
	}
	if !strings.Contains(errOut, "answered on stage 1") {
		t.Errorf("stderr does not say the session moved to stage 1:\n%s", errOut)
	}
}

// backendSQLite opens the SQLite run store at db, closed with the test.
func backendSQLite(t *testing.T, db string) *sqlite.Store {
	t.Helper()
	s, err := sqlite.Open(context.Background(), db, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// PRF-11, RG-08 for agentrt chat --seats: each stage runs on the
// provider the --seats file names for it; the first answer moves on from
// stage 0's exhausted account to stage 1's provider, and the next answer
// goes on there in the same environment, sent only the new turn.
// --provider is never opened.
func TestChatSeatsFileMovesOnAndStays(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	write("alpha.json", `{"turns":[{"repeat":true,"steps":[{"text":"never"}]}],"accounts":{"team-a":{"exhausted":true}}}`)
	write("bravo.json", `{"turns":[{"repeat":true,"steps":[{"text":"echo: {{prompt}}"}]}],"accounts":{"team-b":{}}}`)
	seats := write("seats.json", `{"accounts":{"team-a":{"provider":"scripted","script":"alpha.json"}},
		"stages":{"1":{"provider":"scripted","script":"bravo.json"}}}`)
	prof := write("pinned.json", pinnedWriter)
	never := func(string, string, string, string) (contract.Provider, error) {
		t.Error("--provider was opened for a --seats chat")
		return nil, errors.New("not this provider")
	}
	out, errOut, code := chatWith(t, never, "one\ntwo\n", "--json", "--seats", seats, "--db", filepath.Join(dir, "runs.db"), prof)
	if code != 0 {
		t.Fatalf("chat --seats: exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 2 {
		t.Fatalf("%d answers; want 2\n%s", len(lines), out)
	}
	var texts, modes []string
	for _, l := range lines {
		texts, modes = append(texts, member(l, "text").Str()), append(modes, member(l, "continuation").Str())
	}
	if diff := cmp.Diff([]string{"echo: one", "echo: two"}, texts); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first", "native"}, modes); diff != "" {
		t.Errorf("continuation (-want +got):\n%s", diff)
	}
	if member(lines[0], "environmentId").Str() != member(lines[1], "environmentId").Str() {
		t.Errorf("the answers ran in environments %s and %s; want stage 1's one", member(lines[0], "environmentId").Str(), member(lines[1], "environmentId").Str())
	}
	for _, w := range []string{"from /accounts/team-a", "from /stages/1", "moving on to stage 1"} {
		if !strings.Contains(errOut, w) {
			t.Errorf("stderr does not say %q:\n%s", w, errOut)
		}
	}
	if _, _, code := chatWith(t, never, "", "--seats", seats, "--provider", "openai", prof); code != cli.ExitUsage {
		t.Errorf("chat --seats --provider: exit %d; want a usage error", code)
	}
}
