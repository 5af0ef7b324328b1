package candidate

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

// SecretFinding is one string of a document that looks like credential
// material. It says where and by which rule, never what: a finding is
// safe to print, log and persist.
type SecretFinding struct {
	// Path is the JSON pointer of the string; for a member name, of the
	// member.
	Path string `json:"path"`
	// InName is true when the member's name, not its value, matched.
	InName bool `json:"inName,omitzero"`
	// Rule names the detector that matched.
	Rule string `json:"rule"`
}

// secretRules are the detectors ScanSecrets adds to the schema's public
// value heuristic (profile.LooksLikeCredential, rule "credential"): token
// formats whose shape alone identifies a secret.
//
// Each rule's literal is a substring every match contains: a string
// without it is not run through the expression (most strings scanned are
// prose, and the expressions cost far more than the look-up).
var secretRules = []struct {
	name, literal string
	re            *regexp.Regexp
}{
	{"anthropic-key", "sk-ant-", regexp.MustCompile(`\bsk-ant-[A-Za-z0-9_-]{16,}`)},
	{"slack-token", "xox", regexp.MustCompile(`\bxox[abposr]-[A-Za-z0-9-]{10,}`)},
	{"json-web-token", "eyJ", regexp.MustCompile(`\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`)},
	{"google-api-key", "AIza", regexp.MustCompile(`\bAIza[0-9A-Za-z_-]{35}\b`)},
}

// ScanSecrets reports every string of v — values and member names, prompts
// and inline file contents included — that looks like credential material
// (spec candidate §20 obligation 1: a verifier may run a scanner over the
// free text of a bundle and report hits). It complements a producer's own
// scanner; it does not replace one. Findings are in document order and
// never carry the matched text.
func ScanSecrets(v canonjson.Value) []SecretFinding {
	var out []SecretFinding
	scanValue(v, nil, &out)
	return out
}

func scanValue(v canonjson.Value, path []byte, out *[]SecretFinding) {
	switch v.Kind() {
	case canonjson.String:
		if rule := secretRule(v.Str()); rule != "" {
			*out = append(*out, SecretFinding{Path: string(path), Rule: rule})
		}
	case canonjson.Array:
		for i, item := range v.Items() {
			scanValue(item, canonjson.AppendPointerToken(path, strconv.Itoa(i)), out)
		}
	case canonjson.Object:
		for _, m := range v.Members() {
			p := canonjson.AppendPointerToken(path, m.Name)
			if rule := secretRule(m.Name); rule != "" {
				*out = append(*out, SecretFinding{Path: string(p), InName: true, Rule: rule})
			}
			scanValue(m.Value, p, out)
		}
	}
}

// secretRule returns the first rule s matches, or "".
func secretRule(s string) string {
	for _, r := range secretRules {
		if strings.Contains(s, r.literal) && r.re.MatchString(s) {
			return r.name
		}
	}
	if profile.LooksLikeCredential(s) {
		return "credential"
	}
	return ""
}
