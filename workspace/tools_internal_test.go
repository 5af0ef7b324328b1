package workspace

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
)

var allSpecs = []*toolSpec{rememberSpec, recallSpec, forgetSpec, filesListSpec, filesReadSpec, filesWriteSpec, filesDeleteSpec, filesSearchSpec}

// Every tool's JSON Schema tells the truth about the argument checker: the
// same members, the same required ones, no others allowed, and the
// enumerations and integer bounds the checker enforces.
func TestToolSchemasAgreeWithTheirCheckers(t *testing.T) {
	for _, spec := range allSpecs {
		t.Run(spec.name, func(t *testing.T) {
			js := spec.jsonSchema
			if typ, _ := js.Get("type"); typ.Str() != "object" {
				t.Errorf("type %s", canonjson.Marshal(typ))
			}
			if ap, ok := js.Get("additionalProperties"); !ok || ap.Kind() != canonjson.Bool || ap.Bool() {
				t.Error("additionalProperties must be false: the checker refuses unknown members")
			}
			props, _ := js.Get("properties")
			var schemaNames, nodeNames, nodeRequired, schemaRequired []string
			for _, m := range props.Members() {
				schemaNames = append(schemaNames, m.Name)
				if d, _ := m.Value.Get("description"); d.Str() == "" {
					t.Errorf("%s has no description", m.Name)
				}
			}
			for _, f := range spec.node.Fields() {
				nodeNames = append(nodeNames, f.Name)
				if !f.Optional {
					nodeRequired = append(nodeRequired, f.Name)
				}
			}
			if req, ok := js.Get("required"); ok {
				for _, r := range req.Items() {
					schemaRequired = append(schemaRequired, r.Str())
				}
			}
			slices.Sort(schemaNames)
			slices.Sort(nodeNames)
			slices.Sort(nodeRequired)
			slices.Sort(schemaRequired)
			if diff := cmp.Diff(nodeNames, schemaNames); diff != "" {
				t.Errorf("properties (-checker +schema):\n%s", diff)
			}
			if diff := cmp.Diff(nodeRequired, schemaRequired); diff != "" {
				t.Errorf("required (-checker +schema):\n%s", diff)
			}
			// Probe each member with values the schema allows or refuses
			// and check the checker agrees.
			for _, m := range props.Members() {
				probeMember(t, spec, m.Name, m.Value)
			}
		})
	}
}

// probeMember checks one member's declared enumeration and integer bounds
// against the checker, holding the other members at valid values.
func probeMember(t *testing.T, spec *toolSpec, name string, prop canonjson.Value) {
	t.Helper()
	base := validArgs(spec)
	try := func(v canonjson.Value) bool {
		members := []canonjson.Member{}
		for _, m := range base.Members() {
			if m.Name != name {
				members = append(members, m)
			}
		}
		members = append(members, canonjson.Member{Name: name, Value: v})
		_, err := parseArgsValue(spec, canonjson.ObjectValue(members))
		return err == nil
	}
	if enum, ok := prop.Get("enum"); ok {
		for _, e := range enum.Items() {
			if !try(e) {
				t.Errorf("%s: the schema allows %s, the checker refuses it", name, canonjson.Marshal(e))
			}
		}
		if try(canonjson.StringValue("not-in-the-enum")) {
			t.Errorf("%s: the checker accepts a value outside the enum", name)
		}
	}
	if minimum, ok := prop.Get("minimum"); ok {
		if try(canonjson.NumberValue(minimum.Float() - 1)) {
			t.Errorf("%s: the checker accepts minimum-1", name)
		}
		if !try(canonjson.NumberValue(minimum.Float())) {
			t.Errorf("%s: the checker refuses the minimum", name)
		}
		if try(canonjson.NumberValue(minimum.Float() + 0.5)) {
			t.Errorf("%s: the checker accepts a fraction for an integer", name)
		}
	}
	if maximum, ok := prop.Get("maximum"); ok {
		if try(canonjson.NumberValue(maximum.Float() + 1)) {
			t.Errorf("%s: the checker accepts maximum+1", name)
		}
		if !try(canonjson.NumberValue(maximum.Float())) {
			t.Errorf("%s: the checker refuses the maximum", name)
		}
	}
	if typ, _ := prop.Get("type"); typ.Kind() == canonjson.Array {
		for _, ty := range typ.Items() {
			if ty.Str() == "null" && !try(canonjson.NullValue()) {
				t.Errorf("%s: the schema allows null, the checker refuses it", name)
			}
		}
	} else if typ.Str() == "string" && try(canonjson.NumberValue(1)) {
		t.Errorf("%s: the checker accepts a number for a string", name)
	}
	if minLen, ok := prop.Get("minLength"); ok && minLen.Float() == 1 && try(canonjson.StringValue("")) {
		t.Errorf("%s: the checker accepts an empty string", name)
	}
}

func parseArgsValue(spec *toolSpec, v canonjson.Value) (any, error) {
	switch spec {
	case rememberSpec:
		return parseArgs[rememberArgs](spec, v)
	case recallSpec:
		return parseArgs[recallArgs](spec, v)
	case forgetSpec:
		return parseArgs[forgetArgs](spec, v)
	case filesListSpec:
		return parseArgs[filesListArgs](spec, v)
	case filesReadSpec:
		return parseArgs[filesReadArgs](spec, v)
	case filesWriteSpec:
		return parseArgs[filesWriteArgs](spec, v)
	case filesDeleteSpec:
		return parseArgs[filesDeleteArgs](spec, v)
	case filesSearchSpec:
		return parseArgs[filesSearchArgs](spec, v)
	}
	panic("unknown spec " + spec.name)
}

// validArgs returns a valid argument object for spec.
func validArgs(spec *toolSpec) canonjson.Value {
	texts := map[*toolSpec]string{
		rememberSpec:    `{"scope":"member","key":"k","content":"c","ifRevision":null}`,
		recallSpec:      `{"limit":10}`,
		forgetSpec:      `{"scope":"member","key":"k","ifRevision":1}`,
		filesListSpec:   `{"prefix":"/files","limit":10}`,
		filesReadSpec:   `{"path":"/files/a","encoding":"utf8"}`,
		filesWriteSpec:  `{"path":"/files/a","content":"c","encoding":"utf8","ifRevision":null}`,
		filesDeleteSpec: `{"path":"/files/a","ifRevision":1}`,
		filesSearchSpec: `{"query":"q","prefix":"/files","limit":10}`,
	}
	v, err := canonjson.Decode([]byte(texts[spec]))
	if err != nil {
		panic(err)
	}
	if _, err := parseArgsValue(spec, v); err != nil {
		panic(spec.name + ": " + err.Error())
	}
	return v
}

func TestRecallRefinements(t *testing.T) {
	for _, text := range []string{`{"key":"k"}`, `{"scope":"all","key":"k"}`, `{"scope":"member","key":"k","query":"q"}`} {
		v, _ := canonjson.Decode([]byte(text))
		if _, err := parseArgs[recallArgs](recallSpec, v); err == nil {
			t.Errorf("recall %s accepted", text)
		}
	}
}
