package candidate_test

import (
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/vectors"
)

// TestScanSecrets: every rule is found where it is, in values and member
// names, and a finding never carries the text it matched.
func TestScanSecrets(t *testing.T) {
	doc := `{"prompt":"Use sk-ant-api03-abcdefghijklmnopqrstuvwx to call.",
		"list":["fine","xoxb-1234567890-abcdefghij"],
		"ghp_abcdefghijklmnopqrstuvwxyz123456":"a name that is a token",
		"jwt":"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlLXNpZw",
		"aws":"AKIAABCDEFGHIJKLMNOP","google":"AIzaSyA-abcdefghijklmnopqrstuvwxyz01234",
		"pem":"-----BEGIN OPENSSH PRIVATE KEY-----","auth":"Bearer abc.def",
		"url":"https://user:pw@example.com/","plain":"nothing here: sk is short, eyJ alone"}`
	v, err := canonjson.Decode([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	got := candidate.ScanSecrets(v)
	want := []candidate.SecretFinding{
		{Path: "/prompt", Rule: "anthropic-key"},
		{Path: "/list/1", Rule: "slack-token"},
		{Path: "/ghp_abcdefghijklmnopqrstuvwxyz123456", InName: true, Rule: "credential"},
		{Path: "/jwt", Rule: "json-web-token"},
		{Path: "/aws", Rule: "credential"},
		{Path: "/google", Rule: "google-api-key"},
		{Path: "/pem", Rule: "credential"},
		{Path: "/auth", Rule: "credential"},
		{Path: "/url", Rule: "credential"},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	for _, f := range got {
		if !f.InName && strings.Contains(f.Path, "sk-") {
			t.Errorf("a finding carries text: %+v", f)
		}
	}
}

// TestScanSecretsNoFalsePositives: no valid reference bundle, profile or
// execution (whose public values the schema already keeps free of
// credentials) has a finding.
func TestScanSecretsNoFalsePositives(t *testing.T) {
	scanned := 0
	for _, kind := range []string{"AgentCandidateBundle", "AgentCandidateProfile", "AgentCandidateExecution", "AgentCandidateInlineResource"} {
		k, err := vectors.Load(kind)
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range k.Cases {
			if !c.Valid || !c.Input.IsValid() {
				continue
			}
			scanned++
			if f := candidate.ScanSecrets(c.Input); len(f) > 0 {
				t.Errorf("%s %q: %+v", kind, c.Name, f)
			}
		}
	}
	if scanned < 20 {
		t.Fatalf("only %d valid cases scanned", scanned)
	}
}

// FuzzScanSecrets: any document is scanned without panicking, and every
// finding's path resolves to a string of the document.
func FuzzScanSecrets(f *testing.F) {
	f.Add([]byte(`{"a":["sk-ant-api03-abcdefghijklmnopqrstuvwx",{"b~/c":"xoxb-1234567890-abcdefghij"}]}`))
	f.Add([]byte(`"Bearer x"`))
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		for _, fd := range candidate.ScanSecrets(v) {
			tokens, ok := canonjson.SplitPointer(fd.Path)
			if !ok {
				t.Fatalf("finding path %q is not a pointer", fd.Path)
			}
			cur := v
			for i, tok := range tokens {
				next, found := child(cur, tok)
				if !found {
					t.Fatalf("finding path %q does not resolve at token %d", fd.Path, i)
				}
				cur = next
			}
			if !fd.InName && cur.Kind() != canonjson.String {
				t.Fatalf("finding %q is not at a string", fd.Path)
			}
		}
	})
}

func child(v canonjson.Value, tok string) (canonjson.Value, bool) {
	switch v.Kind() {
	case canonjson.Object:
		for _, m := range v.Members() {
			if m.Name == tok {
				return m.Value, true
			}
		}
	case canonjson.Array:
		for i, item := range v.Items() {
			if tok == strconv.Itoa(i) {
				return item, true
			}
		}
	}
	return canonjson.Value{}, false
}
