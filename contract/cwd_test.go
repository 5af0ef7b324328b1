package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Checklist WSP-01..WSP-07; spec/profile.md §E, vectors W01–W06.
func TestWorkspaceCwd(t *testing.T) {
	valid := []struct {
		in   string
		want contract.WorkspaceCwd
	}{
		{`{"base":"repository","path":"./packages//braid/."}`, contract.RepositoryCwd("packages/braid")},
		{`{"base":"repository","path":"."}`, contract.RepositoryCwd(".")},
		{`{"base":"repository","path":"./"}`, contract.RepositoryCwd(".")},
		{`{"base":"repository","path":"a/./b"}`, contract.RepositoryCwd("a/b")},
		{`{"base":"repository","path":"src/app"}`, contract.RepositoryCwd("src/app")},
		{`{"base":"repository","path":".git"}`, contract.RepositoryCwd(".git")},
		{`{"base":"repository","path":"..."}`, contract.RepositoryCwd("...")},
		{`{"base":"repository","path":" a "}`, contract.RepositoryCwd(" a ")},
		{`{"base":"repository","path":"` + strings.Repeat("a", 4096) + `"}`, contract.RepositoryCwd(strings.Repeat("a", 4096))},
		{`{"base":"repository","path":"` + strings.Repeat("😀", 2048) + `"}`, contract.RepositoryCwd(strings.Repeat("😀", 2048))},
		{`{"base":"repository","path":"x\u0085y"}`, contract.RepositoryCwd("x\u0085y")},
		{`{"base":"host","path":""}`, contract.HostCwd("")},
		{`{"base":"host","path":"C:\\workspace"}`, contract.HostCwd(`C:\workspace`)},
		{`{"base":"host","path":"/workspace/./x//"}`, contract.HostCwd("/workspace/./x//")},
		{`{"base":"host","path":"x\u0085y"}`, contract.HostCwd("x\u0085y")},
	}
	for _, tc := range valid {
		got, err := contract.ParseWorkspaceCwd([]byte(tc.in))
		if err != nil {
			t.Errorf("%s: %v", tc.in[:min(len(tc.in), 60)], err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.in[:min(len(tc.in), 60)], got, tc.want)
		}
	}

	refused := []struct {
		name, in string
		message  string
		path     string
	}{
		{"absolute", `{"base":"repository","path":"/workspace/src"}`, "relative", "/path"},
		{"drive", `{"base":"repository","path":"C:/x"}`, "relative", "/path"},
		{"drive relative", `{"base":"repository","path":"c:foo"}`, "relative", "/path"},
		{"backslash", `{"base":"repository","path":"src\\win"}`, "POSIX", "/path"},
		{"parent", `{"base":"repository","path":"../x"}`, "root", "/path"},
		{"inner parent", `{"base":"repository","path":"a/../b"}`, "root", "/path"},
		{"nul", `{"base":"repository","path":"src\u0000bad"}`, "control", "/path"},
		{"lone surrogate", `{"base":"repository","path":"\ud800"}`, "well-formed", "/path"},
		{"empty", `{"base":"repository","path":""}`, "empty", "/path"},
		{"too long", `{"base":"repository","path":"` + strings.Repeat("a", 4097) + `"}`, "at most", "/path"},
		{"too long in UTF-16", `{"base":"repository","path":"` + strings.Repeat("😀", 2049) + `"}`, "at most", "/path"},
		{"host control", `{"base":"host","path":"bad\u0000"}`, "control", "/path"},
		{"host DEL", `{"base":"host","path":"bad\u007f"}`, "control", "/path"},
		{"bare string", `"/workspace"`, "object", ""},
		{"unknown base", `{"base":"connection","path":"x"}`, "base", "/base"},
		{"extra key", `{"base":"host","path":"/w","extra":true}`, "unknown", ""},
	}
	for _, tc := range refused {
		_, err := contract.ParseWorkspaceCwd([]byte(tc.in))
		var se *schema.Error
		if !errors.As(err, &se) {
			t.Errorf("%s: err = %v, want *schema.Error", tc.name, err)
			continue
		}
		found := false
		for _, is := range se.Issues {
			if is.Path == tc.path && strings.Contains(is.Message, tc.message) {
				found = true
			}
		}
		if !found {
			t.Errorf("%s: issues %+v lack %q at %q", tc.name, se.Issues, tc.message, tc.path)
		}
	}
}

func TestWorkspaceCwdReportsEveryIssue(t *testing.T) {
	_, err := contract.ParseWorkspaceCwd([]byte(`{"base":"repository","path":"/a\\..\u0001"}`))
	var se *schema.Error
	if !errors.As(err, &se) || len(se.Issues) < 3 {
		t.Fatalf("want at least 3 issues (relative, separators, control), got %v", err)
	}
}

func TestPathForBase(t *testing.T) {
	c := contract.HostCwd("/w")
	if p, ok, err := contract.PathForBase(&c, contract.CwdHost, "cli-bridge"); p != "/w" || !ok || err != nil {
		t.Errorf("PathForBase = %q, %v, %v", p, ok, err)
	}
	_, _, err := contract.PathForBase(&c, contract.CwdRepository, "tangle")
	var be *contract.CwdBaseError
	if !errors.As(err, &be) || be.Error() != `tangle supports workspace cwd base "repository", not "host"` {
		t.Errorf("err = %v", err)
	}
	if _, ok, err := contract.PathForBase(nil, contract.CwdHost, "x"); ok || err != nil {
		t.Errorf("nil cwd: %v, %v", ok, err)
	}
	if !(contract.CwdBases{Host: true}).Accepts(contract.CwdHost) || (contract.CwdBases{Host: true}).Accepts(contract.CwdRepository) {
		t.Error("CwdBases.Accepts")
	}
}
