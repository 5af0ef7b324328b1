package workspace_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/storetest"
)

// WST-02: the four roots and nothing else.
func TestValidatePath(t *testing.T) {
	good := []string{
		"/memories/workspace/goal",
		"/memories/workspace/a.b-c_d",
		"/memories/members/alice/style",
		"/memories/members/ali ce/x y",
		"/knowledge/a",
		"/knowledge/a/b/c/d.md",
		"/files/a",
		"/files/notes/2026/plan.md",
		"/files/.hidden",
		"/files/...",
		"/files/日本語/é",
		"/files/a~b/c%20d",
		"/files/" + strings.Repeat("s", workspace.MaxSegmentBytes),
	}
	for _, p := range good {
		if err := workspace.ValidatePath(p); err != nil {
			t.Errorf("ValidatePath(%q) = %v", p, err)
		}
	}
	for _, p := range storetest.BadPaths {
		err := workspace.ValidatePath(p)
		var pe *workspace.PathError
		if !errors.As(err, &pe) || !errors.Is(err, workspace.ErrInvalid) || pe.Path != p || pe.Reason == "" {
			t.Errorf("ValidatePath(%q) = %v, want a *PathError matching ErrInvalid", p, err)
		}
	}
}

func TestValidatePrefix(t *testing.T) {
	cases := []struct {
		in, want string
		ok       bool
	}{
		{"", "/", true},
		{"/", "/", true},
		{"/files", "/files", true},
		{"/files/", "/files", true},
		{"/files/a/b/", "/files/a/b", true},
		{"/knowledge", "/knowledge", true},
		{"/memories", "/memories", true},
		{"/memories/", "/memories", true},
		{"/memories/workspace", "/memories/workspace", true},
		{"/memories/workspace/id", "/memories/workspace/id", true},
		{"/memories/members", "/memories/members", true},
		{"/memories/members/alice", "/memories/members/alice", true},
		{"/memories/members/alice/id", "/memories/members/alice/id", true},
		{"//", "", false},
		{"/files//", "", false},
		{"files", "", false},
		{"/etc", "", false},
		{"/memories/other", "", false},
		{"/memories/workspace/a/b", "", false},
		{"/memories/members/a/b/c", "", false},
		{"/files/../x", "", false},
		{"/files/a\x00", "", false},
	}
	for _, c := range cases {
		got, err := workspace.ValidatePrefix(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ValidatePrefix(%q) = %q, %v; want %q ok=%v", c.in, got, err, c.want, c.ok)
		}
		if err != nil && !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("ValidatePrefix(%q) error %v does not match ErrInvalid", c.in, err)
		}
	}
}

func TestInPrefix(t *testing.T) {
	cases := []struct {
		prefix, path string
		want         bool
	}{
		{"/", "/files/a", true},
		{"/files", "/files/a", true},
		{"/files/a", "/files/a", true},
		{"/files/a", "/files/a/b", true},
		{"/files/a", "/files/ab", false},
		{"/files/a", "/files/a-b", false},
		{"/files/a", "/files", false},
		{"/memories/members/al", "/memories/members/alice/x", false},
	}
	for _, c := range cases {
		if got := workspace.InPrefix(c.prefix, c.path); got != c.want {
			t.Errorf("InPrefix(%q, %q) = %v", c.prefix, c.path, got)
		}
	}
}

func TestExpect(t *testing.T) {
	cases := []struct {
		name   string
		e      workspace.Expect
		valid  bool
		str    string
		holdAt []int64 // actual revisions at which it holds, from 0..3
	}{
		{"zero", workspace.Expect{}, false, "unset", nil},
		{"absent", workspace.ExpectAbsent(), true, "absent", []int64{0}},
		{"revision 2", workspace.ExpectRevision(2), true, "revision 2", []int64{2}},
		{"revision 0", workspace.ExpectRevision(0), false, "revision 0", nil},
		{"revision -1", workspace.ExpectRevision(-1), false, "revision -1", nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.e.Valid() != c.valid || c.e.String() != c.str {
				t.Errorf("Valid %v String %q", c.e.Valid(), c.e.String())
			}
			var holds []int64
			for actual := int64(0); actual <= 3; actual++ {
				if c.e.Holds(actual) {
					holds = append(holds, actual)
				}
			}
			if diff := cmp.Diff(c.holdAt, holds); diff != "" {
				t.Errorf("Holds (-want +got):\n%s", diff)
			}
		})
	}
	if r, ok := workspace.ExpectRevision(5).Revision(); !ok || r != 5 {
		t.Errorf("Revision() = %d, %v", r, ok)
	}
	if _, ok := workspace.ExpectAbsent().Revision(); ok || !workspace.ExpectAbsent().IsAbsent() {
		t.Error("ExpectAbsent names a revision")
	}
}

// WST-05: the conflict error reads as path, expected and actual.
func TestConflictError(t *testing.T) {
	cases := []struct {
		err  *workspace.ConflictError
		want string
	}{
		{&workspace.ConflictError{Path: "/files/a", Expected: workspace.ExpectRevision(2), Actual: 3},
			"workspace: conflict at /files/a: expected revision 2, found revision 3"},
		{&workspace.ConflictError{Path: "/files/a", Expected: workspace.ExpectAbsent(), Actual: 1},
			"workspace: conflict at /files/a: expected absent, found revision 1"},
		{&workspace.ConflictError{Path: "/files/a", Expected: workspace.ExpectRevision(1), Actual: 0},
			"workspace: conflict at /files/a: expected revision 1, found no live document"},
	}
	for _, c := range cases {
		if got := c.err.Error(); got != c.want {
			t.Errorf("Error() = %q, want %q", got, c.want)
		}
		if !errors.Is(c.err, workspace.ErrConflict) || errors.Is(c.err, workspace.ErrInvalid) {
			t.Errorf("%v: Is(ErrConflict) must hold and Is(ErrInvalid) must not", c.err)
		}
	}
}

func TestMatch(t *testing.T) {
	cases := []struct {
		text, path, body string
		want             bool
	}{
		{"alpha", "/files/x", "ALPHA", true},
		{"alpha beta", "/files/x", "beta then alpha", true},
		{"alpha beta", "/files/alpha", "beta", true},
		{"alpha beta", "/files/x", "alpha", false},
		{"ÉTÉ", "/files/x", "un été", true},
		{"plan", "/files/PLAN.md", "", true},
		{"x\ny", "/files/x", "y", true},
		{"a b", "/files/q", "a\nb", true},
		{"files/x\nbody", "/files/x", "body", true},        // terms split on white space
		{"q zz", "/files/q", "", false},                    // every term must occur
		{"alpha", "/files/bin", "\xff\x00ALPHA\xfe", true}, // binary content: ASCII folding
	}
	for _, c := range cases {
		q, err := workspace.CheckQuery(workspace.Query{Text: c.text})
		if err != nil {
			t.Fatalf("CheckQuery(%q): %v", c.text, err)
		}
		if got := workspace.Match(q, c.path, []byte(c.body)); got != c.want {
			t.Errorf("Match(%q, %q, %q) = %v", c.text, c.path, c.body, got)
		}
	}
}

func TestCheckQuery(t *testing.T) {
	bad := []workspace.Query{
		{Text: ""},
		{Text: " \t\n"},
		{Text: "x", Limit: -1},
		{Text: "x", Prefix: "/nope"},
		{Text: strings.Repeat("a", workspace.MaxQueryBytes+1)},
		{Text: strings.Repeat("a ", workspace.MaxQueryTerms+1)},
		{Text: "\xed\xa0\x80"},
	}
	for _, q := range bad {
		if _, err := workspace.CheckQuery(q); !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("CheckQuery(%+v) = %v, want ErrInvalid", q, err)
		}
	}
	q, err := workspace.CheckQuery(workspace.Query{Text: "x", Prefix: "/files/"})
	if err != nil || q.Prefix != "/files" {
		t.Errorf("normalized %+v, %v", q, err)
	}
}

func TestNamesAndWriters(t *testing.T) {
	for _, ok := range []string{"t", "tenant-1", "Ünïcode tenant", strings.Repeat("t", workspace.MaxNameBytes)} {
		if err := workspace.ValidateTenant(ok); err != nil {
			t.Errorf("ValidateTenant(%q) = %v", ok, err)
		}
	}
	for _, bad := range []string{"", " t", "t ", "a\x00b", "a\x7f", "\xff", strings.Repeat("t", workspace.MaxNameBytes+1)} {
		if err := workspace.ValidateTenant(bad); !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("ValidateTenant(%q) = %v", bad, err)
		}
		if err := workspace.ValidateWriter(bad); !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("ValidateWriter(%q) = %v", bad, err)
		}
	}
	for _, bad := range []string{"", ".", "..", "a/b", "a\\b", " a", "a\u0085", "\xed\xa0\x80"} {
		if err := workspace.ValidateSegment(bad); !errors.Is(err, workspace.ErrInvalid) {
			t.Errorf("ValidateSegment(%q) = %v", bad, err)
		}
	}
}

func TestCheckWrites(t *testing.T) {
	if err := workspace.CheckPut("t", "/files/a", nil, workspace.ExpectAbsent(), "w"); err != nil {
		t.Errorf("CheckPut: %v", err)
	}
	if err := workspace.CheckPut("t", "/files/a", nil, workspace.Expect{}, "w"); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("CheckPut without precondition: %v", err)
	}
	if err := workspace.CheckDelete("t", "/files/a", workspace.ExpectAbsent(), "w"); !errors.Is(err, workspace.ErrInvalid) {
		t.Errorf("CheckDelete with ExpectAbsent: %v", err)
	}
	if err := workspace.CheckDelete("t", "/files/a", workspace.ExpectRevision(1), "w"); err != nil {
		t.Errorf("CheckDelete: %v", err)
	}
}
