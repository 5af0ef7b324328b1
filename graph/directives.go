package graph

import (
	"bytes"
	"encoding/json"
	"io"
	"maps"
	"slices"
	"strconv"
)

// MaxDefinitionLen bounds a graph definition (Decode), in bytes: the
// most the agentrt CLI reads of a file, so a definition it reads always
// decodes, and a library caller's input is bounded the same.
const MaxDefinitionLen = 64 << 20

// MaxDirectivesLen bounds a directives document (DecodeDirectives): a
// registry is reviewable text, kilobytes per directive.
const MaxDirectivesLen = 4 << 20

// builtinDirectives are the directives every graph may name without a
// registry of its own (spec runtime §3.7: an edge's directive is a
// registry handle <surface>/v<n>, and every directive resolves). A
// delegates directive opens the worker's task; an analyzes directive
// opens the analyst's task and travels with its findings to the edge's
// destination. The text of a published version never changes: a
// changed directive is a new version.
var builtinDirectives = map[string]string{
	"delegate/v1": "You are a worker node of an agent graph. Do the task below completely and on your own. " +
		"Reply with the result itself (the answer, the artifact or the change made), then one short note of anything you could not do.",
	"delegate/implement/v1": "Implement the change the task below asks for. Change only what it needs and keep behaviour elsewhere as it is; " +
		"run the checks you can. Reply with what you changed (where and why) and how you verified it.",
	"delegate/fix/v1": "Find the cause of the failure the task below describes and fix it at its cause, not at its symptom. " +
		"Reply with the cause, the fix, and the check that now passes (or, if none does, that it still fails).",
	"delegate/review/v1": "Review the work the task below names; do not change it. Reply with the problems you found, most severe first, " +
		"each with where it is and why it matters, then a one-line verdict: approve or request changes.",
	"delegate/research/v1": "Investigate the question in the task below. Reply with the answer first, then the evidence it rests on " +
		"(sources, commands run, observations) and what remains uncertain.",
	"delegate/test/v1": "Write or run the tests the task below needs. Reply with what they cover, the command that runs them and its result; " +
		"a failing test is reported as failing.",
	"analyze/v1": "Analyze the worker output below against the task it was given. Reply with findings only, each a concrete observation " +
		"with its evidence; reply with nothing when there is nothing to report.",
	"analyze/critique/v1": "Critique the worker output below for correctness errors, unsafe or unrequested changes and missing verification. " +
		"Reply with findings only, most severe first, each with its evidence; reply with nothing when you find none.",
	"analyze/verify/v1": "Check whether the worker output below does what its task asked. Reply with each requirement it misses or claims " +
		"without evidence; reply with nothing when it meets them all.",
}

// BuiltinDirectives returns the built-in directives by handle: a fresh
// map the caller may change. Handles are delegate/v1 (a worker does its
// task and replies with the result), delegate/implement/v1,
// delegate/fix/v1, delegate/review/v1, delegate/research/v1,
// delegate/test/v1 for delegates edges, and analyze/v1,
// analyze/critique/v1, analyze/verify/v1 for analyzes edges.
func BuiltinDirectives() map[string]string { return maps.Clone(builtinDirectives) }

// BuiltinRegistry is the registry of BuiltinDirectives; With adds a
// caller's directives to it.
func BuiltinRegistry() *Registry {
	return &Registry{text: maps.Clone(builtinDirectives)}
}

// With returns a new registry holding r's directives and entries, an
// entry replacing r's directive of the same handle; r is unchanged.
// Every handle of entries must be ValidHandle (a *ValidationError names
// the first that is not, in handle order).
func (r *Registry) With(entries map[string]string) (*Registry, error) {
	add, err := NewRegistry(entries)
	if err != nil {
		return nil, err
	}
	out := &Registry{text: make(map[string]string, r.Len()+len(entries))}
	if r != nil {
		maps.Copy(out.text, r.text)
	}
	maps.Copy(out.text, add.text)
	return out, nil
}

// Handles returns the registry's handles, sorted.
func (r *Registry) Handles() []string {
	if r == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(r.text))
}

// Len is how many directives the registry holds.
func (r *Registry) Len() int {
	if r == nil {
		return 0
	}
	return len(r.text)
}

// DecodeDirectives reads a directives document: one JSON object of
// directive text by handle, {"<surface>/v<n>": "text", …}, at most
// MaxDirectivesLen bytes. It is strict: anything but an object of
// strings, a handle that is not ValidHandle, a text that is only white
// space, or a handle given twice is a *ValidationError whose Path names
// it (directives["h"]). Registry.With
// adds the result to a registry.
func DecodeDirectives(data []byte) (map[string]string, error) {
	if len(data) > MaxDirectivesLen {
		return nil, invalid("directives", "is %d bytes; at most %d", len(data), MaxDirectivesLen)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, invalid("directives", "is not a JSON object of directive text by handle")
	}
	out := map[string]string{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, invalid("directives", "is not valid JSON: %v", err)
		}
		h, _ := tok.(string) // an object's keys are strings
		p := "directives[" + strconv.Quote(h) + "]"
		if _, dup := out[h]; dup {
			return nil, invalid(p, "is given twice")
		}
		if reason := checkDirective(h, "-"); reason != "" {
			return nil, invalid(p, "%s", reason)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, invalid("directives", "is not valid JSON: %v", err)
		}
		var text string
		if raw[0] != '"' || json.Unmarshal(raw, &text) != nil {
			return nil, invalid(p, "is not a string of directive text")
		}
		if reason := checkDirective(h, text); reason != "" {
			return nil, invalid(p, "%s", reason)
		}
		out[h] = text
	}
	if _, err := dec.Token(); err != nil {
		return nil, invalid("directives", "is not valid JSON: %v", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, invalid("directives", "has data after its object")
	}
	return out, nil
}
