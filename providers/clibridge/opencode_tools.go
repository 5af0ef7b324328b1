package clibridge

import (
	"bytes"
	"encoding/json"
	"maps"
	"slices"

	"github.com/agentrt/agentrt/profile"
)

// opencodeBuiltinTools are the tools opencode 1.18.33 offered the model
// (every request's tools, testdata/opencode/README); "tools": {NAME:
// false} removed exactly that tool from the request (observed for each
// of write, webfetch and bash).
var opencodeBuiltinTools = []string{"bash", "edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch", "write"}

// opencodePermissionKeys are the permission keys of opencode 1.18.33 the
// bridge writes: "deny" for any of them removed its tools from the
// request (edit: edit and write; each other key: the tool of that name),
// and an unknown key is ignored silently, so no other key is accepted.
var opencodePermissionKeys = []string{"bash", "edit", "glob", "grep", "read", "skill", "task", "todowrite", "webfetch"}

// opencodeToolsCheck refuses the tools and permissions of p opencode
// cannot be given exactly.
func opencodeToolsCheck(p *profile.Profile) []error {
	var errs []error
	refuse := func(path, reason string) { errs = append(errs, unsupported(path, reason)) }
	for _, key := range slices.Sorted(maps.Keys(p.Tools)) {
		if !slices.Contains(opencodeBuiltinTools, key) {
			refuse("/tools/"+key, "not an opencode built-in tool the bridge verified (bash, edit, glob, grep, read, skill, task, todowrite, webfetch, write)")
		}
	}
	const ask = "ask cannot be honored: opencode run has no one to ask and the bridge declares no interactions"
	for _, key := range slices.Sorted(maps.Keys(p.Permissions)) {
		if !slices.Contains(opencodePermissionKeys, key) {
			refuse("/permissions/"+key, "not an opencode permission the bridge verified (bash, edit, glob, grep, read, skill, task, todowrite, webfetch); opencode ignores an unknown one")
			continue
		}
		perm := p.Permissions[key]
		if perm.Patterns == nil {
			if perm.Value == profile.Ask {
				refuse("/permissions/"+key, ask)
			}
			continue
		}
		if key != "bash" {
			refuse("/permissions/"+key, "the bridge verified opencode's patterns for bash commands only")
			continue
		}
		for _, pat := range slices.Sorted(maps.Keys(perm.Patterns)) {
			switch {
			case perm.Patterns[pat] == profile.Ask:
				refuse("/permissions/"+key+"/"+pat, ask)
			case opencodeSubstitutes(pat):
				refuse("/permissions/"+key+"/"+pat, "opencode would substitute the pattern's {env:...} or {file:...} text")
			}
		}
	}
	return errs
}

// opencodePermissions is the configuration's "permission" object. It is
// written in an order that matters: opencode applies the last rule that
// matches a call (observed: {"*": "deny", "echo *": "allow"} ran "echo
// hi", {"echo *": "allow", "*": "deny"} removed bash), and a profile's
// patterns are unordered, so a tool's allow patterns come first and its
// deny patterns last — a call both match is denied, as claude-code's
// deny rules take precedence over its allow rules.
type opencodePermissions struct {
	profile map[string]profile.Permission
}

// MarshalJSON writes the permissions in key order, each tool's patterns
// allow first, then deny, each group in pattern order.
func (o opencodePermissions) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	str := func(s string) {
		enc, _ := json.Marshal(s)
		b.Write(enc)
	}
	b.WriteByte('{')
	for i, key := range slices.Sorted(maps.Keys(o.profile)) {
		if i > 0 {
			b.WriteByte(',')
		}
		str(key)
		b.WriteByte(':')
		perm := o.profile[key]
		if perm.Patterns == nil {
			str(string(perm.Value))
			continue
		}
		b.WriteByte('{')
		n := 0
		for _, v := range []profile.PermissionValue{profile.Allow, profile.Deny} {
			for _, pat := range slices.Sorted(maps.Keys(perm.Patterns)) {
				if perm.Patterns[pat] != v {
					continue
				}
				if n > 0 {
					b.WriteByte(',')
				}
				n++
				str(pat)
				b.WriteByte(':')
				str(string(v))
			}
		}
		b.WriteByte('}')
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// opencodeRules are the receipt's tool rules for p (toolRules): the
// profile's keys as opencode's tool names, and every pattern as written.
func opencodeRules(p *profile.Profile) (allowed, denied []string) {
	return toolRules(p, func(key string) string { return key }, func(tool, pat string) string { return tool + "(" + pat + ")" })
}
