package vectors

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
)

// EnvDir names the environment variable that overrides the vector directory.
const EnvDir = "AGENTRT_VECTORS"

// Dir returns the vector directory: $AGENTRT_VECTORS when it is set, or
// else the module's own copy, testdata/vectors under the module root.
func Dir() (string, error) {
	if d := os.Getenv(EnvDir); d != "" {
		return d, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	dir := filepath.Join(root, "testdata", "vectors")
	if _, err := os.Stat(filepath.Join(dir, "INDEX.tsv")); err != nil {
		return "", fmt.Errorf("vectors: the module's copy is missing (%w); restore it with scripts/sync-vectors or set %s to the vector directory", err, EnvDir)
	}
	return dir, nil
}

// moduleRoot returns the directory of the module's go.mod, found from this
// source file's own path, so it does not depend on the working directory.
func moduleRoot() (string, error) {
	_, file, _, ok := runtime.Caller(0)
	if !ok {
		return "", errors.New("vectors: cannot locate the module root")
	}
	root := filepath.Clean(filepath.Join(filepath.Dir(file), "..", ".."))
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("vectors: no go.mod at the module root %s: %w", root, err)
	}
	return root, nil
}

// Issue is one issue the reference reported for a refused input.
type Issue struct {
	Path    string
	Code    string
	Message string
}

// Case is one schema vector.
type Case struct {
	Name string
	// Input is the decoded input; nil Text means Input came from "input".
	Input canonjson.Value
	// Text is the raw input text of an "inputText" case.
	Text []byte
	// Valid is the reference verdict.
	Valid bool
	// Canonical and Digest are set when the reference could canonicalize
	// the input.
	Canonical, Digest string
	// ProfileDigest and ProfileDigestError are set for AgentProfile cases.
	ProfileDigest, ProfileDigestError string
	Issues                            []Issue
	// Expect is the whole expect object.
	Expect canonjson.Value
}

// Raw returns the input as JSON text: Text for raw cases, the canonical
// encoding of Input otherwise (or, when Input has no canonical form, a
// plain re-encoding that keeps lone surrogates as escapes).
func (c Case) Raw() []byte {
	if c.Text != nil {
		return c.Text
	}
	return canonjson.Marshal(c.Input)
}

// Kind is one schema vector file.
type Kind struct {
	Kind      string
	Reference string
	Cases     []Case
}

// FunctionCase is one function vector.
type FunctionCase struct {
	Args   []canonjson.Value
	Expect canonjson.Value
}

// Load reads <Kind>.json.
func Load(kind string) (*Kind, error) {
	v, err := readFile(kind + ".json")
	if err != nil {
		return nil, err
	}
	k := &Kind{Kind: str(v, "kind"), Reference: str(v, "reference")}
	cases, _ := v.Get("cases")
	for i, cv := range cases.Items() {
		c := Case{Name: str(cv, "name")}
		if in, ok := cv.Get("input"); ok {
			c.Input = in
		}
		if t, ok := cv.Get("inputText"); ok {
			c.Text = []byte(t.Str())
		}
		if !c.Input.IsValid() && c.Text == nil {
			return nil, fmt.Errorf("vectors: %s case %d has no input", kind, i)
		}
		exp, _ := cv.Get("expect")
		c.Expect = exp
		valid, _ := exp.Get("valid")
		c.Valid = valid.Bool()
		c.Canonical = str(exp, "canonical")
		c.Digest = str(exp, "digest")
		c.ProfileDigest = str(exp, "profileDigest")
		c.ProfileDigestError = str(exp, "profileDigestError")
		issues, _ := exp.Get("issues")
		for _, iv := range issues.Items() {
			c.Issues = append(c.Issues, Issue{Path: str(iv, "path"), Code: str(iv, "code"), Message: str(iv, "message")})
		}
		k.Cases = append(k.Cases, c)
	}
	return k, nil
}

// LoadFunction reads fn.<name>.json.
func LoadFunction(name string) ([]FunctionCase, error) {
	v, err := readFile("fn." + name + ".json")
	if err != nil {
		return nil, err
	}
	cases, _ := v.Get("cases")
	var out []FunctionCase
	for _, cv := range cases.Items() {
		args, _ := cv.Get("args")
		exp, _ := cv.Get("expect")
		out = append(out, FunctionCase{Args: args.Items(), Expect: exp})
	}
	return out, nil
}

// Kinds lists the schema kinds in INDEX.tsv.
func Kinds() ([]string, error) {
	dir, err := Dir()
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(filepath.Join(dir, "INDEX.tsv"))
	if err != nil {
		return nil, err
	}
	var kinds []string
	for i, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if i == 0 || line == "" {
			continue
		}
		kind, _, _ := strings.Cut(line, "\t")
		kinds = append(kinds, kind)
	}
	return kinds, nil
}

func readFile(name string) (canonjson.Value, error) {
	dir, err := Dir()
	if err != nil {
		return canonjson.Value{}, err
	}
	data, err := os.ReadFile(filepath.Join(dir, name))
	if err != nil {
		return canonjson.Value{}, err
	}
	v, err := canonjson.Decode(data)
	if err != nil {
		return canonjson.Value{}, fmt.Errorf("vectors: %s: %w", name, err)
	}
	return v, nil
}

func str(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}

// PathMatches reports whether an agentrt issue path agrees with a reference
// issue path. The reference reports value errors inside records at an
// internal encoding of the key ("u" and four hex digits per UTF-16 unit, or
// "i…" for ill-formed keys); such segments are decoded before comparing.
func PathMatches(got, want string) bool {
	if got == want {
		return true
	}
	tokens, ok := canonjson.SplitPointer(want)
	if !ok {
		return false
	}
	for i, t := range tokens {
		if k, ok := decodeRecordKey(t); ok {
			tokens[i] = k
		}
	}
	return got == canonjson.Pointer(tokens...)
}

func decodeRecordKey(t string) (string, bool) {
	if len(t) < 1 || (t[0] != 'u' && t[0] != 'i') || (len(t)-1)%4 != 0 {
		return "", false
	}
	var units []uint16
	for i := 1; i < len(t); i += 4 {
		var u uint16
		for _, c := range t[i : i+4] {
			u <<= 4
			switch {
			case c >= '0' && c <= '9':
				u |= uint16(c - '0')
			case c >= 'a' && c <= 'f':
				u |= uint16(c-'a') + 10
			default:
				return "", false
			}
		}
		units = append(units, u)
	}
	return canonjson.FromUTF16(units), true
}
