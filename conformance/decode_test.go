package conformance_test

import (
	"bytes"
	"context"
	"errors"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/conformance"
)

// Read-time validation of capabilities.json (§8) reports the JSON pointer
// of the first problem.
func TestParseCapabilitiesRefusals(t *testing.T) {
	const head = `{"schemaVersion":"agentrt/conformance-capabilities/v1","capabilities":`
	for _, tc := range []struct{ doc, pointer string }{
		{`{"schemaVersion":"v0","capabilities":{}}`, "/schemaVersion"},
		{`{"schemaVersion":"agentrt/conformance-capabilities/v1"}`, ""},
		{head + `{"a":{"scenario":"","summary":"","evidence":[]}}}`, "/capabilities/a/scenario"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":null}}}`, "/capabilities/a/evidence"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[{"file":"x_test.go","cases":[]}]}}}`, "/capabilities/a/evidence/0/cases"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[{"file":"x_test.go"}]}}}`, "/capabilities/a/evidence/0"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[{"file":"../x_test.go","cases":["TestA"]}]}}}`, "/capabilities/a/evidence/0/file"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[{"file":"x.go","cases":["TestA"]}]}}}`, "/capabilities/a/evidence/0/file"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[{"file":"x_test.go","cases":["Testa"]}]}}}`, "/capabilities/a/evidence/0/cases/0"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[{"file":"x_test.go","cases":["TestA","TestA"]}]}}}`, "/capabilities/a/evidence/0/cases/1"},
		{head + `{"a":{"scenario":"s","summary":"","evidence":[],"extra":1}}}`, "/capabilities/a/extra"},
		{head + `{"A b":{"scenario":"s","summary":"","evidence":[]}}}`, "/capabilities/A b"},
		{head + `{}, "capabilities":{}}`, ""},
	} {
		_, err := conformance.ParseCapabilities([]byte(tc.doc))
		var ve *conformance.ValidationError
		if !errors.As(err, &ve) {
			t.Errorf("%s: error %v, want *ValidationError", tc.doc, err)
			continue
		}
		if tc.pointer != "" && ve.Pointer != tc.pointer {
			t.Errorf("%s: pointer %q, want %q (%v)", tc.doc, ve.Pointer, tc.pointer, ve)
		}
	}
}

// CM-12, CM-15..CM-16, CM-19, CM-26: the repository's hand-authored map
// names exactly the eight owner capabilities with the testkit scenario
// names, and every evidence file exists and declares its top-level tests.
func TestRepositoryCapabilities(t *testing.T) {
	data := readFile(t, "capabilities.json")
	m, err := conformance.ParseCapabilities(data)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"retained-run-control":                 "control-claim-accepted",
		"session-replay":                       "reconnected-replay",
		"cancellation-acknowledgement":         "stop-accepted",
		"native-continuation":                  "verified-native-continuation",
		"recursive-observation":                "observer-projection-chain",
		"cleanup-settlement":                   "cleanup-dependency-order",
		"interaction-response-acknowledgement": "same-response",
		"context-transfer":                     "accepted-transfer-receipt",
	}
	if len(m.Capabilities) != len(want) {
		t.Errorf("keys %v, want the eight of §8", m.Keys())
	}
	for k, s := range want {
		if got := m.Capabilities[k].Scenario; got != s {
			t.Errorf("%s: scenario %q, want %q", k, got, s)
		}
	}
	for _, k := range m.Keys() {
		for _, e := range m.Capabilities[k].Evidence {
			src := readFile(t, filepath.Join(repoRoot(t), filepath.FromSlash(e.File)))
			for _, c := range e.Cases {
				top, _, _ := strings.Cut(c, "/")
				if !bytes.Contains(src, []byte("func "+top+"(t *testing.T)")) {
					t.Errorf("%s: %s does not declare %s", k, e.File, top)
				}
			}
		}
	}
}

// CM-06..CM-08: release/cohort.json validates, each pin carries a version
// and its full commit, and the cohort check rejects a report that
// disagrees with a pin.
func TestCohortPins(t *testing.T) {
	if _, err := conformance.ParseCohortPins(readFile(t, filepath.Join(repoRoot(t), "release", "cohort.json"))); err != nil {
		t.Fatalf("release/cohort.json: %v", err)
	}
	const commit = "8a89bd6388cc0123456789abcdef0123456789ab"
	pinsDoc := `{"schemaVersion":"agentrt/release-cohort/v1","modules":[` +
		`{"path":"golang.org/x/mod","version":"v0.42.0","commit":"` + commit + `"},` +
		`{"path":"google.golang.org/genproto/googleapis/api","version":"v0.0.0-20260928230214-8a89bd6388cc","commit":"` + commit + `"}]}`
	pins, err := conformance.ParseCohortPins([]byte(pinsDoc))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ doc, pointer string }{
		{strings.Replace(pinsDoc, commit, "8a89bd6388cc", 1), "/modules/0/commit"},
		{strings.Replace(pinsDoc, `"commit":"`+commit+`"}]`, `"commit":"`+strings.Repeat("f", 40)+`"}]`, 1), "/modules/1/commit"},
		{strings.Replace(pinsDoc, "v0.42.0", "0.42", 1), "/modules/0/version"},
		{strings.Replace(pinsDoc, "google.golang.org/genproto/googleapis/api", "golang.org/x/mod", 1), "/modules/1/path"},
		{strings.Replace(pinsDoc, "release-cohort/v1", "release-cohort/v2", 1), "/schemaVersion"},
	} {
		_, err := conformance.ParseCohortPins([]byte(tc.doc))
		var ve *conformance.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != tc.pointer {
			t.Errorf("%s: %v, want a problem at %s", tc.doc, err, tc.pointer)
		}
	}
	report := []conformance.CohortModule{
		{Path: "golang.org/x/mod", Version: "v0.42.0", Sum: "h1:x", Commit: commit},
		{Path: "google.golang.org/genproto/googleapis/api", Version: "v0.0.0-20260928230214-8a89bd6388cc", Sum: "h1:y"},
	}
	if errs := conformance.CheckCohort(pins, report); len(errs) != 0 {
		t.Fatalf("matching report refused: %v", errs)
	}
	edited := func(f func([]conformance.CohortModule)) []conformance.CohortModule {
		r := append([]conformance.CohortModule(nil), report...)
		f(r)
		return r
	}
	for name, r := range map[string][]conformance.CohortModule{
		"version": edited(func(r []conformance.CohortModule) { r[0].Version = "v0.41.0" }),
		"commit":  edited(func(r []conformance.CohortModule) { r[0].Commit = strings.Repeat("0", 40) }),
		"absent":  report[1:],
	} {
		errs := conformance.CheckCohort(pins, r)
		var me *conformance.CohortMismatchError
		if len(errs) != 1 || !errors.As(errs[0], &me) || me.Module != "golang.org/x/mod" {
			t.Errorf("edited %s: %v", name, errs)
		}
	}
	// The emitter refuses a report that disagrees with the pins.
	o := fixtureOptions(t, moduleZip(t, "github.com/agentrt/agentrt", "v0.1.0", "x"))
	o.SkipTests = true
	o.CohortPins = []byte(strings.Replace(pinsDoc, "v0.42.0", "v0.41.0", 1))
	var me *conformance.CohortMismatchError
	if _, err := conformance.Emit(context.Background(), o); !errors.As(err, &me) {
		t.Errorf("emit with a mismatched pin: %v", err)
	}
}

// The archive is the module zip of a commit as `go mod download` would
// serve it; its identity is read back from the zip.
func TestCreateArchiveFromGit(t *testing.T) {
	root := repoRoot(t)
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("not a git checkout")
	}
	var buf bytes.Buffer
	if err := conformance.CreateArchive(context.Background(), &buf, root, "github.com/agentrt/agentrt", "v0.1.0", "HEAD"); err != nil {
		t.Fatal(err)
	}
	var again bytes.Buffer
	if err := conformance.CreateArchive(context.Background(), &again, root, "github.com/agentrt/agentrt", "v0.1.0", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), again.Bytes()) {
		t.Error("two archives of one commit differ")
	}
	name, version, err := conformance.ArchiveIdentity(buf.Bytes())
	if err != nil || name != "github.com/agentrt/agentrt" || version != "v0.1.0" {
		t.Fatalf("identity %s@%s, %v", name, version, err)
	}
	for _, bad := range [][]byte{nil, []byte("not a zip"), moduleZip(t, "github.com/agentrt/agentrt", "v1", "x")} {
		var ae *conformance.ArchiveError
		if _, _, err := conformance.ArchiveIdentity(bad); !errors.As(err, &ae) {
			t.Errorf("%.40q: %v", bad, err)
		}
	}
}

// The manifest decoder is strict: unknown members, wrong types and
// invalid JSON are refused with a pointer; verification turns that into a
// schema problem instead of trusting any of it.
func TestParseManifestStrict(t *testing.T) {
	_, manifest := emitFixture(t)
	for _, tc := range []struct{ from, to, pointer string }{
		{`"schemaVersion"`, `"extra":1,"schemaVersion"`, "/extra"},
		{`"environment":{`, `"environment":{"node":"v22",`, "/environment/node"},
		{`"name":"github.com/agentrt/agentrt"`, `"name":1`, "/package/name"},
	} {
		doc := bytes.Replace(manifest, []byte(tc.from), []byte(tc.to), 1)
		_, _, err := conformance.ParseManifest(doc)
		var ve *conformance.ValidationError
		if !errors.As(err, &ve) || ve.Pointer != tc.pointer {
			t.Errorf("%s: %v, want a problem at %s", tc.to, err, tc.pointer)
		}
		r := conformance.Verify(doc, conformance.VerifyOptions{})
		wantProblem(t, r, "schema", "manifest")
	}
}

// FuzzParseManifest: the decoder never panics, and whatever it accepts
// re-encodes to a document it accepts again with the same digest inputs.
func FuzzParseManifest(f *testing.F) {
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"schemaVersion":"agentrt/conformance-manifest/v1","capabilities":{}}`))
	m := &conformance.Manifest{
		SchemaVersion:   conformance.ManifestSchema,
		Package:         conformance.Package{Name: "m", Version: "v1.0.0", SourceCommit: fixtureCommit, SHA256: strings.Repeat("a", 64)},
		Cohort:          canonjson.ObjectValue([]canonjson.Member{{Name: "modules", Value: canonjson.ArrayValue(nil)}}),
		SandboxVersions: conformance.SandboxVersions{Verified: []string{}},
		Capabilities: map[string]conformance.Capability{"k": {Status: conformance.Unproven, Scenario: "s",
			Evidence: []conformance.Evidence{{File: "a_test.go", SHA256: strings.Repeat("b", 64), Cases: []conformance.Case{{Name: "TestA", Status: conformance.Missing}}}}}},
	}
	if err := m.Seal(); err != nil {
		f.Fatal(err)
	}
	seed, err := m.Encode()
	if err != nil {
		f.Fatal(err)
	}
	f.Add(seed)
	f.Fuzz(func(t *testing.T, data []byte) {
		m, raw, err := conformance.ParseManifest(data)
		r := conformance.Verify(data, conformance.VerifyOptions{Require: []string{"k"}})
		if err != nil {
			var ve *conformance.ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("error %T %v", err, err)
			}
			if r.OK() {
				t.Fatal("an undecodable manifest verified")
			}
			return
		}
		out, err := m.Encode()
		if err != nil {
			return // accepted JSON without a canonical form (e.g. lone surrogates) cannot be re-encoded
		}
		m2, raw2, err := conformance.ParseManifest(out)
		if err != nil {
			t.Fatalf("re-encoded manifest refused: %v", err)
		}
		if m2.Digest != m.Digest || !canonjson.Equal(raw.Without("digest"), raw2.Without("digest")) {
			t.Fatal("re-encoding changed the manifest")
		}
	})
}

// CM-21: canonical JSON and hashing have one owner. The manifest code
// hashes only through canonjson and imports no hash package of its own.
func TestHashingComesFromCanonjson(t *testing.T) {
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			p, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(p, "crypto/") || strings.HasPrefix(p, "hash") {
				t.Errorf("%s imports %s; digests come from canonjson", name, p)
			}
		}
	}
}
