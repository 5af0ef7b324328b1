package cli_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/contract/wire"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/providers/localproc"
	"github.com/agentrt/agentrt/providers/remote"
)

// requireExactProcessEnv, set to 1, makes a machine that cannot run
// localproc's exact processes a failure instead of a skip (the rule of
// providers/localproc's own tests; .ci/run sets it where it runs as
// root).
const requireExactProcessEnv = "AGENTRT_REQUIRE_EXACT_PROCESS"

// localprocImage builds the localproc test image — its helper program as
// /bin/helper, and a /tmp — and returns the directory, after checking
// that this machine runs exact processes (else the test skips, or fails
// under requireExactProcessEnv).
func localprocImage(t *testing.T) string {
	t.Helper()
	probe, err := localproc.New(localproc.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	probe.Close()
	if why := probe.ExactProcessUnavailable(); why != nil {
		if os.Getenv(requireExactProcessEnv) == "1" {
			t.Fatalf("%s=1, but this machine cannot run exact processes: %v", requireExactProcessEnv, why)
		}
		t.Skipf("this machine cannot run exact processes (%v); run as root on Linux with user, network and pid namespaces, or set %s=1 to make this a failure", why, requireExactProcessEnv)
	}
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	build := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(dir, "bin", "helper"), "../../providers/localproc/testdata/helper")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the image's helper: %v: %s", err, out)
	}
	if err := os.Chmod(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(filepath.Join(dir, "tmp"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(filepath.Join(dir, "tmp"), 0o1777); err != nil {
		t.Fatal(err)
	}
	return dir
}

func localprocInput(t *testing.T, image, key string) *contract.CreateExactProcessInput {
	t.Helper()
	ref, err := localproc.ImageRef(image)
	if err != nil {
		t.Fatal(err)
	}
	return &contract.CreateExactProcessInput{
		Image:          ref,
		Egress:         contract.EgressPolicy{Mode: contract.EgressBlocked},
		MaxLifetimeMs:  600_000,
		Resources:      contract.ExactProcessResources{CPU: 1, MemoryMB: 512, DiskMB: 64},
		Metadata:       map[string]canonjson.Value{"suite": canonjson.StringValue("serve-localproc")},
		IdempotencyKey: key,
	}
}

func helperLaunch(args ...string) *contract.ExactProcessLaunch {
	return &contract.ExactProcessLaunch{Executable: "/bin/helper", Args: args, Cwd: "/tmp", Env: map[string]string{}, TimeoutMs: 60_000}
}

// exactClient is providers/remote's exact facet of the server at url.
func exactClient(t *testing.T, url string) contract.ExactProcessProvider {
	t.Helper()
	p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	exposed, err := p.Exposed(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	h, ok := exposed.(contract.ExactProcessHost)
	if !ok || h.ExactProcess() == nil {
		t.Fatal("the served localproc provider exposes no exactProcess")
	}
	return h.ExactProcess()
}

// Issue 14 (serve gaps, item 4): `agentrt serve --provider localproc`
// serves real local processes through providers/remote — create, spawn,
// output and termination, file write and exact read back, kill
// acknowledged as a SIGKILL termination, destroy — and the whole
// providertest suite (its exact-process-lifecycle family; EXP-01..EXP-13)
// passes on remote→serve→localproc, recovery through a reconnected
// client.
func TestServeLocalprocThroughRemote(t *testing.T) {
	image := localprocImage(t)
	url := startServe(t, "--provider", "localproc", "--state-dir", t.TempDir(), "--image", image,
		"--db", filepath.Join(t.TempDir(), "serve.db"))
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	facet := exactClient(t, url)
	env, err := facet.Create(ctx, localprocInput(t, image, "serve-localproc-e2e"))
	if err != nil {
		t.Fatal(err)
	}
	proc, err := env.Processes().Spawn(ctx, helperLaunch("greet"))
	if err != nil {
		t.Fatal(err)
	}
	term, err := proc.Wait(ctx)
	if err != nil || term.Kind != contract.TerminationExit || term.ExitCode == nil || *term.ExitCode != 0 {
		t.Fatalf("greet ended %+v, %v; want exit 0", term, err)
	}
	if got := readStream(t, proc.Stdout(ctx)); got != "hello world\n" {
		t.Errorf("stdout %q, want %q", got, "hello world\n")
	}
	if got := readStream(t, proc.Stderr(ctx)); got != "note: localproc\n" {
		t.Errorf("stderr %q, want %q", got, "note: localproc\n")
	}
	data := []byte{0, 1, 2, 0xff, '\n'}
	if err := env.WriteFile(ctx, "/tmp/exact.bin", data, 0o640); err != nil {
		t.Fatal(err)
	}
	back, err := env.ReadFile(ctx, "/tmp/exact.bin", 64)
	if err != nil || string(back) != string(data) {
		t.Fatalf("read back %v, %v; want %v", back, err, data)
	}
	sleeper, err := env.Processes().Spawn(ctx, helperLaunch("sleep", "50s"))
	if err != nil {
		t.Fatal(err)
	}
	if err := sleeper.Kill(ctx); err != nil {
		t.Fatalf("kill: %v", err)
	}
	term, err = sleeper.Wait(ctx)
	if err != nil || term.Kind != contract.TerminationSignal || term.Signal == nil || *term.Signal != "SIGKILL" {
		t.Fatalf("a killed process ended %+v, %v; want signal SIGKILL", term, err)
	}
	if err := env.Destroy(ctx); err != nil {
		t.Fatal(err)
	}
	if got, err := facet.Get(ctx, env.ID()); err != nil || got != nil {
		t.Fatalf("after destroy Get answers %v, %v; want nothing", got, err)
	}

	exposed := func() contract.Provider {
		p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
		if err != nil {
			panic(err)
		}
		e, err := p.Exposed(context.Background())
		if err != nil {
			panic(err)
		}
		return e
	}
	providertest.Run(t, func(t *testing.T) contract.Provider { return exposed() }, providertest.Options{
		Reconnect: func(contract.Provider) contract.Provider { return exposed() },
		ExactProcess: providertest.ExactProcessOptions{
			CreateInput:    localprocInput(t, image, "serve-localproc-conformance"),
			Launch:         helperLaunch("greet"),
			ExpectedStdout: "hello world\n",
			ExpectedStderr: "note: localproc\n",
		},
	})
}

func readStream(t *testing.T, seq func(func([]byte, error) bool)) string {
	t.Helper()
	var b strings.Builder
	for chunk, err := range seq {
		if err != nil {
			t.Fatalf("reading output: %v", err)
		}
		b.Write(chunk)
	}
	return b.String()
}

// spawnOnce sends one exact spawn under operation id op, as a client
// whose answer may be lost does, and returns the status and body.
func spawnOnce(t *testing.T, url, envID, op string) (int, []byte) {
	t.Helper()
	body := `{"operationId":"` + op + `","launch":{"executable":"/bin/helper","args":["sleep","2s"],"cwd":"/tmp","env":{},"timeoutMs":60000}}`
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/exact/environments/"+envID+"/processes", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+serveToken)
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, out
}

// Issue 14 (serve gaps, item 1; EXP-11 across a restart): a spawn whose
// answer was lost is re-sent to a real `agentrt serve` killed (SIGKILL)
// and restarted on the same store and state directory in between: the
// restarted server answers with the process the first one started —
// its status told truthfully, whatever became of it while no server
// was there — and starts no second process.
func TestServeSpawnSurvivesRestart(t *testing.T) {
	image := localprocImage(t)
	args := []string{"--provider", "localproc", "--state-dir", t.TempDir(), "--image", image,
		"--db", filepath.Join(t.TempDir(), "serve.db")}
	url, kill := startKillableServe(t, args...)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	env, err := exactClient(t, url).Create(ctx, localprocInput(t, image, "serve-spawn-restart"))
	if err != nil {
		t.Fatal(err)
	}
	status, body := spawnOnce(t, url, env.ID(), "spawn-lost-answer")
	if status != http.StatusOK {
		t.Fatalf("spawn: %d %s", status, body)
	}
	first, err := wire.ParseExactProcessStatus(body)
	if err != nil {
		t.Fatal(err)
	}
	kill() // the answer is lost with the server

	url = startServe(t, args...)
	status, body = spawnOnce(t, url, env.ID(), "spawn-lost-answer")
	if status != http.StatusOK {
		t.Fatalf("re-sent spawn after the restart: %d %s", status, body)
	}
	again, err := wire.ParseExactProcessStatus(body)
	if err != nil {
		t.Fatal(err)
	}
	if again.PID != first.PID {
		t.Fatalf("the restarted server answered pid %d, want %d (the first spawn's)", again.PID, first.PID)
	}
	if !again.Running && again.Termination == nil {
		t.Fatalf("the replayed status %s is neither running nor terminated", body)
	}
	renv, err := exactClient(t, url).Get(ctx, env.ID())
	if err != nil || renv == nil {
		t.Fatalf("the restarted server lost the environment: %v", err)
	}
	list, err := renv.Processes().List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pids := make([]int64, 0, len(list))
	for _, st := range list {
		pids = append(pids, st.PID)
	}
	if !slices.Equal(pids, []int64{first.PID}) {
		t.Fatalf("the environment's processes are %v, want only pid %d", pids, first.PID)
	}
	// The same operation id with another launch is still a conflict.
	other := `{"operationId":"spawn-lost-answer","launch":{"executable":"/bin/helper","args":["greet"],"cwd":"/tmp","env":{},"timeoutMs":60000}}`
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/exact/environments/"+env.ID()+"/processes", strings.NewReader(other))
	req.Header.Set("Authorization", "Bearer "+serveToken)
	req.Header.Set("Content-Type", wire.ContentTypeJSON)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusConflict {
		t.Fatalf("another launch under the used operation id: %d, want 409", resp.StatusCode)
	}
	_ = renv.Destroy(ctx)
}

// `agentrt serve` refuses localproc flags that do not fit, before it
// listens, saying what to give instead.
func TestServeLocalprocFlagsRefused(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"state dir without localproc", []string{"--provider", "scripted", "--state-dir", t.TempDir()}, "apply to --provider localproc only"},
		{"image without localproc", []string{"--image", t.TempDir()}, "apply to --provider localproc only"},
		{"localproc without a state dir", []string{"--provider", "localproc"}, "needs --state-dir"},
		{"localproc with a script", []string{"--provider", "localproc", "--state-dir", t.TempDir(), "--script", "s.json"}, "do not apply to --provider localproc"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
			var out, errOut bytes.Buffer
			code := cli.Main(context.Background(), append([]string{"serve", "--listen", "127.0.0.1:0"}, tt.args...),
				cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
			if code != cli.ExitUsage || !strings.Contains(errOut.String(), tt.want) {
				t.Fatalf("exit %d, stderr %q; want usage (%d) saying %q", code, errOut.String(), cli.ExitUsage, tt.want)
			}
		})
	}
}
