package kernel

import "strings"

// ServedIdentity is the provider and model a platform reported it served
// (effectiveBackend on execution.started or on the terminal event). Empty
// fields were not reported: unknown, not a mismatch.
type ServedIdentity struct {
	Provider string
	Model    string
	// Source says where the report came from (event type).
	Source string
}

// knownProviderPrefixes are provider names a served model may carry as a
// "provider/" prefix that the requested model spells without.
var knownProviderPrefixes = []string{"anthropic", "openai", "google", "moonshot", "zai", "deepseek", "xai",
	"openrouter", "tangle", "router", "scripted", "bedrock", "vertex", "azure"}

func stripKnownPrefix(model string) string {
	for {
		i := strings.IndexByte(model, '/')
		if i <= 0 {
			return model
		}
		prefix := strings.ToLower(model[:i])
		known := false
		for _, p := range knownProviderPrefixes {
			if prefix == p {
				known = true
				break
			}
		}
		if !known {
			return model
		}
		model = model[i+1:]
	}
}

// SameModel reports whether a served model is the requested one: equal
// after stripping known provider prefixes, or one ending with the other on
// a "/" boundary ("openrouter/anthropic/claude-x" serves "claude-x"). A
// different leaf — "x-5.2" for "x-5.3" — is a different model.
func SameModel(requested, served string) bool {
	if requested == served {
		return true
	}
	r, s := stripKnownPrefix(requested), stripKnownPrefix(served)
	if r == s {
		return true
	}
	return strings.HasSuffix(r, "/"+s) || strings.HasSuffix(s, "/"+r)
}
