package localproc_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/providers/localproc"
)

// imageDir is the test image: the helper program as /bin/helper and
// /bin/true, and a /tmp. It is built once per test binary.
var imageDir string

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "localproc-image-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := func() int {
		defer os.RemoveAll(dir)
		if err := buildImage(dir); err != nil {
			fmt.Fprintln(os.Stderr, "build the test image:", err)
			return 1
		}
		imageDir = dir
		return m.Run()
	}()
	os.Exit(code)
}

func buildImage(dir string) error {
	if err := os.Chmod(dir, 0o755); err != nil {
		return err
	}
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		return err
	}
	build := exec.Command("go", "build", "-o", filepath.Join(bin, "helper"), "./testdata/helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return fmt.Errorf("%w: %s", err, out)
	}
	data, err := os.ReadFile(filepath.Join(bin, "helper"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(bin, "true"), data, 0o755); err != nil {
		return err
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		return err
	}
	return os.Chmod(filepath.Join(dir, "tmp"), 0o1777)
}

// requireEnv, set to 1, turns a skip for a machine that cannot enforce
// exact processes into a failure: .ci/run sets it where it runs as root,
// so CI cannot pass by skipping these tests.
const requireEnv = "AGENTRT_REQUIRE_EXACT_PROCESS"

// skipUnavailable skips, or fails under requireEnv, a test that needs
// the exact-process launch path this machine does not offer.
func skipUnavailable(t testing.TB, why error) {
	t.Helper()
	if os.Getenv(requireEnv) == "1" {
		t.Fatalf("%s=1, but this machine cannot run exact processes: %v", requireEnv, why)
	}
	t.Skipf("this machine cannot run exact processes (%v); run as root on Linux with user, network and pid namespaces, or set %s=1 to make this a failure", why, requireEnv)
}

// newProvider is a provider over dir offering the test image; it skips
// the test on a machine that cannot enforce exact processes.
func newProvider(t testing.TB, dir string) *localproc.Provider {
	t.Helper()
	p, err := localproc.New(localproc.Options{Dir: dir, Images: []string{imageDir}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ExactProcessUnavailable(); err != nil {
		skipUnavailable(t, err)
	}
	t.Cleanup(func() { p.Close() })
	return p
}

func imageRef(t testing.TB) string {
	t.Helper()
	ref, err := localproc.ImageRef(imageDir)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

func createInput(t testing.TB, key string) *contract.CreateExactProcessInput {
	return &contract.CreateExactProcessInput{
		Image:          imageRef(t),
		Egress:         contract.EgressPolicy{Mode: contract.EgressBlocked},
		MaxLifetimeMs:  600_000,
		Resources:      contract.ExactProcessResources{CPU: 1, MemoryMB: 512, DiskMB: 64},
		Metadata:       map[string]canonjson.Value{"suite": canonjson.StringValue("localproc")},
		IdempotencyKey: key,
	}
}

func newEnv(t testing.TB, p *localproc.Provider, key string) contract.ExactProcessEnvironment {
	t.Helper()
	env, err := p.ExactProcess().Create(context.Background(), createInput(t, key))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { env.Destroy(context.Background()) })
	return env
}

func helper(args ...string) *contract.ExactProcessLaunch {
	return &contract.ExactProcessLaunch{Executable: "/bin/helper", Args: args, Cwd: "/tmp", Env: map[string]string{}, TimeoutMs: 20_000}
}

func readAll(t testing.TB, seq func(func([]byte, error) bool)) string {
	t.Helper()
	var b bytes.Buffer
	for chunk, err := range seq {
		if err != nil {
			t.Fatal(err)
		}
		b.Write(chunk)
	}
	return b.String()
}

// run spawns launch in env and waits for it.
func run(t testing.TB, env contract.ExactProcessEnvironment, launch *contract.ExactProcessLaunch) (contract.ExactProcess, string, string, *contract.ProcessTermination) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	proc, err := env.Processes().Spawn(ctx, launch)
	if err != nil {
		t.Fatalf("Spawn: %v", err)
	}
	stdout := readAll(t, proc.Stdout(ctx))
	stderr := readAll(t, proc.Stderr(ctx))
	term, err := proc.Wait(ctx)
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return proc, stdout, stderr, term
}

func exitTerm(code int64) *contract.ProcessTermination {
	return &contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: &code}
}

func sigkill() *contract.ProcessTermination {
	s := "SIGKILL"
	return &contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: &s}
}

// The provider passes the whole providertest suite; exact-process
// lifecycle recovery goes through a new Provider over the same Dir.
func TestConformance(t *testing.T) {
	in := createInput(t, "localproc-conformance")
	providertest.Run(t, func(t *testing.T) contract.Provider {
		return newProvider(t, t.TempDir())
	}, providertest.Options{
		Reconnect: func(p contract.Provider) contract.Provider {
			q, err := localproc.New(p.(*localproc.Provider).Options())
			if err != nil {
				t.Fatal(err)
			}
			return q
		},
		ExactProcess: providertest.ExactProcessOptions{
			CreateInput:    in,
			Launch:         helper("greet"),
			ExpectedStdout: "hello world\n",
			ExpectedStderr: "note: localproc\n",
		},
	})
}

// The child sees exactly the launch's environment: no ambient variable
// of the provider's process.
func TestSpawnEnvIsExactlyLaunchEnv(t *testing.T) {
	t.Setenv("LOCALPROC_AMBIENT_SECRET", "must-not-leak")
	env := newEnv(t, newProvider(t, t.TempDir()), "env")
	launch := helper("env")
	launch.Env = map[string]string{"A": "1", "PATH": "/bin", "TOKEN": "s3cret value"}
	_, stdout, _, term := run(t, env, launch)
	if want := "A=1\nPATH=/bin\nTOKEN=s3cret value\n"; stdout != want {
		t.Errorf("the child's environment is %q; want exactly %q", stdout, want)
	}
	if !contract.SameProcessTermination(term, exitTerm(0)) {
		t.Errorf("termination %+v", term)
	}
	launch.Env = map[string]string{}
	if _, stdout, _, _ := run(t, env, launch); stdout != "" {
		t.Errorf("with an empty env the child sees %q", stdout)
	}
}

// A bare executable name resolves along the launch's PATH inside the
// image; without PATH it is refused.
func TestExecutableAlongPath(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "path")
	launch := helper("argv", "x")
	launch.Executable = "helper"
	if _, err := env.Processes().Spawn(context.Background(), launch); !errors.Is(err, localproc.ErrLaunch) {
		t.Errorf("a bare name without PATH: %v; want ErrLaunch", err)
	}
	launch.Env = map[string]string{"PATH": "/nope:/bin"}
	if _, stdout, _, _ := run(t, env, launch); stdout != "x\n" {
		t.Errorf("stdout %q", stdout)
	}
}

// Arguments reach the program as they are: no shell interprets them.
func TestShellFreeArgv(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "argv")
	_, stdout, _, _ := run(t, env, helper("argv", "$HOME; ls", "*", "a b", `"q"`))
	if want := "$HOME; ls\n*\na b\n\"q\"\n"; stdout != want {
		t.Errorf("stdout %q; want %q", stdout, want)
	}
}

// Stdin is written, then closed: the child reads it to EOF.
func TestStdin(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "stdin")
	launch := helper("cat")
	in := "line one\n\x00binary\xff"
	launch.Stdin = &in
	if _, stdout, _, term := run(t, env, launch); stdout != in || !contract.SameProcessTermination(term, exitTerm(0)) {
		t.Errorf("cat echoed %q (%+v); want %q", stdout, term, in)
	}
	if _, stdout, _, _ := run(t, env, helper("cat")); stdout != "" {
		t.Errorf("without stdin cat echoed %q", stdout)
	}
}

// The process runs as the sandbox user, confined to the environment root,
// in its cwd.
func TestConfinement(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "confine")
	if _, stdout, _, _ := run(t, env, helper("id")); stdout != "65534 65534\n" {
		t.Errorf("uid gid %q; want the sandbox user 65534", stdout)
	}
	if _, stdout, _, _ := run(t, env, helper("pwd")); stdout != "/tmp <nil>\n" {
		t.Errorf("pwd %q", stdout)
	}
	_, stdout, _, _ := run(t, env, helper("ls", "/"))
	if stdout != "bin\ntmp\n" {
		t.Errorf("the process sees / as %q; want only the image (bin, tmp)", stdout)
	}
	launch := helper("pwd")
	launch.Cwd = "/nope"
	if _, err := env.Processes().Spawn(context.Background(), launch); !errors.Is(err, localproc.ErrLaunch) {
		t.Errorf("a missing cwd: %v; want ErrLaunch", err)
	}
}

// A child with egress blocked cannot reach a TCP server on the host's
// loopback, which the test process itself reaches.
func TestEgressBlocked(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var accepted sync.WaitGroup
	accepts := 0
	var mu sync.Mutex
	accepted.Add(1)
	go func() {
		defer accepted.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			accepts++
			mu.Unlock()
			c.Close()
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatalf("the test process cannot reach its own server: %v", err)
	}
	c.Close()

	env := newEnv(t, newProvider(t, t.TempDir()), "egress")
	_, stdout, _, term := run(t, env, helper("connect", ln.Addr().String()))
	if !strings.HasPrefix(stdout, "refused:") || !contract.SameProcessTermination(term, exitTerm(3)) {
		t.Errorf("the child connected or failed oddly: %q, %+v", stdout, term)
	}
	_, stdout, _, _ = run(t, env, helper("connect", "1.1.1.1:443"))
	if !strings.HasPrefix(stdout, "refused:") {
		t.Errorf("the child reached a public address: %q", stdout)
	}
	ln.Close()
	accepted.Wait()
	if accepts != 1 {
		t.Errorf("the server accepted %d connections; want only the test's own", accepts)
	}
	t.Logf("child: %s", strings.TrimSpace(stdout))
}

// Kill reports signal SIGKILL, never an exit; a second kill succeeds.
func TestKillReportsSIGKILL(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "kill")
	ctx := context.Background()
	proc, err := env.Processes().Spawn(ctx, helper("sleep", "60s"))
	if err != nil {
		t.Fatal(err)
	}
	st, err := proc.Status(ctx)
	if err != nil || !st.Running || st.ExitCode != -1 || st.Termination != nil {
		t.Fatalf("status of a running process: %+v, %v", st, err)
	}
	if err := proc.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	term, err := proc.Wait(ctx)
	if err != nil || !contract.SameProcessTermination(term, sigkill()) {
		t.Fatalf("a killed process ended %+v, %v; want signal SIGKILL", term, err)
	}
	st, _ = proc.Status(ctx)
	if st.Running || st.ExitCode != -1 || st.ExitSignal == nil || *st.ExitSignal != "SIGKILL" || !contract.SameProcessTermination(st.Termination, term) {
		t.Errorf("terminal status %+v", st)
	}
	if _, err := contract.Validate(contract.KindExactProcessStatus, contract.ExactProcessStatusSchema, st); err != nil {
		t.Error(err)
	}
	if err := proc.Kill(ctx); err != nil {
		t.Errorf("kill after the end: %v", err)
	}
}

// A timeout ends the process as timeout with the launch's timeoutMs.
func TestTimeout(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "timeout")
	launch := helper("sleep", "60s")
	launch.TimeoutMs = 200
	start := time.Now()
	_, _, _, term := run(t, env, launch)
	ms := int64(200)
	if !contract.SameProcessTermination(term, &contract.ProcessTermination{Kind: contract.TerminationTimeout, TimeoutMs: &ms}) {
		t.Errorf("termination %+v; want timeout 200", term)
	}
	if d := time.Since(start); d > 10*time.Second {
		t.Errorf("the timeout took %v", d)
	}
}

// A normal exit reports its code.
func TestExitCode(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "exit")
	for _, code := range []int64{0, 7, 255} {
		_, _, _, term := run(t, env, helper("exit", fmt.Sprint(code)))
		if !contract.SameProcessTermination(term, exitTerm(code)) {
			t.Errorf("exit %d ended %+v", code, term)
		}
	}
}

// marked lists the host pids whose environment holds mark.
func marked(mark string) []string {
	var pids []string
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err == nil && bytes.Contains(data, []byte(mark)) {
			pids = append(pids, e.Name())
		}
	}
	return pids
}

// Killing a child kills its grandchild too, even one in its own session.
func TestKillWholeTree(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "tree")
	ctx := context.Background()
	mark := fmt.Sprintf("LOCALPROC_TREE_MARK=%d", time.Now().UnixNano())
	launch := helper("fork", "60s")
	k, v, _ := strings.Cut(mark, "=")
	launch.Env = map[string]string{k: v}
	proc, err := env.Processes().Spawn(ctx, launch)
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for len(marked(mark)) < 2 {
		if time.Now().After(deadline) {
			t.Fatalf("the child and grandchild never both ran: %v", marked(mark))
		}
		time.Sleep(10 * time.Millisecond)
	}
	if err := proc.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if term, _ := proc.Wait(ctx); !contract.SameProcessTermination(term, sigkill()) {
		t.Errorf("termination %+v", term)
	}
	deadline = time.Now().Add(5 * time.Second)
	for left := marked(mark); len(left) > 0; left = marked(mark) {
		if time.Now().After(deadline) {
			t.Fatalf("processes of the killed tree survive: %v", left)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Files round-trip exactly with their exact mode; an oversized read is
// refused before loading; paths that leave the root are refused.
func TestFiles(t *testing.T) {
	dir := t.TempDir()
	env := newEnv(t, newProvider(t, dir), "files")
	ctx := context.Background()
	data := []byte{0, 1, 2, 0xff, '\n'}
	if err := env.WriteFile(ctx, "/tmp/f.bin", data, 0o640|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	got, err := env.ReadFile(ctx, "/tmp/f.bin", 5)
	if err != nil || !bytes.Equal(got, data) {
		t.Fatalf("ReadFile = %q, %v", got, err)
	}
	// White box: the file in the environment's root has the exact mode
	// and belongs to the sandbox user.
	info, err := os.Stat(filepath.Join(dir, "envs", env.ID(), "root", "tmp", "f.bin"))
	if err != nil || info.Mode() != 0o640|fs.ModeSetgid {
		t.Errorf("mode %v, %v; want %v", info.Mode(), err, 0o640|fs.ModeSetgid)
	}
	_, err = env.ReadFile(ctx, "/tmp/f.bin", 4)
	var tooLarge *contract.FileTooLargeError
	if !errors.As(err, &tooLarge) || tooLarge.Size != 5 || tooLarge.MaxBytes != 4 || !errors.Is(err, contract.ErrFileTooLarge) {
		t.Errorf("a read one byte short: %v", err)
	}
	if err := env.WriteFile(ctx, "/tmp/f.bin", []byte("x"), 0o10000); !errors.Is(err, contract.ErrFileMode) {
		t.Errorf("an invalid mode: %v", err)
	}
	// The process sees what WriteFile wrote.
	if _, stdout, _, _ := run(t, env, helper("ls", "/tmp")); stdout != "f.bin\n" {
		t.Errorf("the process lists /tmp as %q", stdout)
	}
	// A file the process wrote is read back; ".." stays inside the root.
	run(t, env, helper("write", "/tmp/out", "3"))
	if got, err := env.ReadFile(ctx, "/../../tmp/out", 3); err != nil || !bytes.Equal(got, []byte{0, 0, 0}) {
		t.Errorf("ReadFile(/../../tmp/out) = %q, %v", got, err)
	}
	if _, err := env.ReadFile(ctx, "/nope", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
	if _, err := env.ReadFile(ctx, "tmp/f.bin", 10); !errors.Is(err, localproc.ErrPath) {
		t.Errorf("a relative path: %v", err)
	}
	// Symbolic links that leave the root are refused, for reads and for
	// the parent of a write.
	root := filepath.Join(dir, "envs", env.ID(), "root")
	for name, target := range map[string]string{"abs": "/etc", "rel": "../../../../../../../etc"} {
		if err := os.Symlink(target, filepath.Join(root, "tmp", name)); err != nil {
			t.Fatal(err)
		}
		if got, err := env.ReadFile(ctx, "/tmp/"+name+"/hostname", 1<<20); !errors.Is(err, localproc.ErrPath) {
			t.Errorf("a read through a link to %s: %q, %v; want ErrPath", target, got, err)
		}
		if err := env.WriteFile(ctx, "/tmp/"+name+"/escape", []byte("x"), 0o644); !errors.Is(err, localproc.ErrPath) {
			t.Errorf("a write through a link to %s: %v; want ErrPath", target, err)
		}
	}
	if _, err := os.Stat("/etc/escape"); err == nil {
		t.Error("a write escaped to /etc/escape")
	}
}

// Two environments share no files and start without processes.
func TestFreshEnvironments(t *testing.T) {
	p := newProvider(t, t.TempDir())
	a, b := newEnv(t, p, "fresh-a"), newEnv(t, p, "fresh-b")
	ctx := context.Background()
	if a.ID() == b.ID() {
		t.Fatal("two keys, one environment")
	}
	if err := a.WriteFile(ctx, "/tmp/only-a", []byte("a"), 0o600); err != nil {
		t.Fatal(err)
	}
	run(t, a, helper("write", "/tmp/from-a-process", "1"))
	for _, f := range []string{"/tmp/only-a", "/tmp/from-a-process"} {
		if _, err := b.ReadFile(ctx, f, 10); !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("environment b sees %s of a: %v", f, err)
		}
	}
	if list, err := b.Processes().List(ctx); err != nil || len(list) != 0 {
		t.Errorf("b lists %v, %v", list, err)
	}
}

// A new Provider over the same Dir recovers environments and processes:
// identical output, the same termination, and a still-running process it
// can kill.
func TestRestartRecovery(t *testing.T) {
	dir := t.TempDir()
	p1 := newProvider(t, dir)
	env := newEnv(t, p1, "restart")
	ctx := context.Background()
	done, stdout, stderr, term := run(t, env, helper("greet"))
	failing, _, _, failTerm := run(t, env, helper("exit", "9"))
	sleeper, err := env.Processes().Spawn(ctx, helper("sleep", "60s"))
	if err != nil {
		t.Fatal(err)
	}
	p1.Close()

	p2 := newProvider(t, dir)
	got, err := p2.ExactProcess().Get(ctx, env.ID())
	if err != nil || got == nil {
		t.Fatalf("Get after restart: %v, %v", got, err)
	}
	if !equalMetadata(got.Metadata(), env.Metadata()) {
		t.Errorf("metadata %v; want %v", got.Metadata(), env.Metadata())
	}
	list, err := got.Processes().List(ctx)
	if err != nil || len(list) != 3 || list[0].PID != done.PID() || list[2].PID != sleeper.PID() || !list[2].Running {
		t.Fatalf("recovered processes %+v, %v", list, err)
	}
	for _, c := range []struct {
		proc   contract.ExactProcess
		stdout string
		stderr string
		term   *contract.ProcessTermination
	}{{done, stdout, stderr, term}, {failing, "", "", failTerm}} {
		rp, err := got.Processes().Get(ctx, c.proc.PID())
		if err != nil || rp == nil {
			t.Fatalf("Processes().Get(%d): %v, %v", c.proc.PID(), rp, err)
		}
		if o, e := readAll(t, rp.Stdout(ctx)), readAll(t, rp.Stderr(ctx)); o != c.stdout || e != c.stderr {
			t.Errorf("process %d replays %q, %q; want %q, %q", rp.PID(), o, e, c.stdout, c.stderr)
		}
		if rt, err := rp.Wait(ctx); err != nil || !contract.SameProcessTermination(rt, c.term) {
			t.Errorf("process %d recovered termination %+v, %v; want %+v", rp.PID(), rt, err, c.term)
		}
	}
	rs, err := got.Processes().Get(ctx, sleeper.PID())
	if err != nil || rs == nil {
		t.Fatalf("the running process was not recovered: %v", err)
	}
	if st, _ := rs.Status(ctx); !st.Running {
		t.Fatalf("the recovered sleeper is not running: %+v", st)
	}
	if err := rs.Kill(ctx); err != nil {
		t.Fatal(err)
	}
	if rt, _ := rs.Wait(ctx); !contract.SameProcessTermination(rt, sigkill()) {
		t.Errorf("the recovered kill ended %+v; want signal SIGKILL", rt)
	}
	if ot, _ := sleeper.Wait(ctx); !contract.SameProcessTermination(ot, sigkill()) {
		t.Errorf("the original handle reports %+v; want signal SIGKILL", ot)
	}
	// A third instance reads the recorded termination.
	p3 := newProvider(t, dir)
	e3, _ := p3.ExactProcess().Get(ctx, env.ID())
	r3, err := e3.Processes().Get(ctx, sleeper.PID())
	if err != nil || r3 == nil {
		t.Fatal(err)
	}
	if st, _ := r3.Status(ctx); st.Running || !contract.SameProcessTermination(st.Termination, sigkill()) {
		t.Errorf("third instance status %+v", st)
	}
}

func equalMetadata(a, b map[string]canonjson.Value) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || !canonjson.Equal(v, w) {
			return false
		}
	}
	return true
}

// The idempotency key survives a restart: the same input replays the
// environment, a changed one conflicts before any effect.
func TestKeyPersistsAcrossRestart(t *testing.T) {
	dir := t.TempDir()
	p1 := newProvider(t, dir)
	env := newEnv(t, p1, "persist")
	p1.Close()
	p2 := newProvider(t, dir)
	ctx := context.Background()
	again, err := p2.ExactProcess().Create(ctx, createInput(t, "persist"))
	if err != nil || again.ID() != env.ID() {
		t.Fatalf("replay after restart: %v, %v; want %s", again, err, env.ID())
	}
	changed := createInput(t, "persist")
	changed.Resources.MemoryMB++
	if got, err := p2.ExactProcess().Create(ctx, changed); !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Errorf("a changed input under the key: %v, %v; want ErrIdempotencyConflict", got, err)
	}
	if n := countEnvs(t, dir); n != 1 {
		t.Errorf("%d environments on disk; want 1", n)
	}
	// Destroyed, the key is free again.
	if err := again.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	fresh := newEnv(t, p2, "persist")
	if fresh.ID() == env.ID() {
		t.Error("a destroyed environment was replayed")
	}
}

func countEnvs(t testing.TB, dir string) int {
	entries, err := os.ReadDir(filepath.Join(dir, "envs"))
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), "lp-") {
			n++
		}
	}
	return n
}

// Sixteen concurrent creates with one key are one create effect.
func TestConcurrentCreateOneEffect(t *testing.T) {
	dir := t.TempDir()
	p := newProvider(t, dir)
	const n = 16
	ids := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			env, err := p.ExactProcess().Create(context.Background(), createInput(t, "concurrent"))
			errs[i] = err
			if env != nil {
				ids[i] = env.ID()
			}
		})
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil || ids[i] != ids[0] {
			t.Errorf("create %d: %s, %v; create 0: %s", i, ids[i], errs[i], ids[0])
		}
	}
	if c := countEnvs(t, dir); c != 1 {
		t.Errorf("%d environments on disk; want 1", c)
	}
	env, _ := p.ExactProcess().Get(context.Background(), ids[0])
	env.Destroy(context.Background())
}

// Images are digest-pinned local trees; egress other than blocked,
// provider options, and an image that changed are refused before any
// effect.
func TestCreateRefusals(t *testing.T) {
	dir := t.TempDir()
	p := newProvider(t, dir)
	ctx := context.Background()
	for name, mutate := range map[string]func(in *contract.CreateExactProcessInput){
		"tag": func(in *contract.CreateExactProcessInput) { in.Image = "ubuntu:24.04" },
		"unknown": func(in *contract.CreateExactProcessInput) {
			in.Image = localproc.ImageRefPrefix + strings.Repeat("0", 64)
		},
		"strict": func(in *contract.CreateExactProcessInput) {
			in.Egress = contract.EgressPolicy{Mode: contract.EgressStrict, AllowDomains: []string{"example.com"}}
		},
		"options": func(in *contract.CreateExactProcessInput) {
			in.ProviderOptions = map[string]canonjson.Value{"x": canonjson.StringValue("y")}
		},
	} {
		in := createInput(t, "refuse-"+name)
		mutate(in)
		if env, err := p.ExactProcess().Create(ctx, in); !errors.Is(err, contract.ErrUnsupported) {
			t.Errorf("%s: %v, %v; want ErrUnsupported", name, env, err)
		}
	}
	in := createInput(t, "refuse-resources")
	in.Resources = contract.ExactProcessResources{}
	if _, err := p.ExactProcess().Create(ctx, in); err == nil {
		t.Error("missing resources were accepted")
	}
	small := createInput(t, "refuse-disk")
	small.Resources.DiskMB = 1
	if _, err := p.ExactProcess().Create(ctx, small); !errors.Is(err, localproc.ErrImage) {
		t.Errorf("an image larger than diskMb: %v; want ErrImage", err)
	}
	if c := countEnvs(t, dir); c != 0 {
		t.Errorf("refused creates left %d environments", c)
	}
	if _, err := p.Create(ctx, &contract.CreateInput{}); !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("agent Create: %v; want ErrUnsupported", err)
	}
}

// An image changed after registration no longer materializes.
func TestChangedImageRefused(t *testing.T) {
	img := t.TempDir()
	if err := os.WriteFile(filepath.Join(img, "data"), []byte("v1"), 0o644); err != nil {
		t.Fatal(err)
	}
	p, err := localproc.New(localproc.Options{Dir: t.TempDir(), Images: []string{img}})
	if err != nil {
		t.Fatal(err)
	}
	if err := p.ExactProcessUnavailable(); err != nil {
		skipUnavailable(t, err)
	}
	ref := p.ImageRefs()[0]
	if err := os.WriteFile(filepath.Join(img, "data"), []byte("v2"), 0o644); err != nil {
		t.Fatal(err)
	}
	in := createInput(t, "changed")
	in.Image = ref
	if _, err := p.ExactProcess().Create(context.Background(), in); !errors.Is(err, localproc.ErrImage) {
		t.Errorf("a changed image: %v; want ErrImage", err)
	}
}

// maxLifetimeMs destroys the environment, also when the expiry passes
// while no instance runs.
func TestMaxLifetime(t *testing.T) {
	dir := t.TempDir()
	p := newProvider(t, dir)
	ctx := context.Background()
	in := createInput(t, "lifetime")
	in.MaxLifetimeMs = 2000
	env, err := p.ExactProcess().Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	proc, err := env.Processes().Spawn(ctx, helper("sleep", "60s"))
	if err != nil {
		t.Fatal(err)
	}
	if term, _ := proc.Wait(ctx); !contract.SameProcessTermination(term, sigkill()) {
		t.Errorf("the expiry ended the process %+v; want signal SIGKILL", term)
	}
	deadline := time.Now().Add(10 * time.Second)
	for got, _ := p.ExactProcess().Get(ctx, env.ID()); got != nil; got, _ = p.ExactProcess().Get(ctx, env.ID()) {
		if time.Now().After(deadline) {
			t.Fatal("the expired environment lives")
		}
		time.Sleep(20 * time.Millisecond)
	}

	in = createInput(t, "lifetime-restart")
	in.MaxLifetimeMs = 1000
	env, err = p.ExactProcess().Create(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	p.Close()
	time.Sleep(1200 * time.Millisecond)
	if _, err := os.Stat(filepath.Join(dir, "envs", env.ID())); err != nil {
		t.Fatalf("the environment vanished without an instance: %v", err)
	}
	p2 := newProvider(t, dir)
	if got, err := p2.ExactProcess().Get(ctx, env.ID()); got != nil || err != nil {
		t.Errorf("an environment expired during the restart: %v, %v", got, err)
	}
	if c := countEnvs(t, dir); c != 0 {
		t.Errorf("%d environments left", c)
	}
}

// memoryMb bounds what a process can allocate: 16 MiB fit in 64, 128 MiB
// do not.
func TestMemoryLimit(t *testing.T) {
	p := newProvider(t, t.TempDir())
	in := createInput(t, "memory")
	in.Resources.MemoryMB = 64
	env, err := p.ExactProcess().Create(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	if _, stdout, _, term := run(t, env, helper("alloc", "16")); stdout != "allocated 16\n" || !contract.SameProcessTermination(term, exitTerm(0)) {
		t.Errorf("16 MiB under memoryMb 64: %q, %+v", stdout, term)
	}
	_, stdout, _, term := run(t, env, helper("alloc", "128"))
	if stdout != "" || contract.SameProcessTermination(term, exitTerm(0)) {
		t.Errorf("128 MiB were allocated under memoryMb 64: %q, %+v", stdout, term)
	}
	t.Logf("128 MiB under memoryMb 64 ended %s", termString(term))
}

func termString(t *contract.ProcessTermination) string {
	switch {
	case t == nil:
		return "none"
	case t.ExitCode != nil:
		return fmt.Sprintf("%s %d", t.Kind, *t.ExitCode)
	case t.Signal != nil:
		return t.Kind + " " + *t.Signal
	case t.TimeoutMs != nil:
		return fmt.Sprintf("%s %d", t.Kind, *t.TimeoutMs)
	}
	return t.Kind
}

// A process that ended while no instance was there to reap it (its start
// is recorded, its termination is not, its host pid is gone) is recovered
// as cancelled: its exit status cannot be known, and none is invented.
func TestRecoveredUnobservedEndIsCancelled(t *testing.T) {
	dir := t.TempDir()
	p1 := newProvider(t, dir)
	env := newEnv(t, p1, "unobserved")
	done, _, _, _ := run(t, env, helper("greet"))
	p1.Close()
	// White box: make the record look like one whose supervisor died
	// before it reaped: no term.json, and a host pid that no longer runs.
	procDir := filepath.Join(dir, "envs", env.ID(), "procs", fmt.Sprint(done.PID()))
	if err := os.Remove(filepath.Join(procDir, "term.json")); err != nil {
		t.Fatal(err)
	}
	gone := exec.Command("/bin/true")
	if err := gone.Run(); err != nil {
		t.Skip("no /bin/true on the host:", err)
	}
	rec := fmt.Sprintf(`{"hostPid":%d,"pid":%d,"startTicks":1,"startedAtMs":1,"timeoutMs":0,"v":1}`, gone.Process.Pid, done.PID())
	if err := os.WriteFile(filepath.Join(procDir, "start.json"), []byte(rec), 0o600); err != nil {
		t.Fatal(err)
	}
	p2 := newProvider(t, dir)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	e2, err := p2.ExactProcess().Get(ctx, env.ID())
	if err != nil || e2 == nil {
		t.Fatal(err)
	}
	rp, err := e2.Processes().Get(ctx, done.PID())
	if err != nil || rp == nil {
		t.Fatal(err)
	}
	if out := readAll(t, rp.Stdout(ctx)); out != "hello world\n" {
		t.Errorf("the output was not kept: %q", out)
	}
	term, err := rp.Wait(ctx)
	if err != nil || term.Kind != contract.TerminationCancelled {
		t.Errorf("an unobserved end recovered as %s, %v; want cancelled", termString(term), err)
	}
	// Recorded: a later instance reports the same.
	p3 := newProvider(t, dir)
	e3, _ := p3.ExactProcess().Get(ctx, env.ID())
	r3, _ := e3.Processes().Get(ctx, done.PID())
	if st, _ := r3.Status(ctx); st.Running || !contract.SameProcessTermination(st.Termination, term) {
		t.Errorf("a later instance reports %+v", st)
	}
}

// Values of environment variables never reach an error.
func TestSecretsStayOutOfErrors(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "secrets")
	const secret = "hunter2-very-secret"
	for name, launch := range map[string]*contract.ExactProcessLaunch{
		"bad name":  {Executable: "/bin/helper", Args: []string{}, Cwd: "/", Env: map[string]string{"A=B": secret}},
		"nul value": {Executable: "/bin/helper", Args: []string{}, Cwd: "/", Env: map[string]string{"TOKEN": secret + "\x00"}},
		"no such":   {Executable: "/bin/none", Args: []string{}, Cwd: "/", Env: map[string]string{"TOKEN": secret}},
		"bad cwd":   {Executable: "/bin/helper", Args: []string{}, Cwd: "/none", Env: map[string]string{"TOKEN": secret}},
		"no PATH":   {Executable: "helper", Args: []string{}, Cwd: "/", Env: map[string]string{"TOKEN": secret}},
	} {
		_, err := env.Processes().Spawn(context.Background(), launch)
		if err == nil {
			t.Errorf("%s: accepted", name)
		} else if strings.Contains(err.Error(), secret) {
			t.Errorf("%s: the error shows a value: %v", name, err)
		}
	}
}

// A Spawn whose context ended is refused before anything starts, and a
// destroyed environment refuses every operation but Destroy.
func TestSpawnCancelledAndDestroyed(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "cancel")
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if proc, err := env.Processes().Spawn(ctx, helper("greet")); err == nil || proc != nil {
		t.Errorf("a cancelled Spawn: %v, %v", proc, err)
	}
	if list, _ := env.Processes().List(context.Background()); len(list) != 0 {
		t.Errorf("a cancelled Spawn left %v", list)
	}
	bg := context.Background()
	sleeper, err := env.Processes().Spawn(bg, helper("sleep", "60s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Destroy(bg); err != nil {
		t.Fatal(err)
	}
	if term, _ := sleeper.Wait(bg); !contract.SameProcessTermination(term, sigkill()) {
		t.Errorf("Destroy ended a running process as %s; want signal SIGKILL", termString(term))
	}
	if _, err := env.Processes().Spawn(bg, helper("greet")); !errors.Is(err, localproc.ErrDestroyed) {
		t.Errorf("Spawn after Destroy: %v", err)
	}
	if _, err := env.ReadFile(bg, "/tmp", 1); !errors.Is(err, localproc.ErrDestroyed) {
		t.Errorf("ReadFile after Destroy: %v", err)
	}
	if err := env.WriteFile(bg, "/tmp/x", nil, 0o600); !errors.Is(err, localproc.ErrDestroyed) {
		t.Errorf("WriteFile after Destroy: %v", err)
	}
	if err := env.Destroy(bg); err != nil {
		t.Errorf("a second Destroy: %v", err)
	}
}

// A file larger than diskMb cannot be written by a process.
func TestDiskLimit(t *testing.T) {
	p := newProvider(t, t.TempDir())
	in := createInput(t, "disk")
	in.Resources.DiskMB = 8
	env, err := p.ExactProcess().Create(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	defer env.Destroy(context.Background())
	_, stdout, _, term := run(t, env, helper("write", "/tmp/big", fmt.Sprint(9<<20)))
	if contract.SameProcessTermination(term, exitTerm(0)) {
		t.Errorf("a 9 MiB file was written under diskMb 8: %q", stdout)
	}
	t.Logf("%q %+v", stdout, term)
	if err := env.WriteFile(context.Background(), "/tmp/big", make([]byte, 9<<20), 0o644); err == nil {
		t.Error("WriteFile wrote more than diskMb")
	}
}

func BenchmarkSpawnWait(b *testing.B) {
	env := newEnv(b, newProvider(b, b.TempDir()), "bench")
	launch := &contract.ExactProcessLaunch{Executable: "/bin/true", Args: []string{}, Cwd: "/", Env: map[string]string{}}
	ctx := context.Background()
	for b.Loop() {
		proc, err := env.Processes().Spawn(ctx, launch)
		if err != nil {
			b.Fatal(err)
		}
		if term, err := proc.Wait(ctx); err != nil || term.Kind != contract.TerminationExit {
			b.Fatal(term, err)
		}
	}
}

// A process that has ended has a termination its Wait knows, and Kill
// leaves it alone: both answer so under an ended context too, rather
// than that context's error half the time (their wait's select had the
// process's end and ctx's end ready at once). contract.ExactProcess:
// "Wait blocks until the process terminated"; Kill: "A process that
// already ended is left alone".
func TestEndedProcessWaitAndKillUnderAnEndedContext(t *testing.T) {
	env := newEnv(t, newProvider(t, t.TempDir()), "ended-wait")
	proc, _, _, term := run(t, env, helper("greet"))
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 300 {
		got, err := proc.Wait(gone)
		if err != nil || !reflect.DeepEqual(got, term) {
			t.Fatalf("run %d: Wait of the ended process under an ended context = %+v, %v; want %+v", i, got, err, term)
		}
		if err := proc.Kill(gone); err != nil {
			t.Fatalf("run %d: Kill of the ended process under an ended context = %v, want nil", i, err)
		}
	}
}
