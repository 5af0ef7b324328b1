package contract

import (
	"fmt"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Workspace cwd bases.
const (
	// CwdRepository is a portable, repository-relative POSIX path.
	CwdRepository = "repository"
	// CwdHost is a provider-owned native host path.
	CwdHost = "host"
)

// MaxWorkspaceCwdLength bounds a cwd path in UTF-16 code units.
const MaxWorkspaceCwdLength = 4096

// KindWorkspaceCwd names the shape in errors.
const KindWorkspaceCwd = "WorkspaceCwd"

// WorkspaceCwd is an explicitly based working-directory reference. A bare
// string is not a WorkspaceCwd: to migrate one, wrap it in the base that
// owns it (repository for portable workspace providers, host for CLI-bridge
// native process paths).
type WorkspaceCwd struct {
	Base string `json:"base"`
	Path string `json:"path"`
}

// RepositoryCwd returns a repository-based cwd (not yet canonicalized; see
// CanonicalWorkspaceCwd).
func RepositoryCwd(path string) WorkspaceCwd { return WorkspaceCwd{Base: CwdRepository, Path: path} }

// HostCwd returns a host-based cwd.
func HostCwd(path string) WorkspaceCwd { return WorkspaceCwd{Base: CwdHost, Path: path} }

// repositoryPathIssues lists every reason a repository path is unsafe.
func repositoryPathIssues(c *schema.Context, s string) {
	if s == "" {
		c.Check(schema.CodeTooSmall, "must not be empty")
	}
	if canonjson.UTF16Len(s) > MaxWorkspaceCwdLength {
		c.Check(schema.CodeTooBig, fmt.Sprintf("must be at most %d characters (UTF-16 units) long", MaxWorkspaceCwdLength))
	}
	if canonjson.HasControl(s) {
		c.Custom("a workspace cwd cannot contain control characters")
	}
	if !canonjson.IsWellFormed(s) {
		c.Custom("a workspace cwd must be well-formed Unicode")
	}
	if strings.HasPrefix(s, "/") || len(s) >= 2 && s[1] == ':' && isASCIILetter(s[0]) {
		c.Custom("a repository cwd must be relative")
	}
	if strings.ContainsRune(s, '\\') {
		c.Custom("a repository cwd must use POSIX separators")
	}
	for _, seg := range strings.Split(s, "/") {
		if seg == ".." {
			c.Custom("a repository cwd cannot leave the repository root")
			break
		}
	}
}

func isASCIILetter(b byte) bool { return b >= 'a' && b <= 'z' || b >= 'A' && b <= 'Z' }

// CanonicalRepositoryPath drops empty and "." segments of a valid
// repository path; an empty result is ".", the repository root.
func CanonicalRepositoryPath(s string) string {
	var kept []string
	for _, seg := range strings.Split(s, "/") {
		if seg != "" && seg != "." {
			kept = append(kept, seg)
		}
	}
	if len(kept) == 0 {
		return "."
	}
	return strings.Join(kept, "/")
}

var (
	repositoryPathNode = schema.Transform(
		schema.Refined(schema.String(), func(c *schema.Context, v canonjson.Value) { repositoryPathIssues(c, v.Str()) }),
		func(v canonjson.Value) canonjson.Value {
			return canonjson.StringValue(CanonicalRepositoryPath(v.Str()))
		},
	)

	hostPathNode = schema.String(
		schema.MaxLen(MaxWorkspaceCwdLength),
		schema.Rule[string]{Code: schema.CodeCustom, Message: "a workspace cwd cannot contain control characters",
			Test: func(s string) bool { return !canonjson.HasControl(s) }},
		schema.Rule[string]{Code: schema.CodeCustom, Message: "a workspace cwd must be well-formed Unicode", Test: canonjson.IsWellFormed},
	)

	// WorkspaceCwdSchema accepts a based cwd and returns it canonicalized:
	// repository paths lose redundant "." segments and separators; host
	// paths are kept exactly.
	WorkspaceCwdSchema = schema.Discriminated("base", map[string]schema.Node{
		CwdRepository: schema.Object(schema.Req("base", schema.LiteralString(CwdRepository)), schema.Req("path", repositoryPathNode)),
		CwdHost:       schema.Object(schema.Req("base", schema.LiteralString(CwdHost)), schema.Req("path", hostPathNode)),
	})
)

// ParseWorkspaceCwd decodes, validates and canonicalizes a cwd.
func ParseWorkspaceCwd(data []byte) (WorkspaceCwd, error) {
	v, err := schema.Decode(KindWorkspaceCwd, data)
	if err != nil {
		return WorkspaceCwd{}, err
	}
	return cwdFromValue(v)
}

// CanonicalWorkspaceCwd validates c and returns its canonical form.
func CanonicalWorkspaceCwd(c WorkspaceCwd) (WorkspaceCwd, error) {
	v, err := canonjson.ToValue(c)
	if err != nil {
		return WorkspaceCwd{}, err
	}
	return cwdFromValue(v)
}

func cwdFromValue(v canonjson.Value) (WorkspaceCwd, error) {
	out, err := schema.Run(KindWorkspaceCwd, WorkspaceCwdSchema, v)
	if err != nil {
		return WorkspaceCwd{}, err
	}
	var c WorkspaceCwd
	if err := canonjson.FromValue(out, &c); err != nil {
		return WorkspaceCwd{}, err
	}
	return c, nil
}

// CwdBaseError reports a cwd whose base a consumer does not accept.
type CwdBaseError struct {
	Label, Want, Got string
}

func (e *CwdBaseError) Error() string {
	return fmt.Sprintf("%s supports workspace cwd base %q, not %q", e.Label, e.Want, e.Got)
}

// PathForBase returns c's path when its base is base; a nil c yields "",
// false; a different base is a *CwdBaseError naming label (the consumer).
func PathForBase(c *WorkspaceCwd, base, label string) (string, bool, error) {
	if c == nil {
		return "", false, nil
	}
	if c.Base != base {
		return "", false, &CwdBaseError{Label: label, Want: base, Got: c.Base}
	}
	return c.Path, true, nil
}

// CwdBases declares which cwd bases a provider's create accepts
// (AgentEnvironmentCapabilities.workspace.cwdBases). Absent means not
// declared: callers must assume neither.
type CwdBases struct {
	Repository bool `json:"repository"`
	Host       bool `json:"host"`
}

// Accepts reports whether the declaration admits base.
func (b CwdBases) Accepts(base string) bool {
	switch base {
	case CwdRepository:
		return b.Repository
	case CwdHost:
		return b.Host
	}
	return false
}

// CwdBasesSchema requires both members.
var CwdBasesSchema = schema.Object(schema.Req("repository", schema.Bool()), schema.Req("host", schema.Bool()))

func cwdKinds() []schema.Kind {
	return []schema.Kind{{Name: KindWorkspaceCwd, Node: WorkspaceCwdSchema}}
}
