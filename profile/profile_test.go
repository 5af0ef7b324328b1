package profile_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

func mustParse(t *testing.T, s string) *profile.Profile {
	t.Helper()
	p, err := profile.Parse([]byte(s))
	if err != nil {
		t.Fatalf("Parse(%s): %v", s, err)
	}
	return p
}

func mustDigest(t *testing.T, p *profile.Profile) string {
	t.Helper()
	d, err := profile.Digest(p)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// issuePaths returns the paths of a refusal, failing t if err is not a
// *schema.Error.
func issuePaths(t *testing.T, err error) []string {
	t.Helper()
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v (%T), want *schema.Error", err, err)
	}
	var paths []string
	for _, is := range se.Issues {
		paths = append(paths, is.Path)
	}
	return paths
}

func hasPath(paths []string, want string) bool {
	for _, p := range paths {
		if p == want {
			return true
		}
	}
	return false
}

type verdictCase struct {
	id, in string
	valid  bool
	path   string // for refusals: a path that must be reported ("-" = any)
}

func runVerdicts(t *testing.T, cases []verdictCase) {
	t.Helper()
	for _, tc := range cases {
		_, err := profile.Parse([]byte(tc.in))
		if tc.valid {
			if err != nil {
				t.Errorf("%s: refused %s: %v", tc.id, tc.in, err)
			}
			continue
		}
		if err == nil {
			t.Errorf("%s: accepted %s", tc.id, tc.in)
			continue
		}
		if paths := issuePaths(t, err); tc.path != "-" && !hasPath(paths, tc.path) {
			t.Errorf("%s: issues at %q, want one at %q (%v)", tc.id, paths, tc.path, err)
		}
	}
}

// spec/profile.md "Profile shape" P01–P23.
func TestProfileShape(t *testing.T) {
	runVerdicts(t, []verdictCase{
		{"P01", `{}`, true, ""},
		{"P02", `{"name":null}`, false, "/name"},
		{"P03", `{"nam":"x"}`, false, ""},
		{"P04", `{"prompt":{"systemPrompt":"a","appendSystemPrompt":"b"}}`, true, ""},
		{"P05", `{"prompt":{"instructions":"x"}}`, false, "/prompt/instructions"},
		{"P06", `{"model":{"maxTotalOutputTokens":100,"maxVisibleOutputTokens":101}}`, false, "/model/maxVisibleOutputTokens"},
		{"P06b", `{"model":{"maxTotalOutputTokens":100,"maxReasoningTokens":101}}`, false, "/model/maxReasoningTokens"},
		{"P07", `{"model":{"maxTotalOutputTokens":100,"maxReasoningTokens":100}}`, true, ""},
		{"P08a", `{"model":{"maxReasoningTokens":0}}`, false, "/model/maxReasoningTokens"},
		{"P08b", `{"model":{"maxReasoningTokens":1.5}}`, false, "/model/maxReasoningTokens"},
		{"P08c", `{"model":{"maxReasoningTokens":-0}}`, false, "/model/maxReasoningTokens"},
		{"P09", `{"model":{"maxReasoningTokens":9007199254740992}}`, false, "/model/maxReasoningTokens"},
		{"P10", `{"model":{"maxReasoningTokens":100.0}}`, true, ""},
		{"P11", `{"model":{"reasoningEffort":"max"}}`, false, "/model/reasoningEffort"},
		{"P12", `{"harness":"claude"}`, false, "/harness"},
		{"P13", `{"tools":{"Bash":"yes"}}`, false, "/tools/Bash"},
		{"P14a", `{"permissions":{"edit":{"*.md":"allow","*":"deny"},"bash":"ask"}}`, true, ""},
		{"P14b", `{"permissions":{"edit":"maybe"}}`, false, "/permissions/edit"},
		{"P15", `{"resources":{"files":[{"path":"a","resource":{"kind":"inline","name":"n"}}]}}`, false, "/resources/files/0/resource"},
		{"P16", `{"resources":{"skills":[{"kind":"github","path":"s/SKILL.md","sha":"x"}]}}`, false, "/resources/skills/0"},
		{"P17a", `{"extensions":{"codex":null}}`, false, "/extensions/codex"},
		{"P17b", `{"extensions":{"codex":{"x":null}}}`, true, ""},
		{"P18", `{"metadata":{"__proto__":{"a":1}}}`, true, ""},
		{"P19", `{"tools":{"\ud800":true}}`, false, "/tools/\xed\xa0\x80"},
		{"P20", `{"metadata":{"x":{"\udc00y":1}}}`, false, "/metadata/x/\xed\xb0\x80y"},
		{"P23", `{"connections":[{"connectionId":"c","capabilities":[]}]}`, false, "/connections/0/capabilities"},
		{"dup", `{"name":"a","name":"b"}`, false, "/name"},
		{"trailing", `{} x`, false, ""},
		{"bad utf8", "{\"name\":\"\xff\"}", false, "/name"},
		{"capability-shaped", `{"id":"x","definition":{}}`, false, ""},
	})
}

// P21/P22: valid profiles the reference refuses to digest.
func TestDigestRefusesNonCanonicalValues(t *testing.T) {
	for _, in := range []string{`{"metadata":{"s":"\ud800"}}`, `{"metadata":{"x":1e400}}`, `{"name":"a\ud800b"}`} {
		p := mustParse(t, in)
		if _, err := profile.Digest(p); !errors.Is(err, profile.ErrNotCanonical) {
			t.Errorf("Digest(%s) err = %v, want ErrNotCanonical", in, err)
		}
		var ce *canonjson.CanonicalError
		if _, err := profile.Digest(p); !errors.As(err, &ce) || ce.Pointer == "" {
			t.Errorf("Digest(%s) err = %v, want a CanonicalError with a pointer", in, err)
		}
	}
}

// spec/profile.md §C.3 worked digests through the profile API.
func TestWorkedProfileDigests(t *testing.T) {
	tests := map[string]string{
		`{}`: "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a",
		`{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`: "sha256:238e9708212a6adfd323413460efe68b6cbd8ad5df3a8ac6b4826e25232cb161",
		`{"metadata":{"__proto__":{"a":1}}}`:       "sha256:d37c9aa364bc9f62c87df55a3daea91e97699aeb2f47da994ef481e65cc4ff54",
		`{"model":{"maxReasoningTokens":1E2}}`:     "sha256:e7a648180594043abfef4323d043886c6f15c2f21f1858e71d7f8966753b280e",
		`{"metadata":{"a":null}}`:                  "sha256:e7058fdf5e4a4c7b1b62600c1c7312c432cd8e502c7ee0664fa3f2f3d9bc4958",
		`{"tools":{"b":true,"10":false,"2":true}}`: "sha256:77649f800d88c8182bb4cf5ecdd9460447d40c85ced47ea538e3acf1cb920bc0",
		`{"name":"x","tools":{"Bash":true}}`:       "sha256:6294dd4f059eebd323191d89a872775d2c8fc447bce3b588133431bb36258118",
	}
	for in, want := range tests {
		if got := mustDigest(t, mustParse(t, in)); got != want {
			t.Errorf("Digest(%s) = %s, want %s", in, got, want)
		}
	}
	// The same profile built in Go has the same identity (PRF-20).
	built := &profile.Profile{
		Name:    profile.Ptr("note-writer"),
		Harness: "cli-base",
		Model:   &profile.ModelHints{Provider: profile.Ptr("scripted"), Default: profile.Ptr("scripted/note-writer")},
	}
	if got := mustDigest(t, built); got != "sha256:238e9708212a6adfd323413460efe68b6cbd8ad5df3a8ac6b4826e25232cb161" {
		t.Errorf("Go-built quickstart profile digest %s", got)
	}
	// Presence matters: {} is not absent (spec §C.4).
	if mustDigest(t, &profile.Profile{Tools: map[string]bool{}}) == mustDigest(t, &profile.Profile{}) {
		t.Error("tools:{} and no tools share a digest")
	}
}

// spec/profile.md M01–M14.
func TestMCPAndConfigValues(t *testing.T) {
	local := func(extra string) string { return `{"mcp":{"x":{"command":"node"` + extra + `}}}` }
	remote := func(url string) string { return `{"mcp":{"x":{"url":"` + url + `"}}}` }
	env := func(key, value string) string { return local(`,"env":{"` + key + `":` + value + `}`) }
	public := func(v string) string { return local(`,"args":[{"kind":"public","value":"` + v + `"}]`) }
	runVerdicts(t, []verdictCase{
		{"M01", `{"mcp":{"fs":{"command":"npx","args":[{"kind":"public","value":"-y"}]}}}`, true, ""},
		{"M02a", `{"mcp":{"x":{"command":"bash"}}}`, false, "/mcp/x/command"},
		{"M02b", `{"mcp":{"x":{"command":"/bin/SH"}}}`, false, "/mcp/x/command"},
		{"M02c", `{"mcp":{"x":{"command":"PowerShell"}}}`, false, "/mcp/x/command"},
		{"M03a", `{"mcp":{"x":{"command":"./bin/srv"}}}`, false, "/mcp/x/command"},
		{"M03b", `{"mcp":{"x":{"command":"a//b"}}}`, false, "/mcp/x/command"},
		{"M03c", `{"mcp":{"x":{"command":"a b"}}}`, false, "/mcp/x/command"},
		{"M03d", `{"mcp":{"x":{"command":"/usr/bin/node"}}}`, true, ""},
		{"M03e", `{"mcp":{"x":{"command":"   "}}}`, false, "/mcp/x/command"},
		{"M04", `{"mcp":{"x":{"command":"node","url":"https://a"}}}`, false, "/mcp/x"},
		{"M05a", remote("ftp://a"), false, "/mcp/x/url"},
		{"M05b", remote("https://u:p@a"), false, "/mcp/x/url"},
		{"M05c", remote("https://a/?api_key=1"), false, "/mcp/x/url"},
		{"M05d", remote("https://a/?page=1"), true, ""},
		{"M05e", remote("HTTPS://a"), true, ""},
		{"M05f", remote("https:a"), true, ""},
		{"M05g", remote("/relative"), false, "/mcp/x/url"},
		{"M05h", remote("https://a/?x=1&access%5Fkey=2"), false, "/mcp/x/url"},
		{"M06", `{"mcp":{"x":{"url":"https://a","env":{}}}}`, false, "/mcp/x"},
		{"M07a", `{"mcp":{"x":{"enabled":false,"url":"https://a"}}}`, false, "/mcp/x"},
		{"M07b", `{"mcp":{"x":{"enabled":false}}}`, true, ""},
		{"M07c", `{"mcp":{"x":{"command":"node","enabled":true}}}`, true, ""},
		{"M08a", env("API_TOKEN", `{"kind":"public","value":"abc"}`), false, "/mcp/x/env/API_TOKEN"},
		{"M08b", env("API_TOKEN", `{"kind":"secret-ref","key":"openai"}`), true, ""},
		{"M09", env("1BAD", `{"kind":"secret-ref","key":"k"}`), false, "/mcp/x/env/1BAD"},
		{"M10a", `{"mcp":{"x":{"url":"https://a","headers":{"Authorization":{"kind":"secret-ref","key":"gh","format":"bearer"}}}}}`, true, ""},
		{"M10b", `{"mcp":{"x":{"url":"https://a","headers":{"Bad Header":{"kind":"secret-ref","key":"gh"}}}}}`, false, "/mcp/x/headers/Bad Header"},
		{"M11a", public("Bearer abc"), false, "/mcp/x/args/0/value"},
		{"M11b", public("sk-abcdefghijkl"), false, "/mcp/x/args/0/value"},
		{"M11c", public("ghp_abcdefghijkl"), false, "/mcp/x/args/0/value"},
		{"M11d", public("AKIAABCDEFGHIJKLMNOP"), false, "/mcp/x/args/0/value"},
		{"M11e", public("-----BEGIN RSA PRIVATE KEY-----"), false, "/mcp/x/args/0/value"},
		{"M11f", public("postgres://user:pw@db/x"), false, "/mcp/x/args/0/value"},
		{"M11g", public("risk-assessment-tool"), true, ""},
		{"M12", public(`Bearer\u00a0abc`), false, "/mcp/x/args/0/value"},
		{"M12b", public(`Bearer\u0085abc`), true, ""},
		{"M13a", local(`,"cwd":".git/hooks"`), false, "/mcp/x/cwd"},
		{"M13b", local(`,"cwd":"."`), true, ""},
		{"M13c", local(`,"cwd":"a/../b"`), false, "/mcp/x/cwd"},
		{"M14a", env("K", `{"kind":"secret-ref","key":"   "}`), false, "/mcp/x/env/K/key"},
		{"M14b", env("K", `{"kind":"secret-ref","key":"`+strings.Repeat("k", 501)+`"}`), false, "/mcp/x/env/K/key"},
		{"M14c", env("K", `{"kind":"secret-ref","key":"`+strings.Repeat("k", 500)+`"}`), true, ""},
		// Inside an MCP server union a bad discriminator fails every
		// variant, so the reference reports the server; inside a hook it
		// reports the discriminator.
		{"kind-mcp", env("K", `{"kind":"private","value":"x"}`), false, "/mcp/x"},
		{"kind-hook", `{"hooks":{"pre":[{"command":"x","env":{"K":{"kind":"private","value":"x"}}}]}}`, false, "/hooks/pre/0/env/K/kind"},
	})
}

// spec/profile.md N01–N02, R01; fn vectors cover more in security_test.go.
func TestNamePredicates(t *testing.T) {
	for name, want := range map[string]bool{
		"API_KEY": true, "apikey": true, "x-api-key": true, "OPENAI_API_KEY": true, "MY_TOKEN_FILE": true,
		"Authorization": true, "github_pat": true, "db-dsn": true,
		"path": false, "TOKENIZER": false, "secretary": false, "keypad": false,
		"api_\u212aey": false, "\u017fecret": false,
	} {
		if got := profile.IsCredentialBearingProfileConfigName(name); got != want {
			t.Errorf("IsCredentialBearingProfileConfigName(%q) = %v", name, got)
		}
	}
	for name, want := range map[string]bool{
		"path": true, "Path": true, "DYLD_INSERT_LIBRARIES": true, "git_config_global": true, "FOO_PROXY": true,
		"SSLKEYLOGFILE": true, "PROXY": false, "GIT_CONFIG": false, "MY_HOME": false, "NODE_ENV": false,
	} {
		if got := profile.IsRuntimeProcessControlEnvironmentName(name); got != want {
			t.Errorf("IsRuntimeProcessControlEnvironmentName(%q) = %v", name, got)
		}
	}
}

const e5 = `{"harness":"claude-code",
 "model":{"default":"anthropic/claude-opus-5-5","provider":"anthropic","reasoningEffort":"high"},
 "prompt":{"systemPrompt":"Continue the research."},
 "seats":[{"harness":"claude-code","provider":"anthropic","model":"anthropic/claude-opus-5-5","selector":{"kind":"all-eligible"}},
          {"harness":"codex","provider":"openai","model":"openai/gpt-6-sol","selector":{"kind":"seat","id":"codex-second"}}]}`

const seatMaps = `{"harness":"claude-code",
 "model":{"default":"anthropic/claude-opus-5-5","provider":"anthropic"},
 "tools":{"Bash":true,"Write":true},
 "seats":[{"harness":"claude-code","provider":"anthropic","model":"anthropic/claude-opus-5-5","selector":{"kind":"all-eligible"},"tools":{"Bash":true,"Write":true}},
          {"harness":"codex","provider":"openai","model":"openai/gpt-6-sol","selector":{"kind":"seat","id":"codex-second"},"tools":{},"permissions":{}}]}`

func replaceOnce(t *testing.T, s, old, new string) string {
	t.Helper()
	if !strings.Contains(s, old) {
		t.Fatalf("fixture lacks %q", old)
	}
	return strings.Replace(s, old, new, 1)
}

// spec/profile.md S01–S16; checklist PRF-01..PRF-06, PRF-14.
func TestSeats(t *testing.T) {
	if got := mustDigest(t, mustParse(t, e5)); got != "sha256:e1c82ea0605e48625df6468de9f923004c20dad4f70eea83a3b12b1fcca0bbec" {
		t.Errorf("S01 digest %s", got)
	}
	canonical, _ := profile.Canonical(mustParse(t, e5))
	if len(canonical) != 416 {
		t.Errorf("S01 canonical bytes %d, want 416", len(canonical))
	}
	noneSeat := `{"harness":"claude-code","model":{"provider":"anthropic","default":"anthropic/claude-opus-5-5","reasoningEffort":"none"}}`
	withNEL := `{"harness":"claude-code","model":{"default":"anthropic/claude-opus-5-5\u0085","provider":"anthropic"},
		"seats":[{"harness":"claude-code","provider":"anthropic","model":"anthropic/claude-opus-5-5\u0085","selector":{"kind":"all-eligible"}}]}`
	runVerdicts(t, []verdictCase{
		{"S02", replaceOnce(t, e5, `"seats":[`, `"seats":[],"x":[`), false, "-"},
		{"S02b", `{"seats":[]}`, false, "/seats"},
		{"S03", replaceOnce(t, e5, `{"harness":"claude-code",`, `{"harness":"codex",`), false, "/seats/0"},
		{"S04", replaceOnce(t, e5, `"default":"anthropic/claude-opus-5-5"`, `"default":"anthropic/claude-sonnet-5-5"`), false, "/seats/0"},
		{"S05", replaceOnce(t, e5, `{"harness":"claude-code",`, `{`), false, "/seats/0"},
		{"S05b", replaceOnce(t, e5, `"provider":"anthropic","reasoningEffort"`, `"reasoningEffort"`), false, "/seats/0"},
		{"S06", replaceOnce(t, e5, `"provider":"openai"`, `"provider":"OpenAI"`), false, "/seats/1/provider"},
		{"S07a", replaceOnce(t, e5, `"model":"openai/gpt-6-sol"`, `"model":" openai/gpt-6-sol"`), false, "/seats/1/model"},
		{"S07b", withNEL, true, ""},
		{"S07c", strings.ReplaceAll(withNEL, `\u0085`, `\ufeff`), false, "/seats/0/model"},
		{"S08", replaceOnce(t, e5, `"harness":"codex","provider":"openai"`, `"harness":"codex","provider":"anthropic"`), false, "/seats/1/provider"},
		{"S09", replaceOnce(t, e5, `{"harness":"codex","provider":"openai"`, `{"harness":"claude-code","provider":"openai"`), false, "/seats/1/model"},
		{"S10", replaceOnce(t, e5, `{"harness":"codex","provider":"openai"`, `{"harness":"nanoclaw","provider":"openai"`), false, "/seats/1/harness"},
		{"S11", replaceOnce(t, e5, `"systemPrompt":"Continue the research."`, `"appendSystemPrompt":"extra"`), false, "/seats/1/harness"},
		{"S12a", noneSeat, true, ""},
		{"S12b", replaceOnce(t, noneSeat, `"none"}`, `"none"},"seats":[{"harness":"claude-code","provider":"anthropic","model":"anthropic/claude-opus-5-5","selector":{"kind":"all-eligible"}}]`), false, "/seats/0/harness"},
		{"S13a", replaceOnce(t, e5, `{"harness":"codex","provider":"openai","model":"openai/gpt-6-sol"`, `{"harness":"pi","provider":"anthropic","model":"anthropic/claude-opus-5-5"`), false, "/seats/1/model"},
		{"S13b", replaceOnce(t, replaceOnce(t, e5, `{"harness":"codex","provider":"openai","model":"openai/gpt-6-sol"`, `{"harness":"pi","provider":"anthropic","model":"anthropic/claude-opus-5-5"`), `,"reasoningEffort":"high"`, ``), true, ""},
		{"S14a", replaceOnce(t, e5, `{"kind":"seat","id":"codex-second"}`, `{"kind":"seat"}`), false, "/seats/1/selector/id"},
		{"S14b", replaceOnce(t, e5, `{"kind":"seat","id":"codex-second"}`, `{"kind":"seat","id":" a"}`), false, "/seats/1/selector/id"},
		{"S14c", replaceOnce(t, e5, `{"kind":"seat","id":"codex-second"}`, `{"kind":"all-eligible","id":"a"}`), false, "/seats/1/selector"},
		{"S14d", replaceOnce(t, e5, `{"kind":"seat","id":"codex-second"}`, `{"kind":"any"}`), false, "/seats/1/selector/kind"},
		{"S16a", seatMaps, true, ""},
		{"S16b", replaceOnce(t, seatMaps, `"selector":{"kind":"all-eligible"},"tools":{"Bash":true,"Write":true}`, `"selector":{"kind":"all-eligible"},"tools":{}`), false, "/seats/0/tools"},
		{"S16c", replaceOnce(t, seatMaps, `"tools":{},"permissions":{}`, `"tools":{"Bash":true}`), true, ""},
		{"S16d", replaceOnce(t, seatMaps, `"selector":{"kind":"all-eligible"},"tools":{"Bash":true,"Write":true}`, `"selector":{"kind":"all-eligible"},"tools":{"Write":true,"Bash":true}`), true, ""},
		{"S16e", replaceOnce(t, seatMaps, `"selector":{"kind":"all-eligible"},"tools":{"Bash":true,"Write":true}`, `"selector":{"kind":"all-eligible"},"tools":{"Bash":true,"Write":true},"permissions":{}`), false, "/seats/0/permissions"},
		{"PRF-02", replaceOnce(t, e5, `,"selector":{"kind":"all-eligible"}}`, `}`), false, "/seats/0/selector"},
	})
	s15 := `{"harness":"codex","model":{"provider":"openai","default":"gpt-6-sol"},"seats":[{"harness":"codex","provider":"openai","model":"gpt-6-sol","selector":{"kind":"all-eligible"}}]}`
	if got := mustDigest(t, mustParse(t, s15)); got != "sha256:ace2c1aa00be3a322c63f08eeed163169136397696a289377de38bbaa659d650" {
		t.Errorf("S15 digest %s", got)
	}
	if got := mustDigest(t, mustParse(t, seatMaps)); got != "sha256:66689efa826edb8df9fc8a7ff73b42542535d4568200eddaf6b0cb19f9a0dc70" {
		t.Errorf("S16 digest %s", got)
	}
	// PRF-01: stage order is identity.
	swapped := mustParse(t, e5)
	swapped.Seats[0], swapped.Seats[1] = swapped.Seats[1], swapped.Seats[0]
	if err := swapped.Validate(); err == nil {
		t.Error("reordered chain whose first stage differs from the top level was accepted")
	}
}

// spec/profile.md S17 and §B.3; checklist PRF-09, PRF-10, PRF-12, PRF-13.
func TestProject(t *testing.T) {
	authored := mustParse(t, seatMaps)
	authoredDigest := mustDigest(t, authored)

	stage1, err := profile.Project(authored, 1)
	if err != nil {
		t.Fatal(err)
	}
	canonical, _ := profile.Canonical(stage1)
	if string(canonical) != `{"harness":"codex","model":{"default":"openai/gpt-6-sol","provider":"openai"}}` {
		t.Errorf("stage 1 projection %s", canonical)
	}
	if got := mustDigest(t, stage1); got != "sha256:7c036bd8c104ff99b2da1297a1a91071925406629f64cba4a6a9e7ee31f89495" {
		t.Errorf("stage 1 digest %s", got)
	}
	stage0, err := profile.Project(authored, 0)
	if err != nil {
		t.Fatal(err)
	}
	if got := mustDigest(t, stage0); got != "sha256:e7d9a4d288233cfabdf3d489d40400b2ac0d15b1b498cbd1c30d9e1413459349" {
		t.Errorf("stage 0 digest %s", got)
	}
	if stage0.Seats != nil || stage0.Tools == nil {
		t.Errorf("stage 0 projection: seats %v, tools %v", stage0.Seats, stage0.Tools)
	}
	// The authored profile keeps its identity.
	if got := mustDigest(t, authored); got != authoredDigest {
		t.Error("Project changed the authored profile")
	}
	// Other model hints survive; a non-empty stage map replaces wholesale.
	p := mustParse(t, replaceOnce(t, e5, `"selector":{"kind":"seat","id":"codex-second"}`, `"selector":{"kind":"seat","id":"codex-second"},"tools":{"Read":true}`))
	proj, err := profile.Project(p, 1)
	if err != nil {
		t.Fatal(err)
	}
	if proj.Harness != "codex" || *proj.Model.Default != "openai/gpt-6-sol" || *proj.Model.Provider != "openai" ||
		proj.Model.ReasoningEffort != "high" || len(proj.Tools) != 1 || !proj.Tools["Read"] || *proj.Prompt.SystemPrompt != "Continue the research." {
		t.Errorf("projection %+v", proj)
	}
	if _, err := profile.Project(p, 2); err == nil {
		t.Error("Project accepted a stage that does not exist")
	}
	if _, err := profile.Project(&profile.Profile{}, 0); err != nil {
		t.Errorf("Project of a profile without seats: %v", err)
	}
}

// Checklist PRF-18.
func TestRef(t *testing.T) {
	for in, ok := range map[string]bool{`"catalog/reviewer"`: true, `{"name":"x"}`: true, `3`: false, `[]`: false, `null`: false, `{"nam":1}`: false} {
		v, err := canonjson.Decode([]byte(in))
		if err != nil {
			t.Fatal(err)
		}
		out, err := schema.Run("AgentProfileRef", profile.RefSchema, v)
		if (err == nil) != ok {
			t.Errorf("%s: err %v", in, err)
			continue
		}
		if !ok {
			continue
		}
		var r profile.Ref
		if err := canonjson.FromValue(out, &r); err != nil {
			t.Fatal(err)
		}
		back, _ := canonjson.ToValue(r)
		if !canonjson.Equal(back, out) {
			t.Errorf("%s: round trip %s", in, canonjson.Marshal(back))
		}
	}
}
