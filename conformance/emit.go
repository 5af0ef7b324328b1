package conformance

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// EmitOptions are the inputs of [Emit].
type EmitOptions struct {
	// SourceRoot is the module root: go.mod, the evidence files and the
	// git repository. Empty means the current directory.
	SourceRoot string
	// Capabilities is the capabilities.json path; empty means
	// SourceRoot/conformance/capabilities.json.
	Capabilities string
	// Archive is the module zip the manifest speaks for.
	Archive []byte
	// Version is the release version; the archive must hold
	// modulePath@Version. Empty takes the archive's version.
	Version string
	// SourceCommit is the full commit; empty asks git for HEAD.
	SourceCommit string
	// CohortReport is the cohort report, kept verbatim.
	CohortReport []byte
	// CohortPins, when set, is release/cohort.json; a report that
	// disagrees with it is refused (CM-08).
	CohortPins []byte
	// Sandbox is recorded as sandboxVersions.
	Sandbox SandboxVersions
	// SkipTests marks every case missing without running anything (a dry
	// run: every capability with evidence comes out unproven).
	SkipTests bool
	// GoCommand is the go command; empty means "go".
	GoCommand string
	// Timeout is go test's -timeout; empty means "10m".
	Timeout string
	// Log receives go test's non-JSON output; nil discards it.
	Log io.Writer
}

// Emit runs the tests that capabilities.json names, records what they
// reported per declared case, resolves each capability's status and
// returns the sealed manifest. Identical inputs give an identical
// manifest: nothing time- or run-dependent is recorded.
func Emit(ctx context.Context, o EmitOptions) (*Manifest, error) {
	root := o.SourceRoot
	if root == "" {
		root = "."
	}
	goCmd := o.GoCommand
	if goCmd == "" {
		goCmd = "go"
	}
	timeout := o.Timeout
	if timeout == "" {
		timeout = "10m"
	}
	log := o.Log
	if log == nil {
		log = io.Discard
	}
	capPath := o.Capabilities
	if capPath == "" {
		capPath = filepath.Join(root, "conformance", "capabilities.json")
	}
	capBytes, err := readLimited(capPath)
	if err != nil {
		return nil, err
	}
	caps, err := ParseCapabilities(capBytes)
	if err != nil {
		return nil, err
	}
	gomod, err := readLimited(filepath.Join(root, "go.mod"))
	if err != nil {
		return nil, err
	}
	modPath := modfile.ModulePath(gomod)
	if modPath == "" {
		return nil, fmt.Errorf("%s: no module directive", filepath.Join(root, "go.mod"))
	}

	if o.Archive == nil {
		return nil, errors.New("conformance: no archive")
	}
	name, version, err := ArchiveIdentity(o.Archive)
	if err != nil {
		return nil, err
	}
	if name != modPath {
		return nil, &ArchiveError{Reason: fmt.Sprintf("holds module %s, the source root is %s", name, modPath)}
	}
	if o.Version != "" && version != o.Version {
		return nil, &ArchiveError{Reason: fmt.Sprintf("holds version %s, not %s", version, o.Version)}
	}

	cohort, mods, err := ParseCohortReport(o.CohortReport)
	if err != nil {
		return nil, err
	}
	if o.CohortPins != nil {
		pins, err := ParseCohortPins(o.CohortPins)
		if err != nil {
			return nil, err
		}
		if errs := CheckCohort(pins, mods); len(errs) > 0 {
			return nil, errors.Join(errs...)
		}
	}

	commit := o.SourceCommit
	if commit == "" {
		if commit, err = gitOutput(ctx, root, "rev-parse", "HEAD"); err != nil {
			return nil, err
		}
	}
	if !isHex(commit, 40) {
		return nil, fmt.Errorf("conformance: source commit %q is not a full 40-hex commit", commit)
	}
	env, err := goEnv(ctx, goCmd, root)
	if err != nil {
		return nil, err
	}

	// Collect the evidence files and their declared top-level tests.
	var files, tops []string
	for _, key := range caps.Keys() {
		for _, e := range caps.Capabilities[key].Evidence {
			if !slices.Contains(files, e.File) {
				files = append(files, e.File)
			}
			for _, c := range e.Cases {
				top, _, _ := strings.Cut(c, "/")
				if !slices.Contains(tops, top) {
					tops = append(tops, top)
				}
			}
		}
	}
	slices.Sort(files)
	slices.Sort(tops)
	src := map[string][]byte{}
	for _, f := range files {
		b, err := readLimited(filepath.Join(root, filepath.FromSlash(f)))
		if err != nil {
			return nil, fmt.Errorf("evidence file: %w", err)
		}
		src[f] = b
	}
	res := results{}
	if !o.SkipTests && len(files) > 0 {
		if res, err = runTests(ctx, goCmd, root, files, tops, timeout, log); err != nil {
			return nil, err
		}
	}

	m := &Manifest{
		SchemaVersion: ManifestSchema,
		Package: Package{
			Name: name, Version: version, SourceCommit: commit, SHA256: BytesHash(o.Archive),
			BuildIdentity: BuildIdentity{CapabilityMap: BytesHash(capBytes), PackageManager: env.Go},
		},
		Cohort:          cohort,
		SandboxVersions: SandboxVersions{PeerRange: o.Sandbox.PeerRange, Verified: slices.Clone(o.Sandbox.Verified)},
		Environment:     env,
		Capabilities:    map[string]Capability{},
		VerifiedBy:      VerifiedBy{Tool: VerifierTool, Version: version},
	}
	if m.SandboxVersions.Verified == nil {
		m.SandboxVersions.Verified = []string{}
	}
	for _, key := range caps.Keys() {
		spec := caps.Capabilities[key]
		c := Capability{Scenario: spec.Scenario, Summary: spec.Summary, Evidence: []Evidence{}}
		for _, e := range spec.Evidence {
			declared := declaredTests(src[e.File])
			pkg := res[importPath(modPath, e.File)]
			ev := Evidence{File: e.File, SHA256: BytesHash(src[e.File]), Cases: []Case{}}
			for _, name := range e.Cases {
				st := Missing
				top, _, _ := strings.Cut(name, "/")
				if got, ok := pkg[name]; ok && declared[top] {
					st = got
				}
				ev.Cases = append(ev.Cases, Case{Name: name, Status: st})
			}
			c.Evidence = append(c.Evidence, ev)
		}
		c.Status = Resolve(caseStatuses(c.Evidence))
		m.Capabilities[key] = c
	}
	if err := m.Seal(); err != nil {
		return nil, err
	}
	return m, nil
}

// readLimited reads a whole file of at most maxDocument bytes.
func readLimited(name string) ([]byte, error) {
	f, err := os.Open(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxDocument+1))
	if err != nil {
		return nil, err
	}
	if len(b) > maxDocument {
		return nil, fmt.Errorf("%s is larger than %d bytes", name, maxDocument)
	}
	return b, nil
}

func gitOutput(ctx context.Context, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "git", args...)
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %w", strings.Join(args, " "), err)
	}
	return strings.TrimSpace(string(out)), nil
}

// goEnv asks the go command that runs the tests for its version and
// target platform.
func goEnv(ctx context.Context, goCmd, dir string) (Environment, error) {
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOVERSION", "GOOS", "GOARCH")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return Environment{}, &RunError{Reason: "go env", Err: err}
	}
	f := strings.Fields(string(out))
	if len(f) != 3 {
		return Environment{}, &RunError{Reason: fmt.Sprintf("go env printed %q", out)}
	}
	return Environment{Go: f[0], Platform: f[1] + "-" + f[2]}, nil
}
