package search

import (
	"context"
	"errors"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
)

type nopMethod struct{}

func (nopMethod) Identity() MethodIdentity { return MethodIdentity{Name: "nop", Version: "1"} }

func (nopMethod) Search(context.Context, MethodInput) (MethodOutput, error) {
	return MethodOutput{}, errors.New("not run")
}

// fuzzSurfaces are the surfaces a fuzzed candidate is materialized on
// (skills twice: the whole list, and one named skill's content).
var fuzzSurfaces = []struct {
	surface Surface
	skills  *Skills
}{
	{SurfacePrompt, nil}, {SurfaceSkills, nil}, {SurfaceSkills, &Skills{ResourceName: "style"}}, {SurfaceMemory, nil},
	{SurfaceTools, nil}, {SurfaceMCP, nil}, {SurfaceHooks, nil}, {SurfaceSubagents, nil}, {SurfaceAgentProfile, nil},
}

func fuzzBase() *profile.Profile {
	return &profile.Profile{
		Name:   profile.Ptr("echo"),
		Prompt: &profile.Prompt{SystemPrompt: profile.Ptr("Repeat.")},
		Resources: &profile.Resources{
			Skills:       []profile.ResourceRef{profile.DefineInlineResource("style", "Be plain.")},
			Instructions: &profile.Instructions{Text: profile.Ptr("Remember.")},
		},
		Hooks:     map[string][]profile.HookCommand{"Stop": {{Command: "/bin/true"}}},
		Subagents: map[string]profile.Subagent{"r": {Description: profile.Ptr("reviews")}},
	}
}

// FuzzMaterializeSurface: any JSON a method proposes for any profile
// surface either materializes into a complete valid profile, digested,
// that equals the base everywhere but the surface, or is refused with a
// *CandidateError or *CredentialError; it never panics and never changes
// the base.
func FuzzMaterializeSurface(f *testing.F) {
	for i, seed := range []string{
		`{"systemPrompt":"x"}`, `[{"kind":"inline","name":"style","content":"SHOUT"}]`, `"new content"`, `"memory text"`,
		`{"read":true}`, `{"docs":{"url":"https://mcp.example.com/"}}`, `{"Stop":[{"command":"/bin/false"}]}`,
		`{"r":{"prompt":"p"}}`, `{"name":"whole"}`, `null`, `[]`, `{}`, `{"resources":{"skills":[]}}`, `"sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789"`,
		`[{"kind":"github","path":"x/SKILL.md"}]`, `{"":[]}`, `1e400`,
	} {
		f.Add(uint8(i), []byte(seed))
	}
	f.Fuzz(func(t *testing.T, which uint8, data []byte) {
		if len(data) > 1<<16 {
			return
		}
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		s := fuzzSurfaces[int(which)%len(fuzzSurfaces)]
		base := fuzzBase()
		before, err := profile.Digest(base)
		if err != nil {
			t.Fatal(err)
		}
		o := Options{Surface: s.surface, Skills: s.skills, ExecutionRef: "fuzz", Method: nopMethod{}, Judges: []Judge{Exact{}},
			Agent:     AgentFunc(func(context.Context, *profile.Profile, Scenario) (Output, error) { return Output{}, nil }),
			Scenarios: []Scenario{{ID: "a", Partition: Train}, {ID: "b", Partition: Test}}}
		r, err := newRun(base, &o)
		if err != nil {
			t.Fatal(err)
		}
		p, digest, err := r.materialize(context.Background(), v)
		if after, _ := profile.Digest(base); after != before {
			t.Fatalf("the base changed")
		}
		if err != nil {
			var ce *CandidateError
			var cred *CredentialError
			if !errors.As(err, &ce) && !errors.As(err, &cred) {
				t.Fatalf("untyped refusal %T: %v", err, err)
			}
			return
		}
		pv, err := p.Value()
		if err != nil {
			t.Fatalf("a materialized candidate is invalid: %v", err)
		}
		if d, _ := profile.DigestValue(pv); d != digest {
			t.Fatalf("digest %s is not the candidate's %s", digest, d)
		}
		path := profileSurfaces[s.surface]
		if len(path) == 0 {
			return
		}
		if a, b := valueWith(pv, path, canonjson.Value{}), valueWith(r.baseValue, path, canonjson.Value{}); !canonjson.Equal(a, b) && s.skills == nil {
			t.Fatalf("the candidate differs from the base outside %v:\n%s\n%s", path, canonjson.Marshal(a), canonjson.Marshal(b))
		}
	})
}

// BenchmarkMaterializeSurface measures making one complete, validated,
// digested candidate profile per surface (the cost Improve pays once per
// distinct candidate).
func BenchmarkMaterializeSurface(b *testing.B) {
	values := map[Surface]string{
		SurfacePrompt: `{"systemPrompt":"x"}`, SurfaceSkills: `"SHOUT"`, SurfaceMemory: `"memory text"`,
		SurfaceHooks: `{"Stop":[{"command":"/bin/false"}]}`, SurfaceSubagents: `{"r":{"prompt":"p"}}`,
	}
	for _, s := range []Surface{SurfacePrompt, SurfaceSkills, SurfaceMemory, SurfaceHooks, SurfaceSubagents} {
		b.Run(string(s), func(b *testing.B) {
			o := Options{Surface: s, ExecutionRef: "bench", Method: nopMethod{}, Judges: []Judge{Exact{}},
				Agent:     AgentFunc(func(context.Context, *profile.Profile, Scenario) (Output, error) { return Output{}, nil }),
				Scenarios: []Scenario{{ID: "a", Partition: Train}, {ID: "b", Partition: Test}}}
			if s == SurfaceSkills {
				o.Skills = &Skills{ResourceName: "style"}
			}
			r, err := newRun(fuzzBase(), &o)
			if err != nil {
				b.Fatal(err)
			}
			v, err := canonjson.Decode([]byte(values[s]))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				if _, _, err := r.materialize(context.Background(), v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
