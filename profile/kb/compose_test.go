package kb

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/profile"
	"github.com/google/go-cmp/cmp"
)

var (
	teamT    = Block{Source: "team", ID: "t", Text: "team text"}
	harnessH = Block{Source: "harness", ID: "h", Text: "harness text"}
	modelM   = Block{Source: "model", ID: "m", Text: "model text"}
)

// The exact marker bytes (spec H.3).
func TestRenderMarker(t *testing.T) {
	got := render(Block{Source: "S", ID: "I", Text: "line 1\nline 2"})
	want := "<profile-guidance source=\"S\" id=\"I\">\nline 1\nline 2\n</profile-guidance>"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("marker (-want +got):\n%s", diff)
	}
}

// K06: marker forgery is refused with a typed error, on both channels; an
// opener inside the text is allowed. KB-21.
func TestK06MarkerForgery(t *testing.T) {
	tests := []struct {
		name  string
		block Block
		field string
	}{
		{"closer in text", Block{Source: "model", ID: "m", Text: "a</profile-guidance>b"}, "text"},
		{"closer line in text", Block{Source: "model", ID: "m", Text: "a\n</profile-guidance>\nb"}, "text"},
		{"quote in source", Block{Source: `mo"del`, ID: "m", Text: "x"}, "source"},
		{"newline in source", Block{Source: "mo\ndel", ID: "m", Text: "x"}, "source"},
		{"quote in id", Block{Source: "model", ID: `m" id="x`, Text: "x"}, "id"},
		{"newline in id", Block{Source: "model", ID: "m\n", Text: "x"}, "id"},
	}
	for _, tc := range tests {
		for _, ch := range []Channel{AppendSystemPrompt, Instructions} {
			t.Run(tc.name+"/"+string(ch), func(t *testing.T) {
				in := &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: sp("own")}}
				before := canon(t, in)
				out, err := ComposeGuidance(in, []Block{teamT, tc.block}, ch, ComposeOptions{})
				var re *RenderError
				if !errors.As(err, &re) {
					t.Fatalf("err = %v, want *RenderError", err)
				}
				if out != nil || re.Index != 1 || re.Field != tc.field {
					t.Fatalf("got %v, index %d field %q; want nil, 1, %q", out, re.Index, re.Field, tc.field)
				}
				if canon(t, in) != before {
					t.Fatal("input changed")
				}
			})
		}
	}
	// An opener inside the text is the allowed input contract.
	ok := Block{Source: "model", ID: "m", Text: "see <profile-guidance source=\"x\" id=\"y\">\nquoted"}
	if _, err := ComposeGuidance(&profile.Profile{}, []Block{ok}, AppendSystemPrompt, ComposeOptions{}); err != nil {
		t.Fatalf("opener in text refused: %v", err)
	}
}

// K07: the default owns every source (KB-20); an explicit ReplaceSources
// owns only those (KB-19).
func TestK07DefaultOwnsEverySource(t *testing.T) {
	first := mustCompose(t, &profile.Profile{}, []Block{teamT, harnessH}, AppendSystemPrompt, ComposeOptions{})
	want := render(teamT) + "\n\n" + render(harnessH)
	if diff := cmp.Diff(want, *first.Prompt.AppendSystemPrompt); diff != "" {
		t.Fatalf("first composition (-want +got):\n%s", diff)
	}
	second := mustCompose(t, first, []Block{modelM}, AppendSystemPrompt, ComposeOptions{})
	if diff := cmp.Diff(`{"prompt":{"appendSystemPrompt":`+quote(render(modelM))+`}}`, canon(t, second)); diff != "" {
		t.Fatalf("default recomposition (-want +got):\n%s", diff)
	}
	same := mustCompose(t, first, nil, AppendSystemPrompt, ComposeOptions{ReplaceSources: []string{"other"}})
	if diff := cmp.Diff(canon(t, first), canon(t, same)); diff != "" {
		t.Fatalf("replaceSources [other] changed the profile (-want +got):\n%s", diff)
	}
	// A non-nil empty list owns nothing either.
	none := mustCompose(t, first, nil, AppendSystemPrompt, ComposeOptions{ReplaceSources: []string{}})
	if canon(t, none) != canon(t, first) {
		t.Fatal("replaceSources [] changed the profile")
	}
}

// K08: removing the last owned block also removes the separator before it.
// KB-19.
func TestK08SeparatorCleanup(t *testing.T) {
	first := mustCompose(t, &profile.Profile{}, []Block{teamT, modelM}, AppendSystemPrompt, ComposeOptions{})
	out := mustCompose(t, first, nil, AppendSystemPrompt, ComposeOptions{ReplaceSources: []string{"model"}})
	if diff := cmp.Diff(render(teamT), *out.Prompt.AppendSystemPrompt); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// K09: an instruction line that merely starts with an opener is caller text
// and survives recomposition unchanged. KB-15, KB-21.
func TestK09WholeLineRule(t *testing.T) {
	caller := "<profile-guidance source=\"model\" id=\"example\">\nliteral text"
	in := &profile.Profile{Prompt: &profile.Prompt{Instructions: []string{caller}}}
	once := mustCompose(t, in, []Block{modelM}, Instructions, ComposeOptions{})
	want := []string{render(modelM), caller}
	if diff := cmp.Diff(want, once.Prompt.Instructions); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
	twice := mustCompose(t, once, []Block{modelM}, Instructions, ComposeOptions{})
	if diff := cmp.Diff(canon(t, once), canon(t, twice)); diff != "" {
		t.Fatalf("recomposition not stable (-once +twice):\n%s", diff)
	}
}

// K10: an explicit empty appendSystemPrompt is preserved. KB-15.
func TestK10EmptyAppendPreserved(t *testing.T) {
	in := &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: sp("")}}
	out := mustCompose(t, in, nil, AppendSystemPrompt, ComposeOptions{})
	if diff := cmp.Diff(`{"prompt":{"appendSystemPrompt":""}}`, canon(t, out)); diff != "" {
		t.Fatalf("(-want +got):\n%s", diff)
	}
}

// The instructions filter drops exactly the lines that are, as a whole, one
// block from an owned source (spec H.3 step 2). KB-21: a hand-written block
// with an owned source counts as composed.
func TestInstructionLineFilter(t *testing.T) {
	tests := []struct {
		name string
		line string
		drop bool
	}{
		{"owned block", render(modelM), true},
		{"hand-written owned block", "<profile-guidance source=\"model\" id=\"by-hand\">\nmine\n</profile-guidance>", true},
		{"empty body", "<profile-guidance source=\"model\" id=\"m\">\n\n</profile-guidance>", true},
		{"unowned block", render(teamT), false},
		{"no closer", "<profile-guidance source=\"model\" id=\"m\">\ntext", false},
		{"closer without its newline", "<profile-guidance source=\"model\" id=\"m\">\n</profile-guidance>", false},
		{"text after closer", render(modelM) + " tail", false},
		{"text before opener", "x" + render(modelM), false},
		{"two blocks on one line", render(modelM) + "\n" + render(modelM), false},
		{"closer inside body", "<profile-guidance source=\"model\" id=\"m\">\na</profile-guidance>b\n</profile-guidance>", false},
		{"opener without newline", "<profile-guidance source=\"model\" id=\"m\">x\n</profile-guidance>", false},
		{"plain", "Cite the file you read.", false},
	}
	owned := ownerOf(ComposeOptions{ReplaceSources: []string{"model"}})
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := isOwnedGuidanceLine(tc.line, owned); got != tc.drop {
				t.Fatalf("isOwnedGuidanceLine = %v, want %v", got, tc.drop)
			}
		})
	}
}

// Strip vectors for appendSystemPrompt (spec H.3 step 1), worked by hand from
// the algorithm. KB-19, KB-21.
func TestStripGuidance(t *testing.T) {
	m := render(modelM)
	tm := render(teamT)
	nested := "<profile-guidance source=\"model\" id=\"outer\">\nouter\n" +
		"<profile-guidance source=\"model\" id=\"inner\">\ninner\n</profile-guidance>\nmore\n</profile-guidance>"
	tests := []struct {
		name  string
		in    *string
		owned []string
		want  *string
	}{
		{"nil stays nil", nil, nil, nil},
		{"empty stays empty", sp(""), nil, sp("")},
		{"only a block becomes nil", sp(m), nil, nil},
		{"block and gap before own text", sp(m + "\n\nown"), nil, sp("own")},
		{"final block takes the separator before it", sp("own\n\n" + m), nil, sp("own")},
		{"final block with its own gap keeps the text before", sp("own\n\n" + m + "\n\n"), nil, sp("own\n\n")},
		{"unowned block kept", sp(tm + "\n\n" + m), []string{"model"}, sp(tm)},
		{"block mid-text", sp("a\n\n" + m + "\n\nb"), nil, sp("a\n\nb")},
		{"block without gap mid-text", sp("a" + m + "b"), nil, sp("ab")},
		{"dangling opener is caller text", sp("<profile-guidance source=\"model\" id=\"x\">\nno closer"), nil, sp("<profile-guidance source=\"model\" id=\"x\">\nno closer")},
		// The lazy match ends at the inner closer; another closer follows
		// before any opener, so the match may be cut short and the whole
		// balanced extent is kept.
		{"nested markers kept whole", sp(nested + "\n\nown"), nil, sp(nested + "\n\nown")},
		// A match holding an opener with nothing after it is not ambiguous.
		{"opener inside a final block", sp("<profile-guidance source=\"model\" id=\"a\">\nsee <profile-guidance x\n</profile-guidance>"), nil, nil},
		// After a kept nested block, a later owned block is still removed.
		{"owned block after nested", sp(nested + "\n\n" + m), nil, sp(nested)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := stripGuidance(tc.in, ownerOf(ComposeOptions{ReplaceSources: tc.owned}))
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestBalancedEnd(t *testing.T) {
	tests := []struct {
		text string
		want int
	}{
		{render(modelM), len(render(modelM))},
		{"<profile-guidance a\nx\n</profile-guidance>tail", len("<profile-guidance a\nx\n</profile-guidance>")},
		{"<profile-guidance a\n<profile-guidance b\nx\n</profile-guidance>", -1},
		{"<profile-guidance a", -1},
		{"<profile-guidance a\nx", -1},
	}
	for _, tc := range tests {
		if got := balancedEnd(tc.text, 0); got != tc.want {
			t.Errorf("balancedEnd(%q) = %d, want %d", tc.text, got, tc.want)
		}
	}
}

// Assembly (spec H.3 step 3): presence is preserved exactly and absent
// fields are never written, so identity is stable. KB-14, KB-15.
func TestAssembly(t *testing.T) {
	m := render(modelM)
	tests := []struct {
		name   string
		in     *profile.Profile
		blocks []Block
		ch     Channel
		want   string
	}{
		{"no prompt, no blocks", &profile.Profile{}, nil, AppendSystemPrompt, `{}`},
		{"no prompt, no blocks, instructions", &profile.Profile{}, nil, Instructions, `{}`},
		{"empty prompt kept", &profile.Profile{Prompt: &profile.Prompt{}}, nil, Instructions, `{"prompt":{}}`},
		{"empty instructions kept on append", &profile.Profile{Prompt: &profile.Prompt{Instructions: []string{}}}, nil, AppendSystemPrompt,
			`{"prompt":{"instructions":[]}}`},
		{"empty instructions kept on instructions", &profile.Profile{Prompt: &profile.Prompt{Instructions: []string{}}}, nil, Instructions,
			`{"prompt":{"instructions":[]}}`},
		{"owned lines removed leave []", &profile.Profile{Prompt: &profile.Prompt{Instructions: []string{m}}}, nil, Instructions,
			`{"prompt":{"instructions":[]}}`},
		{"systemPrompt kept", &profile.Profile{Prompt: &profile.Prompt{SystemPrompt: sp("S")}}, []Block{modelM}, AppendSystemPrompt,
			`{"prompt":{"appendSystemPrompt":` + quote(m) + `,"systemPrompt":"S"}}`},
		{"blocks before own append", &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: sp("own")}}, []Block{teamT, modelM}, AppendSystemPrompt,
			`{"prompt":{"appendSystemPrompt":` + quote(render(teamT)+"\n\n"+m+"\n\nown") + `}}`},
		{"instructions channel keeps own append, strips stale blocks", &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: sp(m + "\n\nown"), Instructions: []string{"i"}}},
			[]Block{modelM}, Instructions, `{"prompt":{"appendSystemPrompt":"own","instructions":[` + quote(m) + `,"i"]}}`},
		{"instructions channel keeps empty append", &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: sp("")}}, []Block{modelM}, Instructions,
			`{"prompt":{"appendSystemPrompt":"","instructions":[` + quote(m) + `]}}`},
		{"append channel removes stale instruction blocks", &profile.Profile{Prompt: &profile.Prompt{Instructions: []string{m, "i"}}}, []Block{modelM}, AppendSystemPrompt,
			`{"prompt":{"appendSystemPrompt":` + quote(m) + `,"instructions":["i"]}}`},
		{"append that strips to nothing disappears", &profile.Profile{Prompt: &profile.Prompt{AppendSystemPrompt: sp(m)}}, nil, AppendSystemPrompt, `{"prompt":{}}`},
		{"other fields untouched", &profile.Profile{Name: sp("n"), Harness: "codex", Tags: []string{}}, []Block{modelM}, Instructions,
			`{"harness":"codex","name":"n","prompt":{"instructions":[` + quote(m) + `]},"tags":[]}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			before := canon(t, tc.in)
			out := mustCompose(t, tc.in, tc.blocks, tc.ch, ComposeOptions{})
			if diff := cmp.Diff(tc.want, canon(t, out)); diff != "" {
				t.Fatalf("(-want +got):\n%s", diff)
			}
			if canon(t, tc.in) != before {
				t.Fatal("input changed")
			}
			if tc.in.Prompt != nil && out.Prompt == tc.in.Prompt {
				t.Fatal("result shares the input's prompt")
			}
		})
	}
}

func TestComposeRejects(t *testing.T) {
	if _, err := ComposeGuidance(nil, nil, AppendSystemPrompt, ComposeOptions{}); !errors.Is(err, ErrNilProfile) {
		t.Errorf("nil profile: %v", err)
	}
	if _, err := ComposeGuidance(&profile.Profile{}, nil, "system", ComposeOptions{}); !errors.Is(err, ErrInvalidChannel) {
		t.Errorf("bad channel: %v", err)
	}
}

// The result does not alias the input: changing it leaves the input alone.
func TestComposeDoesNotAlias(t *testing.T) {
	in := &profile.Profile{Tags: []string{"a"}, Prompt: &profile.Prompt{Instructions: []string{"i"}, SystemPrompt: sp("s")}}
	before := canon(t, in)
	out := mustCompose(t, in, []Block{modelM}, Instructions, ComposeOptions{})
	out.Tags[0] = "changed"
	out.Prompt.Instructions[1] = "changed"
	*out.Prompt.SystemPrompt = "changed"
	if canon(t, in) != before {
		t.Fatal("changing the result changed the input")
	}
}

func quote(s string) string {
	b := []byte{'"'}
	for _, r := range s {
		switch r {
		case '"':
			b = append(b, '\\', '"')
		case '\\':
			b = append(b, '\\', '\\')
		case '\n':
			b = append(b, '\\', 'n')
		default:
			b = append(b, string(r)...)
		}
	}
	return string(append(b, '"'))
}

// The reference strip algorithm is not idempotent on every caller text:
// removing a block can join its neighbours into a new block, which the next
// composition removes. Composition of kb blocks stays exact regardless
// (recomposing removes exactly the blocks composed); only such caller text
// is not a fixed point.
func TestStripJoinsNeighbours(t *testing.T) {
	joined := "<profile-guidance source=\"harness\" id=\"i\">" + render(modelM) + "\nU\n</profile-guidance>"
	once := stripGuidance(sp(joined), ownerOf(ComposeOptions{}))
	want := "<profile-guidance source=\"harness\" id=\"i\">\nU\n</profile-guidance>"
	if diff := cmp.Diff(sp(want), once); diff != "" {
		t.Fatalf("first strip (-want +got):\n%s", diff)
	}
	if twice := stripGuidance(once, ownerOf(ComposeOptions{})); twice != nil {
		t.Fatalf("second strip = %q, want nil", *twice)
	}
}
