package scripted_test

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
)

const otherImage = "registry.example.com/other@sha256:fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210"

// exactScript describes one process of every shape: exits with a code,
// dies of a signal, hangs, pauses, reads its stdin and environment, is
// pinned to an image, or takes any argv.
const exactScript = `{"turns":[{"repeat":true,"steps":[{"text":"Hello."}]}],"processes":[
 {"executable":"/bin/echo","args":["$HOME; ls"],"output":[{"stdout":"$HOME; ls\n"}]},
 {"executable":"/bin/false","args":[],"output":[],"exitCode":1},
 {"executable":"/bin/crash","output":[{"stderr":"segfault\n"}],"signal":"SIGSEGV"},
 {"executable":"/bin/serve","output":[{"stdout":"ready\n"}],"hang":true},
 {"executable":"/bin/slow","output":[{"stdout":"a"},{"delayMs":60000},{"stdout":"b"}]},
 {"executable":"/usr/bin/cat","args":[],"output":[{"stdout":"{{stdin}}"}]},
 {"executable":"/usr/bin/env","output":[{"stdout":"HOME={{env:HOME}} AGENTRT_RUN={{env:AGENTRT_RUN}}\n"}]},
 {"executable":"/bin/which","image":"` + otherImage + `","output":[{"stdout":"other image\n"}]},
 {"executable":"/bin/which","output":[{"stdout":"any image\n"}]}
]}`

type exactFixture struct {
	t     *testing.T
	ctx   context.Context
	p     *scripted.Provider
	facet contract.ExactProcessProvider
}

func newExactFixture(t *testing.T) *exactFixture {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	t.Cleanup(cancel)
	p := scripted.New(mustScript(t, exactScript), scripted.Options{})
	facet := p.ExactProcess()
	if facet == nil {
		t.Fatal("a script with processes offers no exact processes")
	}
	return &exactFixture{t: t, ctx: ctx, p: p, facet: facet}
}

func exactInput(key string) *contract.CreateExactProcessInput {
	in := *exactOptions().CreateInput
	in.IdempotencyKey = key
	in.Metadata = map[string]canonjson.Value{"suite": canonjson.StringValue("scripted"), "key": canonjson.StringValue(key)}
	return &in
}

func (f *exactFixture) env(key string) contract.ExactProcessEnvironment {
	f.t.Helper()
	env, err := f.facet.Create(f.ctx, exactInput(key))
	if err != nil {
		f.t.Fatal(err)
	}
	f.t.Cleanup(func() { env.Destroy(context.Background()) })
	return env
}

func launch(exe string, args ...string) *contract.ExactProcessLaunch {
	if args == nil {
		args = []string{}
	}
	return &contract.ExactProcessLaunch{Executable: exe, Args: args, Cwd: "/work", Env: map[string]string{}}
}

func output(t *testing.T, ctx context.Context, p contract.ExactProcess) (string, string) {
	t.Helper()
	var out [2]strings.Builder
	for i, seq := range []func(context.Context) iter.Seq2[[]byte, error]{p.Stdout, p.Stderr} {
		for chunk, err := range seq(ctx) {
			if err != nil {
				t.Fatal(err)
			}
			out[i].Write(chunk)
		}
	}
	return out[0].String(), out[1].String()
}

func i64(v int64) *int64 { return &v }

// EXP-07, EXP-08, EXP-09: a launch plays the first rule that matches its
// executable, argv and image exactly; its output is exact, its ending is
// the rule's, and its status agrees with Wait. No shell, no ambient
// environment: argv is literal, and only the launch's env is visible.
func TestExactProcessRuns(t *testing.T) {
	f := newExactFixture(t)
	env := f.env("runs")
	other := *exactInput("runs-other-image")
	other.Image = otherImage
	otherEnv, err := f.facet.Create(f.ctx, &other)
	if err != nil {
		t.Fatal(err)
	}
	defer otherEnv.Destroy(f.ctx)
	stdin := "typed\x00bytes\n"
	for _, tc := range []struct {
		name           string
		env            contract.ExactProcessEnvironment
		launch         *contract.ExactProcessLaunch
		stdout, stderr string
		want           contract.ProcessTermination
		exitCode       int64
		exitSignal     string
	}{
		{"EXP-07 literal argv", env, launch("/bin/echo", "$HOME; ls"), "$HOME; ls\n", "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(0)}, 0, ""},
		{"exit code", env, launch("/bin/false"), "", "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(1)}, 1, ""},
		{"signal", env, launch("/bin/crash", "--now"), "", "segfault\n", contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr("SIGSEGV")}, -1, "SIGSEGV"},
		{"stdin", env, func() *contract.ExactProcessLaunch { l := launch("/usr/bin/cat"); l.Stdin = &stdin; return l }(), stdin, "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(0)}, 0, ""},
		// ENP-04: a runtime-process-control name is the caller's to set in
		// its replacement environment.
		{"EXP-08 ENP-04 replacement env", env, func() *contract.ExactProcessLaunch {
			l := launch("/usr/bin/env")
			l.Env = map[string]string{"AGENTRT_RUN": "r-1", "NODE_OPTIONS": "--x"}
			return l
		}(), "HOME= AGENTRT_RUN=r-1\n", "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(0)}, 0, ""},
		{"PATH resolves a bare command", env, func() *contract.ExactProcessLaunch {
			l := launch("echo", "$HOME; ls")
			l.Env = map[string]string{"PATH": "relative:/usr/local/bin:/bin"}
			return l
		}(), "$HOME; ls\n", "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(0)}, 0, ""},
		{"EXP-04 a rule pinned to an image", otherEnv, launch("/bin/which"), "other image\n", "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(0)}, 0, ""},
		{"a rule for any image", env, launch("/bin/which"), "any image\n", "", contract.ProcessTermination{Kind: contract.TerminationExit, ExitCode: i64(0)}, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.env.Processes().Spawn(f.ctx, tc.launch)
			if err != nil {
				t.Fatal(err)
			}
			stdout, stderr := output(t, f.ctx, p)
			if stdout != tc.stdout || stderr != tc.stderr {
				t.Errorf("stdout %q, stderr %q; want %q, %q", stdout, stderr, tc.stdout, tc.stderr)
			}
			term, err := p.Wait(f.ctx)
			if err != nil || !contract.SameProcessTermination(term, &tc.want) {
				t.Fatalf("Wait = %+v, %v; want %+v", term, err, tc.want)
			}
			st, _ := p.Status(f.ctx)
			if _, err := contract.Validate(contract.KindExactProcessStatus, contract.ExactProcessStatusSchema, st); err != nil {
				t.Error(err)
			}
			if st.Running || st.ExitCode != tc.exitCode || !contract.SameProcessTermination(st.Termination, term) ||
				(st.ExitSignal == nil) != (tc.exitSignal == "") || st.ExitSignal != nil && *st.ExitSignal != tc.exitSignal {
				t.Errorf("status %+v disagrees with %+v", st, tc.want)
			}
		})
	}
}

// A launch no rule matches is refused, never answered by a default; so is
// a malformed one. Nothing is listed for a refusal.
func TestExactProcessLaunchRefusals(t *testing.T) {
	f := newExactFixture(t)
	env := f.env("refusals")
	for _, tc := range []struct {
		name   string
		launch *contract.ExactProcessLaunch
		want   error
	}{
		{"unscripted executable", launch("/bin/rm", "-rf", "/"), scripted.ErrUnscriptedLaunch},
		{"argv differs", launch("/bin/echo", "$HOME;", "ls"), scripted.ErrUnscriptedLaunch},
		{"argv given to a rule of none", launch("/bin/false", "x"), scripted.ErrUnscriptedLaunch},
		{"rule pinned to another image", func() *contract.ExactProcessLaunch { l := launch("/bin/which"); return l }(), nil},
		{"bare command without PATH", launch("echo", "$HOME; ls"), nil},
		{"PATH without the command", func() *contract.ExactProcessLaunch {
			l := launch("echo", "$HOME; ls")
			l.Env = map[string]string{"PATH": "/usr/local/bin"}
			return l
		}(), scripted.ErrUnscriptedLaunch},
		{"relative cwd", func() *contract.ExactProcessLaunch { l := launch("/bin/false"); l.Cwd = "work"; return l }(), nil},
		{"negative timeout", func() *contract.ExactProcessLaunch { l := launch("/bin/false"); l.TimeoutMs = -1; return l }(), nil},
		{"nil argv", &contract.ExactProcessLaunch{Executable: "/bin/false", Cwd: "/", Env: map[string]string{}}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "rule pinned to another image" {
				// The environment's image is not the rule's: the catch-all
				// plays instead, proving the pinned rule was skipped.
				p, err := env.Processes().Spawn(f.ctx, tc.launch)
				if err != nil {
					t.Fatal(err)
				}
				if out, _ := output(t, f.ctx, p); out != "any image\n" {
					t.Errorf("the rule pinned to another image played: %q", out)
				}
				return
			}
			before, _ := env.Processes().List(f.ctx)
			p, err := env.Processes().Spawn(f.ctx, tc.launch)
			if err == nil || p != nil {
				t.Fatalf("Spawn = %v, %v; want a refusal", p, err)
			}
			if tc.want != nil && !errors.Is(err, tc.want) {
				t.Errorf("error %v, want %v", err, tc.want)
			}
			if after, _ := env.Processes().List(f.ctx); len(after) != len(before) {
				t.Error("a refused launch is listed")
			}
		})
	}
}

// EXP-09: timeouts, kills, a launch cancelled after start and a destroyed
// environment end a process each with its own termination, distinct from
// an exit; output stops where it was, and every handle agrees.
func TestExactProcessTerminations(t *testing.T) {
	f := newExactFixture(t)
	kill := func(t *testing.T, p contract.ExactProcess) {
		if err := p.Kill(f.ctx); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name   string
		launch *contract.ExactProcessLaunch
		end    func(t *testing.T, env contract.ExactProcessEnvironment, p contract.ExactProcess)
		want   contract.ProcessTermination
		stdout string
	}{
		{"timeout", func() *contract.ExactProcessLaunch { l := launch("/bin/serve"); l.TimeoutMs = 200; return l }(), nil,
			contract.ProcessTermination{Kind: contract.TerminationTimeout, TimeoutMs: i64(200)}, "ready\n"},
		{"timeout mid-delay", func() *contract.ExactProcessLaunch { l := launch("/bin/slow"); l.TimeoutMs = 200; return l }(), nil,
			contract.ProcessTermination{Kind: contract.TerminationTimeout, TimeoutMs: i64(200)}, "a"},
		{"kill", launch("/bin/serve"), func(t *testing.T, _ contract.ExactProcessEnvironment, p contract.ExactProcess) { kill(t, p) },
			contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr("SIGKILL")}, "ready\n"},
		{"kill mid-delay", launch("/bin/slow"), func(t *testing.T, _ contract.ExactProcessEnvironment, p contract.ExactProcess) { kill(t, p) },
			contract.ProcessTermination{Kind: contract.TerminationSignal, Signal: ptr("SIGKILL")}, "a"},
		{"destroy", launch("/bin/serve"), func(t *testing.T, env contract.ExactProcessEnvironment, _ contract.ExactProcess) {
			if err := env.Destroy(f.ctx); err != nil {
				t.Fatal(err)
			}
		}, contract.ProcessTermination{Kind: contract.TerminationCancelled}, "ready\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := f.env("terminations-" + strings.ReplaceAll(tc.name, " ", "-"))
			p, err := env.Processes().Spawn(f.ctx, tc.launch)
			if err != nil {
				t.Fatal(err)
			}
			// Wait for the first output, so the ending interrupts the play.
			for range p.Stdout(f.ctx) {
				break
			}
			if tc.end != nil {
				tc.end(t, env, p)
			}
			term, err := p.Wait(f.ctx)
			if err != nil || !contract.SameProcessTermination(term, &tc.want) {
				t.Fatalf("Wait = %+v, %v; want %+v", term, err, tc.want)
			}
			st, _ := p.Status(f.ctx)
			if st.Running || st.ExitCode != -1 || !contract.SameProcessTermination(st.Termination, term) || st.ExitSignal == nil {
				t.Errorf("status %+v after %s", st, tc.name)
			}
			if out, _ := output(t, f.ctx, p); out != tc.stdout {
				t.Errorf("stdout %q, want %q", out, tc.stdout)
			}
			if err := p.Kill(f.ctx); err != nil {
				t.Errorf("a kill after the end: %v", err)
			}
			if again, _ := p.Wait(f.ctx); !contract.SameProcessTermination(again, term) {
				t.Errorf("a kill after the end changed the termination to %+v", again)
			}
		})
	}

	t.Run("launch cancelled after start", func(t *testing.T) {
		env := f.env("cancelled-launch")
		ctx := &cancelAfterFirstCheck{Context: f.ctx}
		p, err := env.Processes().Spawn(ctx, launch("/bin/serve"))
		if !errors.Is(err, context.Canceled) || p != nil {
			t.Fatalf("Spawn = %v, %v; want a refusal after start", p, err)
		}
		list, _ := env.Processes().List(f.ctx)
		if len(list) != 1 || list[0].Running || list[0].Termination == nil || list[0].Termination.Kind != contract.TerminationCancelled {
			t.Fatalf("the started process is not recorded as cancelled: %+v", list)
		}
	})
	t.Run("launch cancelled before dispatch", func(t *testing.T) {
		env := f.env("cancelled-before")
		done, cancel := context.WithCancel(f.ctx)
		cancel()
		if _, err := env.Processes().Spawn(done, launch("/bin/serve")); !errors.Is(err, context.Canceled) {
			t.Fatalf("Spawn with a done context: %v", err)
		}
		if list, _ := env.Processes().List(f.ctx); len(list) != 0 {
			t.Errorf("a launch refused before dispatch started %d processes", len(list))
		}
	})
}

// cancelAfterFirstCheck is a context that reports done from its second
// Err call on: the caller gives up while the launch is dispatched.
type cancelAfterFirstCheck struct {
	context.Context
	mu     sync.Mutex
	checks int
}

func (c *cancelAfterFirstCheck) Err() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.checks++
	if c.checks > 1 {
		return context.Canceled
	}
	return nil
}

// EXP-09: output follows a live process and replays from the start for
// every handle and every iteration; a done context ends the following,
// not the process.
func TestExactProcessOutputFollows(t *testing.T) {
	f := newExactFixture(t)
	env := f.env("follow")
	p, err := env.Processes().Spawn(f.ctx, launch("/bin/serve"))
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(f.ctx, 30*time.Millisecond)
	defer cancel()
	var got []string
	var end error
	for chunk, err := range p.Stdout(short) {
		if err != nil {
			end = err
			break
		}
		got = append(got, string(chunk))
	}
	if !errors.Is(end, context.DeadlineExceeded) || len(got) != 1 || got[0] != "ready\n" {
		t.Fatalf("following a live process: %q, %v", got, end)
	}
	if st, _ := p.Status(f.ctx); !st.Running || st.ExitCode != -1 || st.Termination != nil {
		t.Fatalf("a done context ended the process: %+v", st)
	}
	waitCtx, cancelWait := context.WithTimeout(f.ctx, 10*time.Millisecond)
	defer cancelWait()
	if _, err := p.Wait(waitCtx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Wait on a running process: %v", err)
	}
	// A chunk is the caller's: changing it changes no replay.
	for chunk := range p.Stdout(short) {
		if chunk != nil {
			chunk[0] = 'X'
		}
		break
	}
	if err := p.Kill(f.ctx); err != nil {
		t.Fatal(err)
	}
	recovered, err := f.p.Reconnect().ExactProcess().Get(f.ctx, env.ID())
	if err != nil || recovered == nil {
		t.Fatal(recovered, err)
	}
	rp, err := recovered.Processes().Get(f.ctx, p.PID())
	if err != nil || rp == nil {
		t.Fatal(rp, err)
	}
	for _, h := range []contract.ExactProcess{p, p, rp} {
		if out, _ := output(t, f.ctx, h); out != "ready\n" {
			t.Errorf("a replay yields %q", out)
		}
	}
}

// EXP-06 and the exact file system: exact bytes with their POSIX mode,
// reads bounded before loading and free of effects, absolute clean paths,
// files and directories kept apart, the disk bounded by diskMb.
func TestExactFiles(t *testing.T) {
	f := newExactFixture(t)
	env := f.env("files")
	data := []byte{0x00, 0x01, 0x02, 0xFF}
	if err := env.WriteFile(f.ctx, "/work/data.bin", data, fs.ModeSetgid|0o750); err != nil {
		t.Fatal(err)
	}
	if mode, ok := scripted.FileMode(env, "/work/data.bin"); !ok || mode != 0o2750 {
		t.Errorf("mode %#o, %v; want 0o2750", mode, ok)
	}
	if err := env.WriteFile(f.ctx, "/work/empty", nil, 0o600); err != nil {
		t.Fatal(err)
	}
	var tooLarge *contract.FileTooLargeError
	for _, tc := range []struct {
		name     string
		path     string
		maxBytes int64
		want     []byte
		check    func(error) bool
	}{
		{"exact bytes", "/work/data.bin", 4, data, nil},
		{"bound above the size", "/work/data.bin", 1 << 30, data, nil},
		{"one byte short", "/work/data.bin", 3, nil, func(err error) bool {
			return errors.As(err, &tooLarge) && tooLarge.Size == 4 && tooLarge.MaxBytes == 3 && errors.Is(err, contract.ErrFileTooLarge)
		}},
		{"zero bound, empty file", "/work/empty", 0, []byte{}, nil},
		{"zero bound, non-empty file", "/work/data.bin", 0, nil, func(err error) bool { return errors.Is(err, contract.ErrFileTooLarge) }},
		{"negative bound", "/work/data.bin", -1, nil, func(err error) bool { return err != nil && !errors.Is(err, contract.ErrFileTooLarge) }},
		{"missing", "/work/missing", 10, nil, func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"a directory", "/work", 10, nil, func(err error) bool { return errors.Is(err, fs.ErrNotExist) }},
		{"relative", "work/data.bin", 10, nil, func(err error) bool { return errors.Is(err, scripted.ErrExactPath) }},
		{"unclean", "/work/../work/data.bin", 10, nil, func(err error) bool { return errors.Is(err, scripted.ErrExactPath) }},
	} {
		got, err := env.ReadFile(f.ctx, tc.path, tc.maxBytes)
		switch {
		case tc.check == nil && (err != nil || string(got) != string(tc.want) || got == nil):
			t.Errorf("%s: ReadFile = % x, %v; want % x", tc.name, got, err, tc.want)
		case tc.check != nil && (got != nil || !tc.check(err)):
			t.Errorf("%s: ReadFile = % x, %v", tc.name, got, err)
		}
	}
	// A read returns a copy: changing it changes no file.
	got, _ := env.ReadFile(f.ctx, "/work/data.bin", 4)
	got[0] = 0x7F
	if again, _ := env.ReadFile(f.ctx, "/work/data.bin", 4); again[0] != 0x00 {
		t.Error("a caller's change to a read reached the file")
	}
	// So does a write: the caller's buffer is not kept.
	buf := []byte("abc")
	if err := env.WriteFile(f.ctx, "/work/buf", buf, 0o644); err != nil {
		t.Fatal(err)
	}
	buf[0] = 'X'
	if again, _ := env.ReadFile(f.ctx, "/work/buf", 3); string(again) != "abc" {
		t.Errorf("the file follows the caller's buffer: %q", again)
	}

	disk := int64(exactOptions().CreateInput.Resources.DiskMB) << 20
	for _, tc := range []struct {
		name string
		path string
		data []byte
		mode fs.FileMode
		want error
	}{
		{"relative path", "data.bin", data, 0o644, scripted.ErrExactPath},
		{"root", "/", data, 0o644, scripted.ErrExactPath},
		{"raw setuid bit", "/work/x", data, 0o4755, contract.ErrFileMode},
		{"a file type", "/work/x", data, fs.ModeDir | 0o755, contract.ErrFileMode},
		{"over a directory", "/work", data, 0o644, nil},
		{"under a file", "/work/data.bin/x", data, 0o644, nil},
		{"past the disk", "/work/big", make([]byte, disk), 0o644, scripted.ErrNoSpace},
	} {
		err := env.WriteFile(f.ctx, tc.path, tc.data, tc.mode)
		if err == nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: WriteFile = %v, want %v", tc.name, err, tc.want)
		}
	}
	// Replacing a file counts its new size only.
	if err := env.WriteFile(f.ctx, "/work/big", make([]byte, disk-64), 0o644); err != nil {
		t.Fatalf("a file that fits: %v", err)
	}
	if err := env.WriteFile(f.ctx, "/work/big", make([]byte, disk-64), 0o644); err != nil {
		t.Fatalf("replacing a file that fits: %v", err)
	}
}

// EXP-02, EXP-03, EXP-11: exact creates dispatch no agent, every
// environment starts fresh and shares nothing with another, a key names
// one environment (also under concurrency and after destroy), and what
// the provider cannot enforce is refused before any effect.
func TestExactEnvironments(t *testing.T) {
	f := newExactFixture(t)
	a := f.env("a")
	b := f.env("b")
	if a.ID() == b.ID() {
		t.Fatal("two keys share an environment")
	}
	if err := a.WriteFile(f.ctx, "/work/a", []byte("a"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := a.Processes().Spawn(f.ctx, launch("/bin/serve")); err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadFile(f.ctx, "/work/a", 10); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("EXP-03: another environment sees a's file: %v", err)
	}
	if list, _ := b.Processes().List(f.ctx); len(list) != 0 {
		t.Errorf("EXP-03: another environment lists a's processes: %+v", list)
	}
	if f.p.Creates() != 0 || f.p.Turns() != 0 {
		t.Errorf("EXP-02: exact creates provisioned %d agent environments and %d turns", f.p.Creates(), f.p.Turns())
	}
	if n := f.p.ExactCreates(); n != 2 {
		t.Errorf("%d exact creates, want 2", n)
	}

	var wg sync.WaitGroup
	ids := make([]string, 16)
	for i := range ids {
		wg.Add(1)
		go func() {
			defer wg.Done()
			env, err := f.facet.Create(f.ctx, exactInput("concurrent"))
			if err != nil {
				t.Error(err)
				return
			}
			ids[i] = env.ID()
		}()
	}
	wg.Wait()
	for _, id := range ids {
		if id != ids[0] {
			t.Fatalf("concurrent creates under one key returned %v", ids)
		}
	}
	if n := f.p.ExactCreates(); n != 3 {
		t.Errorf("16 concurrent creates under one key provisioned %d environments", n-2)
	}

	for _, tc := range []struct {
		name string
		edit func(in *contract.CreateExactProcessInput)
		want error
	}{
		{"EXP-10 strict egress", func(in *contract.CreateExactProcessInput) {
			in.Egress = contract.EgressPolicy{Mode: contract.EgressStrict, AllowDomains: []string{"pypi.org"}}
		}, contract.ErrUnsupported},
		{"EXP-04 tag-only image", func(in *contract.CreateExactProcessInput) { in.Image = "registry.example.com/img:latest" }, contract.ErrUnsupported},
		{"provider options", func(in *contract.CreateExactProcessInput) {
			in.ProviderOptions = map[string]canonjson.Value{"privileged": canonjson.BoolValue(true)}
		}, contract.ErrUnsupported},
		{"EXP-05 no resources", func(in *contract.CreateExactProcessInput) { in.Resources = contract.ExactProcessResources{} }, nil},
		{"open egress", func(in *contract.CreateExactProcessInput) {
			in.Egress = contract.EgressPolicy{Mode: contract.EgressOpen}
		}, nil},
		{"EXP-11 changed lifetime under a used key", func(in *contract.CreateExactProcessInput) {
			in.IdempotencyKey = "a"
			in.MaxLifetimeMs++
		}, contract.ErrIdempotencyConflict},
	} {
		in := exactInput("refused-" + tc.name)
		in.Metadata = exactInput("a").Metadata
		tc.edit(in)
		env, err := f.facet.Create(f.ctx, in)
		if err == nil || env != nil || tc.want != nil && !errors.Is(err, tc.want) {
			t.Errorf("%s: Create = %v, %v; want a refusal (%v)", tc.name, env, err, tc.want)
		}
	}
	if _, err := f.facet.Create(f.ctx, nil); !errors.Is(err, contract.ErrCreateInput) {
		t.Errorf("a nil input: %v", err)
	}
	if n := f.p.ExactCreates(); n != 3 {
		t.Errorf("refusals provisioned %d environments", n-3)
	}

	// A destroyed environment's key never names a second environment.
	if err := b.Destroy(f.ctx); err != nil {
		t.Fatal(err)
	}
	if err := b.Destroy(f.ctx); err != nil {
		t.Errorf("a second destroy: %v", err)
	}
	if again, err := f.facet.Create(f.ctx, exactInput("b")); !errors.Is(err, scripted.ErrDestroyed) || again != nil {
		t.Errorf("the key of a destroyed environment: %v, %v; want ErrDestroyed", again, err)
	}
	for name, op := range map[string]func() error{
		"WriteFile": func() error { return b.WriteFile(f.ctx, "/work/x", nil, 0o644) },
		"ReadFile":  func() error { _, err := b.ReadFile(f.ctx, "/work/x", 1); return err },
		"Spawn":     func() error { _, err := b.Processes().Spawn(f.ctx, launch("/bin/false")); return err },
		"List":      func() error { _, err := b.Processes().List(f.ctx); return err },
		"Get":       func() error { _, err := b.Processes().Get(f.ctx, 1); return err },
	} {
		if err := op(); !errors.Is(err, scripted.ErrDestroyed) {
			t.Errorf("%s on a destroyed environment: %v", name, err)
		}
	}
}

// Spec J (get, list): Get finds only live exact environments; List
// selects by exact metadata, refuses options it does not know, and a
// reconnected client sees the same.
func TestExactLookup(t *testing.T) {
	f := newExactFixture(t)
	a, b := f.env("x"), f.env("y")
	ordinary, err := f.p.Create(f.ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	client := f.p.Reconnect().ExactProcess()
	for _, tc := range []struct {
		id   string
		want bool
	}{{a.ID(), true}, {b.ID(), true}, {ordinary.ID(), false}, {"nope", false}} {
		env, err := client.Get(f.ctx, tc.id)
		if err != nil || (env != nil) != tc.want {
			t.Errorf("Get(%s) = %v, %v; want found %v", tc.id, env, err, tc.want)
		}
	}
	if g, err := f.p.Get(f.ctx, a.ID()); err != nil || g != nil {
		t.Errorf("the agent Get finds an exact environment: %v, %v", g, err)
	}
	key := func(k string) map[string]canonjson.Value {
		return map[string]canonjson.Value{"key": canonjson.StringValue(k)}
	}
	for _, tc := range []struct {
		name  string
		query *contract.ExactProcessEnvironmentQuery
		want  []string
	}{
		{"nil", nil, []string{a.ID(), b.ID()}},
		{"shared member", &contract.ExactProcessEnvironmentQuery{Metadata: map[string]canonjson.Value{"suite": canonjson.StringValue("scripted")}}, []string{a.ID(), b.ID()}},
		{"one", &contract.ExactProcessEnvironmentQuery{Metadata: key("x")}, []string{a.ID()}},
		{"none", &contract.ExactProcessEnvironmentQuery{Metadata: key("z")}, nil},
	} {
		list, err := client.List(f.ctx, tc.query)
		var ids []string
		for _, e := range list {
			ids = append(ids, e.ID())
		}
		if err != nil || fmt.Sprint(ids) != fmt.Sprint(tc.want) {
			t.Errorf("%s: List = %v, %v; want %v", tc.name, ids, err, tc.want)
		}
	}
	if _, err := client.List(f.ctx, &contract.ExactProcessEnvironmentQuery{ProviderOptions: key("x")}); !errors.Is(err, contract.ErrUnsupported) {
		t.Errorf("a query with provider options: %v", err)
	}
	if md := a.Metadata(); md["key"].Str() != "x" {
		t.Errorf("metadata %v", md)
	} else {
		md["key"] = canonjson.StringValue("changed")
		if a.Metadata()["key"].Str() != "x" {
			t.Error("Metadata is not a detached copy")
		}
	}
}

// An environment past its maxLifetimeMs is destroyed: its processes end
// cancelled and it is no longer found.
func TestExactLifetime(t *testing.T) {
	f := newExactFixture(t)
	in := exactInput("short-lived")
	in.MaxLifetimeMs = 30
	env, err := f.facet.Create(f.ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	p, err := env.Processes().Spawn(f.ctx, launch("/bin/serve"))
	if err != nil {
		t.Fatal(err)
	}
	term, err := p.Wait(f.ctx)
	if err != nil || term.Kind != contract.TerminationCancelled {
		t.Fatalf("a process outliving its environment ended %+v, %v", term, err)
	}
	if got, _ := f.facet.Get(f.ctx, env.ID()); got != nil {
		t.Error("an expired environment is still found")
	}
}

// CAP-13, EXP-13: a provider offers and declares exact processes exactly
// when its script describes them, and a liar fails exposure in both
// directions.
func TestExactProcessExposure(t *testing.T) {
	ctx := context.Background()
	with := scripted.New(mustScript(t, exactScript), scripted.Options{})
	without := scripted.New(hello(), scripted.Options{})
	for _, tc := range []struct {
		name    string
		p       contract.Provider
		wantErr bool
	}{
		{"with processes", with, false},
		{"without processes", without, false},
		{"in-process", scripted.InProcess(nil), false},
		{"hides exactProcess it offers", exactLiar{with, false}, true},
		{"declares exactProcess it does not offer", exactLiar{without, true}, true},
	} {
		c, _ := tc.p.Capabilities(ctx)
		if err := contract.CheckProviderExposure(c, tc.p); (err != nil) != tc.wantErr {
			t.Errorf("%s: CheckProviderExposure = %v, want error %v", tc.name, err, tc.wantErr)
		}
	}
	if c, _ := with.Capabilities(ctx); c.ExactProcess == nil || fmt.Sprint(c.ExactProcess.Egress) != "[blocked]" {
		t.Errorf("a provider with processes declares %+v, want egress [blocked]", c.ExactProcess)
	}
	if without.ExactProcess() != nil {
		t.Error("a provider without processes offers exact processes")
	}
}

// exactLiar misdeclares exactProcess.
type exactLiar struct {
	*scripted.Provider
	declare bool
}

func (l exactLiar) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	c, err := l.Provider.Capabilities(ctx)
	if l.declare {
		c.ExactProcess = &contract.ExactProcessCapabilities{Egress: []contract.EgressMode{contract.EgressBlocked}}
	} else {
		c.ExactProcess = nil
	}
	return c, err
}

// A turn naming its execution id runs under exactly that id, and a second
// turn naming the same execution id is refused before any effect.
func TestDispatchHonoursTheTurnsExecutionID(t *testing.T) {
	ctx := context.Background()
	p := scripted.InProcess(func(ctx context.Context, prompt string, pc scripted.PromptContext) ([]contract.EnvironmentEvent, error) {
		return []contract.EnvironmentEvent{{Type: "message.final", Data: map[string]canonjson.Value{"text": canonjson.StringValue("ok")}}}, nil
	})
	env, err := p.Create(ctx, &contract.CreateInput{})
	if err != nil {
		t.Fatal(err)
	}
	d := env.(contract.Dispatcher)
	exec, turn := "exec-fixed", "turn-1"
	ref, err := d.Dispatch(ctx, &contract.TurnInput{Prompt: ptr("hi"), ExecutionID: &exec, TurnID: &turn})
	if err != nil {
		t.Fatal(err)
	}
	if got := *ref.ControlRef.ExecutionID; got != exec {
		t.Fatalf("execution id %q, want %q", got, exec)
	}
	other := "turn-2"
	if _, err := d.Dispatch(ctx, &contract.TurnInput{Prompt: ptr("again"), ExecutionID: &exec, TurnID: &other}); !errors.Is(err, scripted.ErrTurnConflict) {
		t.Fatalf("a second run under execution id %q: err %v, want ErrTurnConflict", exec, err)
	}
}

// A process that has ended has a termination its Wait knows: Wait
// answers it under an ended context too, rather than that context's
// error half the time (its select had the process's end and ctx's end
// ready at once). contract.ExactProcess: "Wait blocks until the process
// terminated"; localproc's Wait answers the same.
func TestExactWaitOfAnEndedProcessUnderAnEndedContext(t *testing.T) {
	f := newExactFixture(t)
	p, err := f.env("ended-wait").Processes().Spawn(f.ctx, launch("/bin/false"))
	if err != nil {
		t.Fatal(err)
	}
	term, err := p.Wait(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	for i := range 300 {
		if got, err := p.Wait(gone); err != nil || !contract.SameProcessTermination(got, term) {
			t.Fatalf("run %d: Wait of the ended process under an ended context = %+v, %v; want %+v", i, got, err, term)
		}
	}
}
