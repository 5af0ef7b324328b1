package cli_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// pinned writes a training dataset file and returns FILE@sha256:HEX.
func pinned(t *testing.T, data string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "train.json")
	putFile(t, path, []byte(data))
	sum := sha256.Sum256([]byte(data))
	return path + "@sha256:" + hex.EncodeToString(sum[:])
}

// TestImproveHelpDocumentsResumeAndTraining (§3.9): `agentrt improve
// --help` explains --resume's two modes and training mode's flags.
func TestImproveHelpDocumentsResumeAndTraining(t *testing.T) {
	out, _, code := run(t, "", "improve", "--help")
	if code != cli.ExitOK {
		t.Fatalf("exit %d", code)
	}
	for _, want := range []string{"--resume", "if-compatible", "required", "restarted", "--mode", "--training-dataset",
		"FILE@sha256:HEX", "--training-execution-ref", "held-out"} {
		if !strings.Contains(out, want) {
			t.Errorf("help lacks %q", want)
		}
	}
}

// TestImproveTrainingCommand (§3.9 training): --mode training with a
// pinned dataset runs offline and reports its receipts; bytes that are
// not the pinned ones, a malformed pin, the measured executor reused for
// training and a dataset holding a test case are refused, each saying
// what to do.
func TestImproveTrainingCommand(t *testing.T) {
	profilePath, casesPath := improveFiles(t)
	base := []string{"improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--mode", "training",
		"--training-execution-ref", "scripted:trainer"}
	good := pinned(t, `{"examples":[{"input":"good night","expected":"GOOD NIGHT"}]}`)

	out, errOut, code := run(t, "", append(base, "--training-dataset", good, "--json")...)
	if code != cli.ExitOK {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	var res struct {
		Decision   string `json:"decision"`
		Provenance struct {
			Mode     string `json:"mode"`
			Training struct {
				ExecutionRef string            `json:"executionRef"`
				Receipts     []json.RawMessage `json:"receipts"`
			} `json:"training"`
		} `json:"provenance"`
	}
	if err := json.Unmarshal([]byte(out), &res); err != nil {
		t.Fatal(err)
	}
	if res.Decision != "ship" || res.Provenance.Mode != "training" || res.Provenance.Training.ExecutionRef != "scripted:trainer" ||
		len(res.Provenance.Training.Receipts) != 1 {
		t.Errorf("result %+v", res)
	}
	out, _, code = run(t, "", append(base, "--training-dataset", good)...)
	if code != cli.ExitOK || !strings.Contains(out, "training  on scripted:trainer: 1 receipts, 1 examples") {
		t.Errorf("exit %d\n%s", code, out)
	}

	file, _, _ := strings.Cut(good, "@")
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string
	}{
		{"bytes not the pinned ones", []string{"--training-dataset", file + "@sha256:" + strings.Repeat("0", 64)}, cli.ExitFailed, "not the pinned"},
		{"malformed pin", []string{"--training-dataset", file + "@sha256:abc"}, cli.ExitUsage, "FILE@sha256:HEX"},
		{"no pin", []string{"--training-dataset", file}, cli.ExitUsage, "FILE@sha256:HEX"},
		{"measured executor", []string{"--training-dataset", good, "--execution-ref", "scripted:trainer"}, cli.ExitUsage, "--training-execution-ref"},
		{"held-out case", []string{"--training-dataset", pinned(t, `{"examples":[{"input":"see you","expected":"SEE YOU"}]}`)}, cli.ExitFailed, "held-out test cases x1"},
		{"malformed dataset", []string{"--training-dataset", pinned(t, `{"examples":[{"prompt":"x"}]}`)}, cli.ExitUsage, "--training-dataset #1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, errOut, code := run(t, "", append(base, tt.args...)...)
			if code != tt.wantCode || !strings.Contains(errOut, tt.wantErr) || strings.Contains(out, "decision") {
				t.Errorf("exit %d (want %d)\nstdout %s\nstderr %s\nwant %q", code, tt.wantCode, out, errOut, tt.wantErr)
			}
		})
	}
	if _, errOut, code := run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--training-dataset", good); code != cli.ExitUsage ||
		!strings.Contains(errOut, "--mode training") {
		t.Errorf("a dataset without training mode: exit %d %s", code, errOut)
	}
}

// TestImproveResumeCommand (§3.9 resume): a run dir of another recipe is
// kept and restarted with --resume if-compatible and refused with
// --resume required; the output says which.
func TestImproveResumeCommand(t *testing.T) {
	profilePath, casesPath := improveFiles(t)
	runDir := filepath.Join(t.TempDir(), "run")
	args := []string{"improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--run-dir", runDir}
	out, errOut, code := run(t, "", args...)
	if code != cli.ExitOK || !strings.Contains(out, "resume    fresh (if-compatible)") {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	_, errOut, code = run(t, "", append(args, "--seed", "2", "--resume", "required")...)
	if code != cli.ExitFailed || !strings.Contains(errOut, "another recipe") || !strings.Contains(errOut, "--resume if-compatible") {
		t.Errorf("required with another recipe: exit %d %s", code, errOut)
	}
	out, errOut, code = run(t, "", append(args, "--seed", "2")...)
	if code != cli.ExitOK || !strings.Contains(out, "resume    restarted (if-compatible)") || !strings.Contains(out, "improve.superseded-") {
		t.Errorf("if-compatible with another recipe: exit %d\n%s\n%s", code, out, errOut)
	}
	out, _, code = run(t, "", append(args, "--seed", "2", "--resume", "required")...)
	if code != cli.ExitOK || !strings.Contains(out, "resume    resumed (required)") {
		t.Errorf("required with its own journal: exit %d\n%s", code, out)
	}
}

// TestImproveShareOutputsScrubbed (§3.9 privacy, end to end through the
// CLI): with --share-case-bodies and --share-outputs the proposer's
// recorded prompt carries the train inputs and outputs with the key and
// the address scrubbed, and no test case. (The uppercasing candidate's
// output carries the key uppercased, which the recognizer, case-sensitive
// like the rules it mirrors, does not flag: only the exact key is
// checked absent.)
func TestImproveShareOutputsScrubbed(t *testing.T) {
	dir := t.TempDir()
	key := "sk-" + "ant-" + "api03-AbCdEfGhIjKlMnOpQrStUv"
	profilePath, casesPath, db := filepath.Join(dir, "profile.json"), filepath.Join(dir, "cases.json"), filepath.Join(dir, "runs.db")
	putFile(t, profilePath, []byte(`{"name":"echo","prompt":{"systemPrompt":"Repeat the user's words."}}`))
	putFile(t, casesPath, []byte(`{"cases":[
 {"id":"t1","input":"mail ann@example.com key `+key+`","expected":"MAIL","partition":"train"},
 {"id":"s1","input":"hello two","expected":"HELLO TWO","partition":"selection"},
 {"id":"x1","input":"see you","expected":"SEE YOU","partition":"test"}]}`))
	out, errOut, code := run(t, "", "improve", profilePath, "--scenarios", casesPath, "--judge", "exact", "--db", db,
		"--share-case-bodies", "--share-outputs")
	if code != cli.ExitOK && code != cli.ExitHold {
		t.Fatalf("exit %d\n%s\n%s", code, out, errOut)
	}
	ctx := context.Background()
	st, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	runs, err := st.ListRuns(ctx, store.ListOptions{Kind: "improve-propose"})
	if err != nil || len(runs) == 0 {
		t.Fatalf("proposer runs %d, %v", len(runs), err)
	}
	for _, r := range runs {
		rec, err := kernel.ReadRun(ctx, st, r.ID)
		if err != nil || rec.ToolLoop == nil {
			t.Fatalf("run %s: %v", r.ID, err)
		}
		user := rec.ToolLoop.User
		for _, want := range []string{"[redacted-email]", "[redacted-credential]", "[output: "} {
			if !strings.Contains(user, want) {
				t.Errorf("the proposer prompt lacks %q:\n%s", want, user)
			}
		}
		for _, never := range []string{key, "ann@example.com", "see you", "x1"} {
			if strings.Contains(user, never) {
				t.Errorf("the proposer prompt carries %q:\n%s", never, user)
			}
		}
	}
}
