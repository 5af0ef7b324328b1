package conformance

import (
	"path"
	"slices"
	"strconv"
	"strings"
)

// CapabilitiesSchema is the exact schemaVersion of capabilities.json.
const CapabilitiesSchema = "agentrt/conformance-capabilities/v1"

// CapabilityMap is conformance/capabilities.json, the one hand-authored
// judgment file: which Go tests are the evidence for which capability.
type CapabilityMap struct {
	SchemaVersion string                    `json:"schemaVersion"`
	Note          string                    `json:"note,omitzero"`
	Capabilities  map[string]CapabilitySpec `json:"capabilities"`
}

// CapabilitySpec declares one capability: the conformance scenario it
// corresponds to, a summary for people and the evidence. An empty evidence
// array is allowed and makes the capability unproven.
type CapabilitySpec struct {
	Scenario string         `json:"scenario"`
	Summary  string         `json:"summary"`
	Evidence []EvidenceSpec `json:"evidence"`
}

// EvidenceSpec names one _test.go file (slash-separated, relative to the
// module root) and the `go test` names of its cases: a top-level test
// declared in that file, optionally followed by "/subtest" segments as
// `go test -json` reports them.
type EvidenceSpec struct {
	File  string   `json:"file"`
	Cases []string `json:"cases"`
}

// ParseCapabilities strictly decodes and validates capabilities.json:
// schema version exact; capabilities present; every scenario a non-empty
// string; every evidence entry a clean relative _test.go path with a
// non-empty array of distinct, well-formed case names. Unknown members are
// refused. Problems are *ValidationError with a JSON pointer.
func ParseCapabilities(data []byte) (*CapabilityMap, error) {
	var m CapabilityMap
	if _, err := decodeInto("capabilities", data, &m); err != nil {
		return nil, err
	}
	bad := func(p, reason string) error {
		return &ValidationError{Document: "capabilities", Pointer: p, Reason: reason}
	}
	if m.SchemaVersion != CapabilitiesSchema {
		return nil, bad(ptr("schemaVersion"), "want "+CapabilitiesSchema)
	}
	if m.Capabilities == nil {
		return nil, bad(ptr("capabilities"), "missing")
	}
	for _, key := range m.Keys() {
		c := m.Capabilities[key]
		if !validKey(key) {
			return nil, bad(ptr("capabilities", key), "capability key must be lowercase words joined by hyphens")
		}
		if c.Scenario == "" {
			return nil, bad(ptr("capabilities", key, "scenario"), "must be a non-empty string")
		}
		if c.Evidence == nil {
			return nil, bad(ptr("capabilities", key, "evidence"), "must be an array")
		}
		for i, e := range c.Evidence {
			at := func(more ...string) string {
				return ptr(append([]string{"capabilities", key, "evidence", strconv.Itoa(i)}, more...)...)
			}
			if err := checkEvidenceFile(e.File); err != "" {
				return nil, bad(at("file"), err)
			}
			if len(e.Cases) == 0 {
				return nil, bad(at("cases"), "must be a non-empty array")
			}
			for j, name := range e.Cases {
				if !validCase(name) {
					return nil, bad(at("cases", strconv.Itoa(j)), "must be a go test name: Test… optionally followed by /subtest segments")
				}
				if slices.Contains(e.Cases[:j], name) {
					return nil, bad(at("cases", strconv.Itoa(j)), "duplicate case")
				}
			}
		}
	}
	return &m, nil
}

// Keys returns the capability keys in sorted order.
func (m *CapabilityMap) Keys() []string {
	keys := make([]string, 0, len(m.Capabilities))
	for k := range m.Capabilities {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

func validKey(k string) bool {
	if k == "" || k[0] == '-' || k[len(k)-1] == '-' || strings.Contains(k, "--") {
		return false
	}
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			return false
		}
	}
	return true
}

// checkEvidenceFile returns why f is not a usable evidence path, or "".
func checkEvidenceFile(f string) string {
	switch {
	case f == "":
		return "must be a non-empty string"
	case strings.Contains(f, `\`) || path.IsAbs(f) || path.Clean(f) != f || f == ".." || strings.HasPrefix(f, "../"):
		return "must be a clean slash-separated path relative to the module root"
	case !strings.HasSuffix(f, "_test.go"):
		return "must name a _test.go file"
	}
	return ""
}

// validCase reports whether name looks like a `go test -json` test name:
// a top-level Test function, then optional non-empty subtest segments.
func validCase(name string) bool {
	top, rest, hasRest := strings.Cut(name, "/")
	if !isTestFunc(top) {
		return false
	}
	if !hasRest {
		return true
	}
	for seg := range strings.SplitSeq(rest, "/") {
		if seg == "" || strings.ContainsAny(seg, " \t\n\r") {
			return false
		}
	}
	return true
}

// isTestFunc reports whether name is a Go test function name as `go test`
// recognises it: "Test" followed by nothing or a non-lowercase rune.
func isTestFunc(name string) bool {
	if !strings.HasPrefix(name, "Test") {
		return false
	}
	rest := name[len("Test"):]
	if rest == "" {
		return true
	}
	for i, r := range rest {
		if !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9') {
			return false
		}
		if i == 0 && r >= 'a' && r <= 'z' {
			return false
		}
	}
	return true
}
