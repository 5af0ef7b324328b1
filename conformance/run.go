package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"os/exec"
	"path"
	"regexp"
	"slices"
	"strings"
)

// testEvent is the part of a `go test -json` (test2json) event read here.
type testEvent struct {
	Action  string
	Package string
	Test    string
}

// results maps import path → test name → observed status.
type results map[string]map[string]CaseStatus

// runTests runs `go test -json -count=1` once over the packages of every
// evidence file, restricted to the declared top-level tests, in dir (the
// module root). A run whose tests fail is evidence; only a run that
// reported nothing is an error. Test output other than the JSON events
// goes to log.
func runTests(ctx context.Context, goCmd, dir string, files []string, tops []string, timeout string, log io.Writer) (results, error) {
	var pkgs []string
	for _, f := range files {
		p := "./" + path.Dir(f)
		if !slices.Contains(pkgs, p) {
			pkgs = append(pkgs, p)
		}
	}
	slices.Sort(pkgs)
	quoted := make([]string, len(tops))
	for i, t := range tops {
		quoted[i] = regexp.QuoteMeta(t)
	}
	args := []string{"test", "-json", "-count=1", "-timeout", timeout, "-run", "^(" + strings.Join(quoted, "|") + ")$"}
	args = append(args, pkgs...)
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	var out bytes.Buffer
	cmd.Stdout = &out
	cmd.Stderr = log
	runErr := cmd.Run()
	res := results{}
	events := 0
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 0, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		var ev testEvent
		if len(line) == 0 || line[0] != '{' || json.Unmarshal(line, &ev) != nil {
			log.Write(append(line, '\n'))
			continue
		}
		events++
		if ev.Test == "" {
			continue
		}
		var st CaseStatus
		switch ev.Action {
		case "pass":
			st = Passed
		case "fail":
			st = Failed
		case "skip":
			st = Skipped
		default:
			continue
		}
		if res[ev.Package] == nil {
			res[ev.Package] = map[string]CaseStatus{}
		}
		res[ev.Package][ev.Test] = st
	}
	if err := sc.Err(); err != nil {
		return nil, &RunError{Reason: "reading the JSON report", Err: err}
	}
	if events == 0 {
		return nil, &RunError{Reason: "no JSON test report", Err: runErr}
	}
	return res, nil
}

// importPath returns the import path of the package holding file.
func importPath(modPath, file string) string {
	dir := path.Dir(file)
	if dir == "." {
		return modPath
	}
	return modPath + "/" + dir
}

// declaredTests returns the top-level Test functions declared in a Go
// source file, so that a case is only credited to the file that declares
// it.
func declaredTests(src []byte) map[string]bool {
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.SkipObjectResolution)
	if err != nil {
		return nil
	}
	out := map[string]bool{}
	for _, d := range f.Decls {
		fn, ok := d.(*ast.FuncDecl)
		if ok && fn.Recv == nil && isTestFunc(fn.Name.Name) {
			out[fn.Name.Name] = true
		}
	}
	return out
}
