package profile_test

import (
	"testing"

	"github.com/agentrt/agentrt/profile"
)

func canonicalString(t *testing.T, p *profile.Profile) string {
	t.Helper()
	b, err := profile.Canonical(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// spec/profile.md §J.1.
func TestMerge(t *testing.T) {
	tests := []struct {
		name, base, overlay, want string
	}{
		{"overlay scalars win", `{"name":"a","description":"d"}`, `{"name":"b"}`, `{"description":"d","name":"b"}`},
		{"tags replace", `{"tags":["a"]}`, `{"tags":["b"]}`, `{"tags":["b"]}`},
		{"model replaces wholesale", `{"model":{"default":"x","small":"s"}}`, `{"model":{"default":"y"}}`, `{"model":{"default":"y"}}`},
		{"append joins", `{"prompt":{"appendSystemPrompt":"a"}}`, `{"prompt":{"appendSystemPrompt":"b"}}`, `{"prompt":{"appendSystemPrompt":"a\n\nb"}}`},
		{"empty append contributes nothing", `{"prompt":{"appendSystemPrompt":""}}`, `{"prompt":{"appendSystemPrompt":"b"}}`, `{"prompt":{"appendSystemPrompt":"b"}}`},
		{"empty overlay append keeps base", `{"prompt":{"appendSystemPrompt":"a"}}`, `{"prompt":{"appendSystemPrompt":""}}`, `{"prompt":{"appendSystemPrompt":"a"}}`},
		{"instructions concatenate", `{"prompt":{"instructions":["a"],"systemPrompt":"s"}}`, `{"prompt":{"instructions":["b"]}}`, `{"prompt":{"instructions":["a","b"],"systemPrompt":"s"}}`},
		{"records merge per key", `{"tools":{"a":true,"b":true}}`, `{"tools":{"b":false,"c":true}}`, `{"tools":{"a":true,"b":false,"c":true}}`},
		{"resources", `{"resources":{"tools":[{"kind":"inline","name":"a","content":"1"}],"instructions":"x","failOnError":true}}`,
			`{"resources":{"tools":[{"kind":"inline","name":"b","content":"2"}],"failOnError":false}}`,
			`{"resources":{"failOnError":false,"instructions":"x","tools":[{"content":"1","kind":"inline","name":"a"},{"content":"2","kind":"inline","name":"b"}]}}`},
		{"connections concatenate", `{"connections":[{"connectionId":"a","capabilities":["x"]}]}`, `{"connections":[{"connectionId":"b","capabilities":["y"]}]}`,
			`{"connections":[{"capabilities":["x"],"connectionId":"a"},{"capabilities":["y"],"connectionId":"b"}]}`},
		{"empty record kept", `{}`, `{"tools":{}}`, `{"tools":{}}`},
		{"harness", `{"harness":"codex"}`, `{}`, `{"harness":"codex"}`},
	}
	for _, tc := range tests {
		got := profile.Merge(mustParse(t, tc.base), mustParse(t, tc.overlay))
		if s := canonicalString(t, got); s != tc.want {
			t.Errorf("%s: got %s, want %s", tc.name, s, tc.want)
		}
	}
	if profile.Merge(nil, nil) != nil {
		t.Error("Merge(nil, nil) != nil")
	}
	base := mustParse(t, `{"tools":{"a":true}}`)
	merged := profile.Merge(base, &profile.Profile{Tools: map[string]bool{"b": true}})
	merged.Tools["c"] = true
	if len(base.Tools) != 1 {
		t.Error("Merge aliases the base's maps")
	}
}

// spec/profile.md §J.2.
func TestApplyDiff(t *testing.T) {
	base := `{"name":"n","description":"d","tags":["a","b"],"prompt":{"systemPrompt":"s","instructions":["x","y"]},
		"model":{"default":"m","small":"s"},"harness":"codex","tools":{"a":true,"b":false},
		"connections":[{"connectionId":"c1","capabilities":["r"],"alias":"gh"},{"connectionId":"c2","capabilities":["r"]}],
		"resources":{"files":[{"path":"p/a","resource":{"kind":"inline","name":"fa","content":"1"}},{"path":"p/b","resource":{"kind":"github","path":"x/y"}}],
		             "skills":[{"kind":"github","path":"s/1"},{"kind":"inline","name":"s2","content":"2"}],"failOnError":true},
		"metadata":{"k":1}}`
	tests := []struct {
		name, diff, want string
	}{
		{"identity", `{"kind":"agent-profile-diff","remove":{"identity":true}}`, `-"description"`},
		{"tags list", `{"kind":"agent-profile-diff","remove":{"tags":["a"]}}`, `"tags":["b"]`},
		{"prompt parts", `{"kind":"agent-profile-diff","remove":{"prompt":{"systemPrompt":true,"instructions":["x","y"]}}}`, `-"prompt"`},
		{"model keys", `{"kind":"agent-profile-diff","remove":{"model":["small"]}}`, `"model":{"default":"m"}`},
		{"record keys emptied", `{"kind":"agent-profile-diff","remove":{"tools":["a","b"]}}`, `-"tools"`},
		{"connections by alias", `{"kind":"agent-profile-diff","remove":{"connections":["gh"]}}`, `"connections":[{"capabilities":["r"],"connectionId":"c2"}]`},
		{"files by path and name", `{"kind":"agent-profile-diff","remove":{"resources":{"files":["fa","p/b"]}}}`, `"resources":{"failOnError":true,"skills"`},
		{"github ref by path", `{"kind":"agent-profile-diff","remove":{"resources":{"skills":["s/1"]}}}`, `"skills":[{"content":"2","kind":"inline","name":"s2"}]`},
		{"set then remove", `{"kind":"agent-profile-diff","set":{"tools":{"c":true}},"remove":{"tools":["a"]}}`, `"tools":{"b":false,"c":true}`},
		{"harness", `{"kind":"agent-profile-diff","remove":{"harness":true}}`, `-"harness"`},
	}
	for _, tc := range tests {
		d, err := profile.ParseDiff([]byte(tc.diff))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		got := canonicalString(t, profile.ApplyDiff(mustParse(t, base), d))
		if tc.want[0] == '-' {
			if contains(got, tc.want[1:]) {
				t.Errorf("%s: %s still holds %s", tc.name, got, tc.want[1:])
			}
		} else if !contains(got, tc.want) {
			t.Errorf("%s: %s lacks %s", tc.name, got, tc.want)
		}
	}
	if got := canonicalString(t, profile.ApplyDiff(nil, &profile.Diff{Kind: profile.DiffKind})); got != "{}" {
		t.Errorf("ApplyDiff(nil, empty) = %s", got)
	}
}

func contains(s, sub string) bool { return len(sub) == 0 || indexOf(s, sub) >= 0 }

func indexOf(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return i
		}
	}
	return -1
}

// Diffs then ApplyDiff reproduces the candidate (the property diffs exist
// for), over pairs drawn from the valid profile vectors and fixtures.
func TestDiffsRoundTrip(t *testing.T) {
	fixtures := []string{`{}`, m1, e5, seatMaps,
		`{"resources":{}}`, `{"resources":{"tools":[]}}`, `{"name":"a","tags":[]}`, `{"prompt":{}}`,
		`{"description":"x","model":{"default":"a"},"tools":{"t":true},"metadata":{"x":[1,2]}}`}
	for i, a := range fixtures {
		for j, b := range fixtures {
			pa, pb := mustParse(t, a), mustParse(t, b)
			diffs, err := profile.Diffs(pa, pb)
			if err != nil {
				t.Fatal(err)
			}
			if (len(diffs) == 0) != (canonicalString(t, pa) == canonicalString(t, pb)) {
				t.Errorf("%d→%d: %d diffs for equal=%v", i, j, len(diffs), i == j)
			}
			got := pa
			for _, d := range diffs {
				if err := d.Validate(); err != nil {
					t.Fatalf("%d→%d: invalid diff: %v", i, j, err)
				}
				got = profile.ApplyDiff(got, &d)
			}
			if g, w := canonicalString(t, got), canonicalString(t, pb); g != w {
				t.Errorf("%d→%d: applying the diffs gives\n%s\nwant\n%s", i, j, g, w)
			}
		}
	}
}

func TestChangedAxes(t *testing.T) {
	d, err := profile.ParseDiff([]byte(`{"kind":"agent-profile-diff","set":{"name":"x","tools":{}},"remove":{"mcp":[],"model":["small"],"prompt":{"instructions":["a"]}}}`))
	if err != nil {
		t.Fatal(err)
	}
	got := profile.ChangedAxes(d)
	want := []string{"identity", "model", "prompt", "tools"}
	if len(got) != len(want) {
		t.Fatalf("ChangedAxes = %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("ChangedAxes = %v, want %v", got, want)
		}
	}
}
