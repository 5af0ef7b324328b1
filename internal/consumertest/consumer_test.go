package consumertest

import (
	"archive/zip"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"

	"github.com/agentrt/agentrt/conformance"
)

const (
	envArchive = "AGENTRT_CONSUMER_ARCHIVE"
	envReport  = "AGENTRT_COHORT_REPORT"
	consumer   = "example.com/agentrt-consumer"
)

// TestExternalConsumer packs the module, serves it from a GOPROXY
// directory, and has a fresh module `go get` it and run a tool loop.
func TestExternalConsumer(t *testing.T) {
	if testing.Short() {
		t.Skip("external consumer: packs the module and resolves it through a local GOPROXY (about a minute); skipped under -short")
	}
	ctx, cancel := context.WithTimeout(t.Context(), 4*time.Minute)
	defer cancel()
	// go test puts its own GOROOT/bin first on PATH.
	goCmd, err := exec.LookPath("go")
	if err != nil {
		t.Skip("external consumer: no go command on PATH")
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	tmp := t.TempDir()

	// 1. The archive: the one given, or the module zip of the current
	// commit (with uncommitted changes to tracked files, so the test
	// checks what is being worked on) as a pseudo-version.
	zipData := archive(ctx, t, root)
	modPath, version, err := conformance.ArchiveIdentity(zipData)
	if err != nil {
		t.Fatalf("archive: %v", err)
	}
	t.Logf("installing %s@%s (%d bytes, sha256 %s)", modPath, version, len(zipData), conformance.BytesHash(zipData))

	// 2. The proxy directory (the GOPROXY protocol over file://).
	proxy := filepath.Join(tmp, "proxy")
	layout(t, proxy, modPath, version, zipData)

	// 3. A fresh consumer module, outside this repository.
	dir := filepath.Join(tmp, "consumer")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile(filepath.Join("testdata", "consumer", "main.go"))
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "main.go"), src)
	write(t, filepath.Join(dir, "go.mod"), []byte("module "+consumer+"\n\ngo 1.26\n"))

	upstream := strings.TrimSpace(output(ctx, t, root, nil, goCmd, "env", "GOPROXY"))
	if upstream == "" || upstream == "off" {
		upstream = "https://proxy.golang.org,direct"
	}
	env := []string{
		// This module only from the directory; its dependencies from the
		// machine's module cache (itself a GOPROXY tree), then the real
		// proxy.
		"GOPROXY=" + fileURL(proxy) + "," + fileURL(filepath.Join(goEnv(ctx, t, goCmd, "GOMODCACHE"), "cache", "download")) + "," + upstream,
		// A fresh module cache, so the packed version never lands in the
		// machine's, and writable so the temp dir can be removed.
		"GOMODCACHE=" + filepath.Join(tmp, "modcache"),
		"GOFLAGS=-mod=mod -modcacherw",
		// The packed version is not in the checksum database; its
		// dependencies are checked as usual. GOPRIVATE would also bypass
		// the proxy (GONOPROXY defaults to it), so it is cleared.
		"GONOSUMDB=" + modPath,
		"GOPRIVATE=",
		"GONOPROXY=",
		"GOWORK=off",
		"GOTOOLCHAIN=local",
	}
	output(ctx, t, dir, env, goCmd, "get", modPath+"@"+version)

	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	mf, err := modfile.Parse("go.mod", gomod, nil)
	if err != nil {
		t.Fatal(err)
	}
	required := ""
	for _, r := range mf.Require {
		if r.Mod.Path == modPath {
			required = r.Mod.Version
		}
	}
	if required != version || len(mf.Replace) != 0 || len(mf.Exclude) != 0 {
		t.Fatalf("consumer go.mod requires %s %q (want %s), %d replace, %d exclude:\n%s", modPath, required, version, len(mf.Replace), len(mf.Exclude), gomod)
	}

	bin := filepath.Join(tmp, "consumer-bin")
	output(ctx, t, dir, env, goCmd, "build", "-o", bin, ".")
	got := output(ctx, t, dir, env, bin)
	want, err := os.ReadFile(filepath.Join("testdata", "consumer", "want.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if got != string(want) {
		t.Errorf("consumer printed\n%s\nwant\n%s", got, want)
	}

	if out := os.Getenv(envReport); out != "" {
		report := cohortReport(ctx, t, dir, env, goCmd, modPath)
		write(t, out, report)
		t.Logf("cohort report written to %s", out)
	}
}

// archive returns the module zip to install.
func archive(ctx context.Context, t *testing.T, root string) []byte {
	t.Helper()
	if name := os.Getenv(envArchive); name != "" {
		data, err := os.ReadFile(name)
		if err != nil {
			t.Fatalf("%s: %v", envArchive, err)
		}
		return data
	}
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("external consumer: no git to pack the module with")
	}
	if _, err := os.Stat(filepath.Join(root, ".git")); err != nil {
		t.Skip("external consumer: not a git work tree (set " + envArchive + " to a module zip)")
	}
	// git stash create makes a commit of the tracked changes without
	// touching the work tree or any ref; it prints nothing when clean.
	rev := strings.TrimSpace(output(ctx, t, root, nil, "git", "stash", "create"))
	if rev == "" {
		rev = strings.TrimSpace(output(ctx, t, root, nil, "git", "rev-parse", "HEAD"))
	}
	secs := strings.TrimSpace(output(ctx, t, root, nil, "git", "show", "-s", "--format=%ct", rev))
	var unix int64
	if err := json.Unmarshal([]byte(secs), &unix); err != nil {
		t.Fatalf("commit time %q: %v", secs, err)
	}
	version := module.PseudoVersion("v0", "", time.Unix(unix, 0), rev[:12])
	gomod, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := conformance.CreateArchive(ctx, &buf, root, modfile.ModulePath(gomod), version, rev); err != nil {
		t.Fatalf("archive: %v", err)
	}
	return buf.Bytes()
}

// layout writes modPath@version into dir as a GOPROXY tree.
func layout(t *testing.T, dir, modPath, version string, zipData []byte) {
	t.Helper()
	escPath, err := module.EscapePath(modPath)
	if err != nil {
		t.Fatal(err)
	}
	escVer, err := module.EscapeVersion(version)
	if err != nil {
		t.Fatal(err)
	}
	at := filepath.Join(dir, filepath.FromSlash(escPath), "@v")
	if err := os.MkdirAll(at, 0o755); err != nil {
		t.Fatal(err)
	}
	zr, err := zip.NewReader(bytes.NewReader(zipData), int64(len(zipData)))
	if err != nil {
		t.Fatal(err)
	}
	var gomod []byte
	for _, f := range zr.File {
		if f.Name == modPath+"@"+version+"/go.mod" {
			rc, err := f.Open()
			if err != nil {
				t.Fatal(err)
			}
			gomod, err = io.ReadAll(rc)
			rc.Close()
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	if gomod == nil {
		t.Fatal("archive has no go.mod")
	}
	info, err := json.Marshal(map[string]string{"Version": version, "Time": "2026-01-01T00:00:00Z"})
	if err != nil {
		t.Fatal(err)
	}
	if module.IsPseudoVersion(version) {
		if tm, err := module.PseudoVersionTime(version); err == nil {
			info, _ = json.Marshal(map[string]string{"Version": version, "Time": tm.UTC().Format(time.RFC3339)})
		}
	}
	write(t, filepath.Join(at, "list"), []byte(version+"\n"))
	write(t, filepath.Join(at, escVer+".info"), info)
	write(t, filepath.Join(at, escVer+".mod"), gomod)
	write(t, filepath.Join(at, escVer+".zip"), zipData)
}

// cohortReport is what the consumer resolved: every module of its build
// list with the go.sum hash of its zip, the consumer's module and Go.
func cohortReport(ctx context.Context, t *testing.T, dir string, env []string, goCmd, modPath string) []byte {
	t.Helper()
	// Make go.sum carry a zip hash for every module in the build list.
	output(ctx, t, dir, env, goCmd, "mod", "download", "all")
	sums := map[string]string{}
	data, err := os.ReadFile(filepath.Join(dir, "go.sum"))
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(line)
		if len(f) == 3 && !strings.HasSuffix(f[1], "/go.mod") {
			sums[f[0]+"@"+f[1]] = f[2]
		}
	}
	dec := json.NewDecoder(strings.NewReader(output(ctx, t, dir, env, goCmd, "list", "-m", "-json", "all")))
	var mods []reportModule
	installed := ""
	for dec.More() {
		var m struct {
			Path, Version string
			Main          bool
		}
		if err := dec.Decode(&m); err != nil {
			t.Fatal(err)
		}
		if m.Main || m.Version == "" {
			continue
		}
		if s, ok := sums[m.Path+"@"+m.Version]; ok {
			mods = append(mods, reportModule{m.Path, m.Version, s})
			if m.Path == modPath {
				installed = m.Version
			}
		}
	}
	if installed == "" {
		t.Fatalf("cohort report: %s has no zip sum in the consumer's go.sum", modPath)
	}
	out, err := json.MarshalIndent(map[string]any{
		"consumer": map[string]any{"module": consumer, "go": runtime.Version(), "install": "go get " + modPath + "@" + installed, "moduleCount": len(mods)},
		"modules":  mods,
	}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return append(out, '\n')
}

// reportModule is one resolved module of the cohort report.
type reportModule struct {
	Path    string `json:"path"`
	Version string `json:"version"`
	Sum     string `json:"sum"`
}

func goEnv(ctx context.Context, t *testing.T, goCmd, name string) string {
	t.Helper()
	return strings.TrimSpace(output(ctx, t, "", nil, goCmd, "env", name))
}

func fileURL(dir string) string {
	return "file://" + filepath.ToSlash(dir)
}

func write(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// output runs a command and returns its stdout; a failure fails the test
// with its stderr.
func output(ctx context.Context, t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, stderr.String())
	}
	if d := time.Since(start); d > time.Second {
		t.Logf("%s %s: %s", filepath.Base(name), strings.Join(args, " "), d.Round(100*time.Millisecond))
	}
	return stdout.String()
}
