package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"github.com/agentrt/agentrt/providers/scripted"
	neturl "net/url"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/internal/servetest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
)

const serveToken = "serve-test-token-0123456789"

var listening = regexp.MustCompile(`listening on (http://127\.0\.0\.1:\d+)`)

// startServe runs `agentrt serve` as a real child process on a free
// loopback port and returns its base URL once it listens. The process is
// interrupted (then killed) when the test ends; its stderr is checked
// for the token.
func startServe(t *testing.T, args ...string) string {
	t.Helper()
	url, _ := startKillableServe(t, args...)
	return url
}

// startKillableServe is startServe that also returns kill, which kills
// the process (SIGKILL) and waits until it is gone; after kill the
// cleanup expects no graceful shutdown.
func startKillableServe(t *testing.T, args ...string) (url string, kill func()) {
	t.Helper()
	return startServeWithEnv(t, nil, args...)
}

// startServeWithEnv is startKillableServe with env added to the server
// process's environment.
func startServeWithEnv(t *testing.T, env []string, args ...string) (url string, kill func()) {
	t.Helper()
	var killed atomic.Bool
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// A test's server stops within 15 s even with a turn left live (the
	// grace is 30 s by default).
	cmd := exec.Command(exe, append([]string{"serve", "--listen", "127.0.0.1:0", "--shutdown-grace", "5s"}, args...)...)
	cmd.Env = slices.Concat(os.Environ(), []string{servetest.Home(t)}, env, []string{"AGENTRT_CLI_CHILD=1", "AGENTRT_SERVE_TOKEN=" + serveToken})
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var log bytes.Buffer
	found := make(chan string, 1)
	// read ends once the server closed its stderr (it exited); Wait may
	// be called only then, or it closes the pipe under the reader and the
	// last lines — "stopped" among them — are lost.
	read := make(chan struct{})
	go func() {
		defer close(read)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			mu.Lock()
			log.WriteString(sc.Text() + "\n")
			mu.Unlock()
			if m := listening.FindStringSubmatch(sc.Text()); m != nil {
				select {
				case found <- m[1]:
				default:
				}
			}
		}
	}()
	kill = func() {
		killed.Store(true)
		_ = cmd.Process.Kill()
		<-read
	}
	t.Cleanup(func() {
		if killed.Load() {
			_ = cmd.Wait()
			return
		}
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-read:
		case <-time.After(15 * time.Second):
			_ = cmd.Process.Kill()
			<-read
		}
		_ = cmd.Wait()
		mu.Lock()
		defer mu.Unlock()
		if strings.Contains(log.String(), serveToken) {
			t.Errorf("the server's log carries its token")
		}
		for _, kv := range env {
			if name, key, _ := strings.Cut(kv, "="); strings.HasSuffix(name, "_API_KEY") && key != "" && strings.Contains(log.String(), key) {
				t.Errorf("the server's log carries %s", name)
			}
		}
		for _, a := range args {
			if u, err := neturl.Parse(a); err == nil && u.User != nil {
				if pw, ok := u.User.Password(); ok && strings.Contains(log.String(), pw+"@") {
					t.Errorf("the server's log carries the database password")
				}
			}
		}
		if !strings.Contains(log.String(), "agentrt serve: stopped") {
			t.Errorf("the server did not shut down gracefully; its log:\n%s", log.String())
		}
	})
	select {
	case url := <-found:
		return url, kill
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatal("agentrt serve did not report its listen address")
		return "", nil
	}
}

// The conformance suite passes on providers/remote against a real
// `agentrt serve` process serving the scripted provider.
func TestRemoteConformanceAgainstServeProcess(t *testing.T) {
	url := startServe(t, "--provider", "scripted", "--script", writeFile(t, "script.json", scripted.ConformanceScript), "--db", writeFile(t, "unused", "")+".db")
	// Exposed: the provider offers what the server serves of the scripted
	// provider, profile validation included.
	exposed := func() (contract.Provider, error) {
		p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
		if err != nil {
			return nil, err
		}
		return p.Exposed(context.Background())
	}
	providertest.Run(t, func(t *testing.T) contract.Provider {
		p, err := exposed()
		if err != nil {
			t.Fatal(err)
		}
		return p
	}, providertest.Options{
		RequireUsage: true,
		Sessions:     providertest.SessionOptions{LivePrompt: "providertest: live"},
		Interactions: providertest.InteractionOptions{Prompt: "providertest: ask", ExpirePrompt: "providertest: expire",
			UnreachablePrompt: "providertest: unreachable"},
		// The served provider's own effect counts, read over the wire: the
		// evidence that a refused or replayed transfer or continuation
		// dispatched nothing.
		PortableContext: providertest.PortableContextOptions{Counters: func(p contract.Provider) providertest.ContextCounters {
			counts, err := p.(interface {
				Effects(context.Context) (map[string]int64, error)
			}).Effects(context.Background())
			if err != nil {
				panic(err)
			}
			return providertest.ContextCounters{Transfers: counts["transfers"], FreshSessions: counts["freshSessions"],
				NativeContinuations: counts["nativeContinuations"]}
		}},
		// Exact processes over the wire (issue 14; EXP-01..EXP-13): the
		// scripted provider's exact image, driven through the served routes;
		// recovery goes through a reconnected client.
		ExactProcess: providertest.ExactProcessOptions{
			CreateInput: &contract.CreateExactProcessInput{
				Image:          "registry.example.com/providertest@sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
				Egress:         contract.EgressPolicy{Mode: contract.EgressBlocked},
				MaxLifetimeMs:  600_000,
				Resources:      contract.ExactProcessResources{CPU: 0.5, MemoryMB: 256, DiskMB: 1},
				Metadata:       map[string]canonjson.Value{"suite": canonjson.StringValue("serve")},
				IdempotencyKey: "serve-exact",
			},
			Launch:         &contract.ExactProcessLaunch{Executable: "/opt/tool/greet", Args: []string{"--name", "world"}, Cwd: "/tmp", Env: map[string]string{}, TimeoutMs: 10_000},
			ExpectedStdout: "hello world\n",
			ExpectedStderr: "note: scripted\n",
		},
		Reconnect: func(contract.Provider) contract.Provider {
			p, err := exposed()
			if err != nil {
				panic(err)
			}
			return p
		},
	})
	// A wrong token is refused.
	bad, err := remote.New(remote.Options{BaseURL: url, Token: "wrong"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := bad.Capabilities(context.Background()); err == nil || !strings.Contains(err.Error(), "401") {
		t.Fatalf("a wrong token: %v, want a 401", err)
	}
}

// `agentrt run --provider remote` runs the kernel through a served
// provider and records the run.
func TestRunThroughRemoteProvider(t *testing.T) {
	url := startServe(t, "--provider", "scripted")
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	var out, errOut bytes.Buffer
	code := cli.Main(context.Background(), []string{"run", noteWriter, "--task", "Write a note.", "--provider", "remote", "--base-url", url,
		"--db", writeFile(t, "unused", "") + ".db", "--json"}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	if code != cli.ExitOK {
		t.Fatalf("run exited %d\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), `"status": "completed"`) || !strings.Contains(out.String(), "Done: Write a note.") || !strings.Contains(out.String(), `"delivered": true`) {
		t.Fatalf("run result: %s", out.String())
	}
}

// Issue 14: a run through providers/remote whose server was killed (no
// answer, connection refused) fails as a provider failure within its
// bounds, not lease-lost: the kernel reads the provider's name — which
// costs the remote provider a bounded, retried capabilities call — once,
// before the run is recorded, never again while (or after) it holds its
// 1s lease.
func TestRunAgainstKilledServeFailsOnTheProvider(t *testing.T) {
	url, kill := startKillableServe(t, "--provider", "scripted")
	kill()
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	var out, errOut bytes.Buffer
	start := time.Now()
	code := cli.Main(t.Context(), []string{"run", noteWriter, "--task", "Write a note.", "--provider", "remote", "--base-url", url,
		"--db", writeFile(t, "unused", "") + ".db", "--lease", "1s", "--json"}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
	took := time.Since(start)
	if code == cli.ExitOK {
		t.Fatalf("run against a killed server exited OK\nstdout: %s", out.String())
	}
	if !strings.Contains(out.String(), `"reason": "provider"`) || !strings.Contains(out.String(), `"status": "failed"`) {
		t.Fatalf("run exited %d; want a failed run with reason provider\nstdout: %s\nstderr: %s", code, out.String(), errOut.String())
	}
	if strings.Contains(out.String(), "lease-lost") || strings.Contains(out.String(), "interrupted") {
		t.Fatalf("the run lost its lease\nstdout: %s", out.String())
	}
	// Two bounded, retried calls to a refusing port (the name, then the
	// capabilities the run reads) at the default backoff take about 3s.
	if took > 20*time.Second {
		t.Errorf("the run took %v, want it bounded by the remote provider's retries", took)
	}
}

// Without a token the server refuses to listen beyond loopback.
func TestServeRefusesOpenListenWithoutToken(t *testing.T) {
	t.Setenv("AGENTRT_SERVE_TOKEN", "")
	// Every address that is not a loopback IP (or localhost) is open
	// beyond this machine, or may be: all interfaces in any spelling, a
	// routable IP, a host name that resolves who knows where.
	for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0", "10.1.2.3:0", "db.internal:0", "127.0.0.1"} {
		var out, errOut bytes.Buffer
		code := cli.Main(context.Background(), []string{"serve", "--listen", addr}, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errOut})
		if code != cli.ExitUsage || !strings.Contains(errOut.String(), "without a token") {
			t.Errorf("serve on %q without a token: exit %d, %s", addr, code, errOut.String())
		}
	}
}

// With --database, keyed creates are recorded in PostgreSQL: a second
// server on the same database replays a create the first one made (the
// same environment, no second one) and refuses a changed input under the
// key; the password never reaches a server's log (startServe checks).
func TestServeKeyedCreatesOnPostgres(t *testing.T) {
	db := pgtest.Schema(t)
	urls := []string{startServe(t, "--provider", "scripted", "--database", db), startServe(t, "--provider", "scripted", "--database", db)}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	in := func(name string) *contract.CreateInput {
		return &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("t")}}, Name: &name,
			IdempotencyKey: profile.Ptr("serve-postgres-key")}
	}
	clients := make([]*remote.Provider, len(urls))
	for i, u := range urls {
		p, err := remote.New(remote.Options{BaseURL: u, Token: serveToken})
		if err != nil {
			t.Fatal(err)
		}
		clients[i] = p
	}
	first, err := clients[0].Create(ctx, in("env"))
	if err != nil {
		t.Fatal(err)
	}
	if first.Creation() != contract.CreationCreated {
		t.Fatalf("the first create: %q, want created", first.Creation())
	}
	again, err := clients[1].Create(ctx, in("env"))
	if err != nil {
		t.Fatal(err)
	}
	if again.Creation() != contract.CreationReplayed || again.ID() != first.ID() {
		t.Fatalf("the other server's create: %q %s, want replayed %s", again.Creation(), again.ID(), first.ID())
	}
	if _, err := clients[1].Create(ctx, in("other")); !errors.Is(err, contract.ErrIdempotencyConflict) {
		t.Fatalf("a changed input under the key: %v, want an idempotency conflict", err)
	}
}
