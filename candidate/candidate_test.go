package candidate_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// anchorA2 is the spec's disabled control in the ts16 dialect (CAND
// §23.1 A2), without its digest.
const anchorA2 = `{"code":{"kind":"disabled"},"digestAlgorithm":"rfc8785-sha256","execution":{"cwd":{"path":".","workspace":"task"},"environment":{"kind":"evaluator-task-container"},"harness":"codex","harnessVersion":"0.1.0","instructionDelivery":{"kind":"stdin-utf8"},"isolation":{"candidateSecrets":"disabled","network":"disabled","remoteIntegrations":"disabled"},"launch":{"args":[{"kind":"public","value":"exec"}],"executable":"/usr/local/bin/codex","kind":"container-command"}},"kind":"agent-candidate-bundle","memory":{"mode":"disabled"},"profile":{"harness":"codex","model":{"default":"openai/gpt-5.4"}}}`

const (
	digestA2              = "sha256:d6e849af4a7c5f850466543a825b04461ba62aeeec3546c2f6f808763b7dc88c"
	digestA3              = "sha256:e28ad2816796851548366cac5fb120824be7ec470666e1f483cfd30e65713209"
	digestA3NotApplicable = "sha256:792145cbfa52ad68d4cb3a287acf3bc9a4967a6aa70aa01a6a4c596578118231"
)

// bundleText returns A2 with the JSON members edits applied (a member
// path "a/b" set to raw JSON, or removed when the value is "") and the
// digest member set to digest.
func bundleText(t *testing.T, digest string, edits map[string]string) []byte {
	t.Helper()
	v, err := canonjson.Decode([]byte(anchorA2))
	if err != nil {
		t.Fatal(err)
	}
	for path, raw := range edits {
		v = edit(t, v, strings.Split(path, "/"), raw)
	}
	if digest != "" {
		v = v.With("digest", canonjson.StringValue(digest))
	}
	return canonjson.Marshal(v)
}

func edit(t *testing.T, v canonjson.Value, path []string, raw string) canonjson.Value {
	t.Helper()
	if len(path) == 1 {
		if raw == "" {
			return v.Without(path[0])
		}
		x, err := canonjson.Decode([]byte(raw))
		if err != nil {
			t.Fatal(err)
		}
		return v.With(path[0], x)
	}
	inner, _ := v.Get(path[0])
	return v.With(path[0], edit(t, inner, path[1:], raw))
}

// seal sets a bundle's digest to its recomputed self-digest.
func seal(t *testing.T, text []byte) []byte {
	t.Helper()
	v, err := canonjson.Decode(text)
	if err != nil {
		t.Fatal(err)
	}
	d, err := candidate.SelfDigestValue(v)
	if err != nil {
		t.Fatal(err)
	}
	return canonjson.Marshal(v.With("digest", canonjson.StringValue(d)))
}

func TestAnchorDigests(t *testing.T) {
	// CND-27: omit only the top-level digest, RFC 8785, sha256 (CAND
	// §23.1 A2 and A3, cross-checked against the reference).
	for _, tc := range []struct {
		name    string
		edits   map[string]string
		dialect candidate.Dialect
		want    string
	}{
		{"A2 ts16", nil, candidate.DialectAuto, digestA2},
		{"A3 seed control", map[string]string{"code": `{"kind":"disabled","reason":"control"}`, "lineage": `{"source":"human"}`}, candidate.DialectAuto, digestA3},
		{"A3 seed not-applicable", map[string]string{"code": `{"kind":"disabled","reason":"not-applicable"}`, "lineage": `{"source":"human"}`}, candidate.DialectSeed, digestA3NotApplicable},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := candidate.ParseBundle(bundleText(t, tc.want, tc.edits), tc.dialect)
			if err != nil {
				t.Fatal(err)
			}
			if d, err := candidate.Digest(b); err != nil || d != tc.want {
				t.Fatalf("Digest = %s, %v; want %s", d, err, tc.want)
			}
			if err := candidate.VerifyDigest(b); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestParseProvesShapeOnly(t *testing.T) {
	// CND-26: a valid shape with a wrong digest parses but fails
	// VerifyDigest (CAND §23.2 V04).
	wrong := digestA2[:len(digestA2)-1] + "d"
	b, err := candidate.ParseBundle(bundleText(t, wrong, nil), candidate.DialectAuto)
	if err != nil {
		t.Fatal(err)
	}
	if err := candidate.VerifyDigest(b); !errors.Is(err, candidate.ErrDigestMismatch) {
		t.Fatalf("VerifyDigest = %v, want ErrDigestMismatch", err)
	}
}

func TestDialects(t *testing.T) {
	// CAND §0.1 and §25.1: auto reads a bundle with lineage as seed,
	// otherwise ts16; the rows are CAND §23.2 S03-S13 (CND-07, CND-08,
	// CND-36, CND-37).
	seedCode := `{"kind":"disabled","reason":"control"}`
	human := `{"source":"human"}`
	generated := `{"source":"optimizer","parentDigests":["sha256:` + strings.Repeat("a", 64) + `"],"runIds":["run-1"],` +
		`"benchmark":{"name":"bench","version":"1","splitDigest":"sha256:` + strings.Repeat("b", 64) + `"},` +
		`"spend":{"proposal":{"costUsd":0.42,"inputTokens":1000,"outputTokens":200,"modelCalls":3},"evaluation":{"costUsd":0,"inputTokens":0,"outputTokens":0,"modelCalls":0}}}`
	for _, tc := range []struct {
		name    string
		dialect candidate.Dialect
		edits   map[string]string
		valid   bool
		path    string
	}{
		{"S01 seed control", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": human}, true, ""},
		{"S03 seed without reason", candidate.DialectSeed, map[string]string{"lineage": human}, false, "/code/reason"},
		{"S03 auto with lineage, no reason", candidate.DialectAuto, map[string]string{"lineage": human}, false, "/code/reason"},
		{"S04 unknown reason", candidate.DialectAuto, map[string]string{"code": `{"kind":"disabled","reason":"baseline"}`, "lineage": human}, false, "/code/reason"},
		{"S05 seed without lineage", candidate.DialectSeed, map[string]string{"code": seedCode}, false, "/lineage"},
		{"ts16 with reason", candidate.DialectAuto, map[string]string{"code": seedCode}, false, "/code"},
		{"ts16 forced with lineage", candidate.DialectTS16, map[string]string{"lineage": human}, false, ""},
		{"S06 generated lineage", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": generated}, true, ""},
		{"S07 optimizer without parents", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": strings.Replace(generated, `"parentDigests"`, `"modelSnapshots"`, 1)}, false, "/lineage/parentDigests"},
		{"S07 compound with one parent", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": strings.Replace(generated, "optimizer", "compound", 1)}, false, "/lineage/parentDigests"},
		{"S07 optimizer without spend", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": strings.Replace(generated, `"spend"`, `"ignored"`, 1)}, false, "/lineage"},
		{"S10 duplicate runIds", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": strings.Replace(generated, `["run-1"]`, `["run-1","run-1"]`, 1)}, false, "/lineage/runIds/1"},
		{"S10 negative cost", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": strings.Replace(generated, "0.42", "-1", 1)}, false, "/lineage/spend/proposal/costUsd"},
		{"S10 fractional tokens", candidate.DialectAuto, map[string]string{"code": seedCode, "lineage": strings.Replace(generated, "1000", "10.5", 1)}, false, "/lineage/spend/proposal/inputTokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			text := seal(t, bundleText(t, digestA2, tc.edits))
			_, err := candidate.ParseBundle(text, tc.dialect)
			if tc.valid {
				if err != nil {
					t.Fatalf("refused: %v", err)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("err = %v, want *schema.Error", err)
			}
			if !hasPath(se, tc.path) {
				t.Fatalf("no issue at %q: %v", tc.path, se)
			}
		})
	}
}

func TestSeedBundleMayNotNameItselfAsParent(t *testing.T) {
	// CAND §9.1, §23.2 S13.
	text := seal(t, bundleText(t, digestA2, map[string]string{"code": `{"kind":"disabled","reason":"control"}`, "lineage": `{"source":"human"}`}))
	v, _ := canonjson.Decode(text)
	self, _ := v.Get("digest")
	text = bundleText(t, self.Str(), map[string]string{"code": `{"kind":"disabled","reason":"control"}`,
		"lineage": `{"source":"import","parentDigests":["` + self.Str() + `"]}`})
	_, err := candidate.ParseBundle(text, candidate.DialectAuto)
	var se *schema.Error
	if !errors.As(err, &se) || !hasPath(se, "/lineage/parentDigests") {
		t.Fatalf("err = %v, want an issue at /lineage/parentDigests", err)
	}
}

func TestDuplicateKeysRefused(t *testing.T) {
	// Decision CAND §25.2 (V51): duplicate member names are refused.
	text := `{"kind":"agent-candidate-bundle",` + anchorA2[1:]
	_, err := candidate.ParseBundle([]byte(text), candidate.DialectAuto)
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("err = %v, want *schema.Error", err)
	}
}

func TestProvenanceIsTrimmedAndPartOfIdentity(t *testing.T) {
	// CAND §2.3 and decision §25.3: provenance identities are trimmed as
	// the reference trims them, and the trimmed value is what is hashed;
	// CND-19: dropping a notice changes the digest.
	base := `{"kind":"inline","name":"policy","content":"{}","sha256":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","byteLength":2,` +
		`"source":{"kind":"github","sourceIdentity":"  github:example/x  ","sourceDigest":"sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a","sourceRevision":3,"notices":["keep this"]}}`
	r, err := candidate.ParseInlineResource([]byte(base))
	if err != nil {
		t.Fatal(err)
	}
	if r.Source.SourceIdentity != "github:example/x" {
		t.Fatalf("sourceIdentity = %q, want trimmed", r.Source.SourceIdentity)
	}
	with, _ := canonjson.ToValue(r)
	r.Source.Notices = nil
	without, _ := canonjson.ToValue(r)
	d1, _ := candidate.ContentDigest(with)
	d2, _ := candidate.ContentDigest(without)
	if d1 == d2 {
		t.Fatal("dropping a notice did not change the digest")
	}
}

func TestSettlementUsesAccountedInput(t *testing.T) {
	// CND-24, CND-25 (CAND §23.2 M01/M02): usage.inputTokens is the sum of
	// accounted input, never of raw input.
	call := func(id string, in, accounted int) string {
		return `{"callId":"` + id + `","generationId":"g` + id + `","traceSpanId":"g` + id + `","status":"succeeded","model":"gpt","startedAtMs":1,"endedAtMs":2,` +
			`"inputTokens":` + itoa(in) + `,"accountedInputTokens":` + itoa(accounted) + `,"outputTokens":1,"cachedInputTokens":0,"reasoningTokens":0,"costUsdNanos":5,"costProvenance":"observed"}`
	}
	material := func(input int) []byte {
		return []byte(`{"kind":"agent-candidate-model-settlement-material","executionPlanDigest":"sha256:` + strings.Repeat("1", 64) +
			`","preparationId":"p","grantDigest":"sha256:` + strings.Repeat("2", 64) + `","closed":true,"usageWithinLimits":true,` +
			`"resolved":{"requested":"r","provider":"openai","model":"gpt","snapshot":"s","reasoningEffort":"high"},` +
			`"usage":{"inputTokens":` + itoa(input) + `,"outputTokens":2,"cachedInputTokens":0,"reasoningTokens":0,"modelCalls":2,"costUsdNanos":10,"costProvenance":"observed"},` +
			`"calls":[` + call("1", 10, 15) + `,` + call("2", 20, 25) + `]}`)
	}
	if _, err := candidate.ParseModelSettlementMaterial(material(40)); err != nil {
		t.Fatalf("accounted sum refused: %v", err)
	}
	if _, err := candidate.ParseModelSettlementMaterial(material(30)); err == nil {
		t.Fatal("raw sum accepted")
	}
}

func TestPrivateHosts(t *testing.T) {
	// CAND §1 isPrivateHost and §23.2 N01 (schema level).
	for _, h := range []string{"127.0.0.1", "127.1", "0x7f000001", "2130706433", "10.1.2.3", "172.16.0.1", "192.168.0.1",
		"169.254.169.254", "100.64.0.1", "198.18.0.1", "224.0.0.1", "255.255.255.255", "0.0.0.0", "::", "::1", "[::1]",
		"fe80::1", "febf::1", "fc00::1", "fd00::1", "::ffff:8.8.8.8", "localhost", "foo.localhost", "metadata.google.internal"} {
		if !candidate.IsPrivateHost(h) {
			t.Errorf("IsPrivateHost(%q) = false", h)
		}
	}
	for _, h := range []string{"8.8.8.8", "172.32.0.1", "100.128.0.1", "198.20.0.1", "2001:4860:4860::8888", "fec0::1",
		"64:ff9b::7f00:1", "192.0.2.1", "ghcr.io"} {
		if candidate.IsPrivateHost(h) {
			t.Errorf("IsPrivateHost(%q) = true", h)
		}
	}
}

func hasPath(se *schema.Error, path string) bool {
	for _, is := range se.Issues {
		if is.Path == path {
			return true
		}
	}
	return false
}

func itoa(n int) string { return string(canonjson.AppendNumber(nil, float64(n))) }

func TestEvidenceDigestIsMaterialDigest(t *testing.T) {
	// CAND §2.2: an evidence digest is sha256(JCS(material)) and its
	// artifact carries exactly those bytes; SelfMaterialBytes hashes to
	// the self-digest.
	m := &candidate.WorkspaceManifestMaterial{Kind: candidate.KindWorkspaceManifestValue, Files: []candidate.ManifestFile{
		{Path: "README.md", Mode: 420, SHA256: "sha256:4a1e67f2fe1d1cc7b31d0ca2ec441da4778203a036a77da10344c85e24ff0f92", ByteLength: 12},
		{Path: "src/agent.js", Mode: 493, SHA256: "sha256:83511ffd85c982e62fe0ca03ecff7a4b8c96c7f20450b1c65550d0c1a126cdf3", ByteLength: 38},
	}}
	// CAND §23.1 A4: the JCS manifest is 320 bytes with this digest.
	const want = "sha256:18dcc0dff19d56bcadb7fe90e12a0037af8fc223a6e3d221398aa33401b58227"
	b, err := candidate.MaterialBytes(m)
	if err != nil || len(b) != 320 || canonjson.DigestBytes(b) != want {
		t.Fatalf("MaterialBytes = %d bytes %s, %v", len(b), canonjson.DigestBytes(b), err)
	}
	if d, err := candidate.WorkspaceManifestDigest(m); err != nil || d != want {
		t.Fatalf("WorkspaceManifestDigest = %s, %v", d, err)
	}
	e := &candidate.Evidence[candidate.WorkspaceManifestMaterial]{Material: *m}
	if d, err := candidate.EvidenceDigest(e); err != nil || d != want {
		t.Fatalf("EvidenceDigest = %s, %v", d, err)
	}
	bundle, err := candidate.ParseBundle(bundleText(t, digestA2, nil), candidate.DialectAuto)
	if err != nil {
		t.Fatal(err)
	}
	sb, err := candidate.SelfMaterialBytes(bundle)
	if err != nil || canonjson.DigestBytes(sb) != digestA2 || string(sb) != anchorA2 {
		t.Fatalf("SelfMaterialBytes = %s, %v", sb, err)
	}
}

func TestSeedMemorySeedMayUsePrivateCAS(t *testing.T) {
	// CAND §23.2 V34p: seed/5.x accepts a private-cas memory seed whose
	// digest names the bytes; ts16 (1.6.0) refuses the locator.
	ref := `{"locator":{"kind":"private-cas","namespace":"eval","digest":"sha256:` + strings.Repeat("c", 64) + `"},"sha256":"sha256:` + strings.Repeat("c", 64) + `","byteLength":10}`
	memory := `{"mode":"isolated","scope":"task","seed":` + ref + `}`
	seed := map[string]string{"code": `{"kind":"disabled","reason":"control"}`, "lineage": `{"source":"human"}`, "memory": memory}
	if _, err := candidate.ParseBundle(seal(t, bundleText(t, digestA2, seed)), candidate.DialectAuto); err != nil {
		t.Fatalf("seed dialect refused a private-cas memory seed: %v", err)
	}
	seed["memory"] = strings.Replace(memory, `"digest":"sha256:`+strings.Repeat("c", 64), `"digest":"sha256:`+strings.Repeat("d", 64), 1)
	if _, err := candidate.ParseBundle(seal(t, bundleText(t, digestA2, seed)), candidate.DialectAuto); err == nil {
		t.Fatal("accepted a private-cas locator naming other bytes")
	}
	if _, err := candidate.ParseBundle(seal(t, bundleText(t, digestA2, map[string]string{"memory": memory})), candidate.DialectAuto); err == nil {
		t.Fatal("ts16 accepted a private-cas memory seed")
	}
}

func TestTermination(t *testing.T) {
	// CND-34, CAND §15.2 and §23.2 T01: timeouts, signals and cancellation
	// are never exits.
	for text, valid := range map[string]bool{
		`{"kind":"exit","exitCode":-1}`:                  true,
		`{"kind":"exit","exitCode":0.5}`:                 false,
		`{"kind":"timeout","timeoutMs":0}`:               false,
		`{"kind":"signal","signal":"KILL"}`:              false,
		`{"kind":"signal","signal":"SIGKILL"}`:           true,
		`{"kind":"cancelled","reason":"user"}`:           false,
		`{"kind":"cancelled"}`:                           true,
		`{"kind":"crash"}`:                               false,
		`{"kind":"timeout","timeoutMs":1000}`:            true,
		`{"kind":"exit","exitCode":137,"signal":"KILL"}`: false,
	} {
		v, err := schema.Decode("t", []byte(text))
		if err == nil {
			_, err = schema.Run("t", candidate.TerminationSchema, v)
		}
		if (err == nil) != valid {
			t.Errorf("%s: err = %v, want valid=%v", text, err, valid)
		}
	}
}
