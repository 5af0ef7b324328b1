package cli_test

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/vectors"
)

func run(t *testing.T, stdin string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	code = cli.Main(context.Background(), args, cli.IO{In: strings.NewReader(stdin), Out: &out, Err: &errb})
	return out.String(), errb.String(), code
}

func decode(t *testing.T, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, s)
	}
	return v
}

func member(v canonjson.Value, name string) canonjson.Value {
	m, _ := v.Get(name)
	return m
}

// TestCheckAgreesWithVectors runs every case of every registered vector
// kind through `agentrt check` (the interface later agreement checks use).
func TestCheckAgreesWithVectors(t *testing.T) {
	t.Parallel()
	out, _, code := run(t, "", "check", "--kinds")
	if code != 0 {
		t.Fatalf("--kinds exit %d", code)
	}
	kinds := member(decode(t, out), "kinds")
	all, err := vectors.Kinds()
	if err != nil {
		t.Fatal(err)
	}
	checked := 0
	for _, kv := range kinds.Items() {
		kind := kv.Str()
		if !contains(all, kind) || vectors.Informative(kind) {
			continue // agentrt's own kinds, or kinds whose vectors the seeds override
		}
		k, err := vectors.Load(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range k.Cases {
			if _, ok := vectors.Deviation(kind, c.Name); ok {
				continue
			}
			out, errOut, code := run(t, string(c.Raw()), "check", "--kind", kind, "-")
			res := decode(t, out)
			valid := member(res, "valid").Bool()
			if valid != c.Valid || (code == 0) != c.Valid || (code != 0 && code != 1) {
				t.Errorf("%s/%s: valid=%v exit=%d, want valid=%v (%s)", kind, c.Name, valid, code, c.Valid, errOut)
				continue
			}
			if c.Canonical != "" && (member(res, "canonical").Str() != c.Canonical || member(res, "digest").Str() != c.Digest) {
				t.Errorf("%s/%s: canonical/digest differ:\n%s", kind, c.Name, out)
			}
			if c.ProfileDigest != "" && member(res, "profileDigest").Str() != c.ProfileDigest {
				t.Errorf("%s/%s: profileDigest differs: %s", kind, c.Name, out)
			}
			if c.ProfileDigestError != "" && !member(res, "profileDigestError").IsValid() {
				t.Errorf("%s/%s: want profileDigestError: %s", kind, c.Name, out)
			}
			if !c.Valid {
				matched := len(c.Issues) == 0
				for _, is := range member(res, "issues").Items() {
					for _, w := range c.Issues {
						if vectors.PathMatches(member(is, "path").Str(), w.Path) {
							matched = true
						}
					}
				}
				if !matched {
					t.Errorf("%s/%s: no issue at the reference's paths: %s", kind, c.Name, out)
				}
			}
			checked++
		}
	}
	if checked < 500 {
		t.Fatalf("only %d cases checked through the CLI", checked)
	}
}

func contains(xs []string, x string) bool {
	for _, s := range xs {
		if s == x {
			return true
		}
	}
	return false
}

func TestCheckFunctionsAgreeWithVectors(t *testing.T) {
	out, _, _ := run(t, "", "check", "--kinds")
	for _, fv := range member(decode(t, out), "functions").Items() {
		name := fv.Str()
		cases, err := vectors.LoadFunction(name)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range cases {
			args := canonjson.Marshal(canonjson.ArrayValue(c.Args))
			out, errOut, code := run(t, string(args), "check", "--function", name)
			if code != 0 {
				t.Errorf("%s(%s): exit %d: %s", name, args, code, errOut)
				continue
			}
			want, ok := c.Expect.Get("result")
			got := member(decode(t, out), "result")
			if !ok { // {"ok","errors"} verdicts (validateInteractionResponse) compare on ok
				want, _ = c.Expect.Get("ok")
				got = member(got, "ok")
			}
			if !canonjson.Equal(got, want) {
				t.Errorf("%s(%s) = %s, want %s", name, args, canonjson.Marshal(got), canonjson.Marshal(want))
			}
		}
	}
}

func TestExitCodes(t *testing.T) {
	dir := t.TempDir()
	good := filepath.Join(dir, "good.json")
	os.WriteFile(good, []byte(`{"name":"x"}`), 0o644)
	tests := []struct {
		name string
		in   string
		args []string
		code int
	}{
		{"valid", "", []string{"check", "--kind", "AgentProfile", good}, 0},
		{"refused", `{"name":1}`, []string{"check", "--kind", "AgentProfile", "-"}, 1},
		{"bad json", `{`, []string{"check", "--kind", "AgentProfile"}, 1},
		{"unknown kind", "", []string{"check", "--kind", "Nope", good}, 2},
		{"unknown function", "[]", []string{"check", "--function", "nope"}, 2},
		{"both", "", []string{"check", "--kind", "AgentProfile", "--function", "x"}, 2},
		{"function arity", "[]", []string{"check", "--function", "modelProvider"}, 2},
		{"unknown flag", "", []string{"profile", "validate", "--nope", good}, 2},
		{"unknown command", "", []string{"nope"}, 2},
		{"missing file", "", []string{"profile", "validate", filepath.Join(dir, "missing.json")}, 2},
		{"validate ok", "", []string{"profile", "validate", good}, 0},
		{"validate refused", `{"tools":{"a":1}}`, []string{"profile", "validate", "-"}, 1},
		{"project missing stage", "", []string{"profile", "project", good, "--stage", "1"}, 2},
	}
	for _, tc := range tests {
		_, errOut, code := run(t, tc.in, tc.args...)
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d (%s)", tc.name, code, tc.code, errOut)
		}
	}
}

func TestProfileCommands(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "profiles", "research-seats.json")
	out, _, code := run(t, "", "profile", "measure", "--json", example)
	if code != 0 {
		t.Fatalf("measure exit %d", code)
	}
	m := decode(t, out)
	var keys []string
	for _, mem := range m.Members() {
		keys = append(keys, mem.Name)
	}
	// spec/profile.md §D: exactly the AgentProfileMeasurements members.
	if got := strings.Join(keys, ","); got != "basis,canonicalBytes,coverage,mcp,profileDigest,prompt,resources,subagents,tools,version" {
		t.Errorf("measure --json members %s", got)
	}
	digestOut, _, _ := run(t, "", "profile", "digest", example)
	if strings.TrimSpace(digestOut) != member(m, "profileDigest").Str() {
		t.Errorf("digest %q vs measure %q", digestOut, member(m, "profileDigest").Str())
	}
	// The human output never prints prompt or resource text.
	human, _, _ := run(t, "", "profile", "measure", example)
	if strings.Contains(human, "Continue the research") || strings.Contains(human, "Start here") {
		t.Errorf("measure output leaks text:\n%s", human)
	}
	proj, _, code := run(t, "", "profile", "project", example, "--stage", "1", "--json")
	if code != 0 {
		t.Fatalf("project exit %d", code)
	}
	pv := decode(t, proj)
	if _, ok := pv.Get("seats"); ok || member(pv, "harness").Str() != "codex" {
		t.Errorf("project --stage 1: %s", proj)
	}
	if _, ok := pv.Get("permissions"); ok {
		t.Errorf("an empty stage map must remove permissions: %s", proj)
	}
	// The projection is itself a valid profile.
	if _, _, code := run(t, proj, "profile", "validate", "-"); code != 0 {
		t.Errorf("projection does not validate")
	}
}

func TestProfileKB(t *testing.T) {
	example := filepath.Join("..", "..", "examples", "profiles", "claude-worker.json")
	once, _, code := run(t, "", "profile", "kb", "--json", example)
	if code != 0 {
		t.Fatalf("kb exit %d", code)
	}
	v := decode(t, once)
	appended, _ := canonjson.Resolve(v, "/prompt/appendSystemPrompt")
	if !strings.HasPrefix(appended.Str(), `<profile-guidance source="harness" id="claude-code">`) ||
		!strings.HasSuffix(appended.Str(), "\n\nCite the file you read.") {
		t.Errorf("composed appendSystemPrompt %q", appended.Str())
	}
	// Composing the composed profile again changes nothing (KB-15).
	twice, _, code := run(t, once, "profile", "kb", "--json", "-")
	if code != 0 || twice != once {
		t.Errorf("recomposition is not stable:\n%s\n%s", once, twice)
	}
	// An executor override moves guidance to instructions for codex (KB-14, KB-16).
	codex, _, _ := run(t, once, "profile", "kb", "--json", "--harness", "codex", "-")
	cv := decode(t, codex)
	if a, _ := canonjson.Resolve(cv, "/prompt/appendSystemPrompt"); a.Str() != "Cite the file you read." {
		t.Errorf("codex appendSystemPrompt %q", a.Str())
	}
	if h, _ := canonjson.Resolve(cv, "/harness"); h.Str() != "claude-code" {
		t.Errorf("the profile's own harness changed to %q", h.Str())
	}
}
