package cli_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/providertest"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
)

// killScript: "kill: slow" says one, two, three, four with pauses, long
// enough for a client to die mid-run.
const killScript = `{"turns":[
 {"match":"kill: slow","repeat":true,"steps":[{"text":"one"},{"delayMs":300},{"text":"two"},{"delayMs":300},{"text":"three"},{"delayMs":300},{"text":"four"}]},
 {"repeat":true,"steps":[{"text":"Hello."}]}]}`

// Environment of the client helper process (TestServeClientProcess).
const (
	envClientRole    = "AGENTRT_SERVE_CLIENT_ROLE"
	envClientURL     = "AGENTRT_SERVE_CLIENT_URL"
	envClientEnvID   = "AGENTRT_SERVE_CLIENT_ENV"
	envClientSession = "AGENTRT_SERVE_CLIENT_SESSION"
	envClientRef     = "AGENTRT_SERVE_CLIENT_REF"
	envClientSince   = "AGENTRT_SERVE_CLIENT_SINCE"
	clientLine       = "CLIENT "
)

// TestServeClientProcess is not a test: it is the client process of
// TestDispatchSurvivesClientKill, run as this test binary with
// AGENTRT_SERVE_CLIENT_ROLE set. Role dispatch creates an environment,
// dispatches "kill: slow" and prints the reference and every event id
// as it reads them; role attach opens the session by the reference in
// its environment, reads the events after AGENTRT_SERVE_CLIENT_SINCE and
// prints them and the result. Every line it reports starts with CLIENT.
func TestServeClientProcess(t *testing.T) {
	role := os.Getenv(envClientRole)
	if role == "" {
		t.Skip("the client helper process of TestDispatchSurvivesClientKill")
	}
	if err := clientProcess(role); err != nil {
		fmt.Printf(clientLine+"error %v\n", err)
		os.Exit(3)
	}
	os.Exit(0)
}

func clientProcess(role string) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	p, err := remote.New(remote.Options{BaseURL: os.Getenv(envClientURL), Token: serveToken})
	if err != nil {
		return err
	}
	report := func(kind string, x any) error {
		b, err := json.Marshal(x)
		if err != nil {
			return err
		}
		_, err = fmt.Printf(clientLine+"%s %s\n", kind, b)
		return err
	}
	var sess contract.Session
	since := ""
	switch role {
	case "dispatch":
		env, err := p.Create(ctx, &contract.CreateInput{Profile: profile.Ref{Inline: &profile.Profile{Name: profile.Ptr("kill")}}})
		if err != nil {
			return err
		}
		ref, err := env.(contract.Dispatcher).Dispatch(ctx, &contract.TurnInput{Prompt: profile.Ptr("kill: slow"), Detach: profile.Ptr(true)})
		if err != nil {
			return err
		}
		if err := report("env", env.ID()); err != nil {
			return err
		}
		if err := report("ref", ref); err != nil {
			return err
		}
		if sess, err = env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef); err != nil {
			return err
		}
	case "attach":
		var ref contract.RunControlRef
		if err := json.Unmarshal([]byte(os.Getenv(envClientRef)), &ref); err != nil {
			return err
		}
		env, err := p.Get(ctx, os.Getenv(envClientEnvID))
		if err != nil || env == nil {
			return fmt.Errorf("the environment is not found: %v", err)
		}
		if sess, err = env.(contract.SessionOpener).Session(ctx, os.Getenv(envClientSession), &ref); err != nil {
			return err
		}
		since = os.Getenv(envClientSince)
	default:
		return fmt.Errorf("unknown role %q", role)
	}
	for ev, err := range sess.Events(ctx, since, "") {
		if err != nil {
			return err
		}
		if err := report("event", ev); err != nil {
			return err
		}
	}
	res, err := sess.Result(ctx)
	if err != nil {
		return err
	}
	return report("result", res)
}

// clientProc is a running client helper process and the lines it
// reported.
type clientProc struct {
	cmd   *exec.Cmd
	lines chan string
}

func startClient(t *testing.T, env ...string) *clientProc {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^TestServeClientProcess$")
	cmd.Env = append(os.Environ(), env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	c := &clientProc{cmd: cmd, lines: make(chan string, 64)}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(out)
		sc.Buffer(make([]byte, 64<<10), 4<<20)
		for sc.Scan() {
			if line, ok := strings.CutPrefix(sc.Text(), clientLine); ok {
				c.lines <- line
			}
		}
		_, _ = io.Copy(io.Discard, out)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	return c
}

// next returns the client's next report, split into kind and JSON; ok is
// false when it exited without one.
func (c *clientProc) next(t *testing.T) (kind string, data []byte, ok bool) {
	t.Helper()
	select {
	case line, open := <-c.lines:
		if !open {
			return "", nil, false
		}
		kind, rest, _ := strings.Cut(line, " ")
		if kind == "error" {
			t.Fatalf("the client process failed: %s", rest)
		}
		return kind, []byte(rest), true
	case <-time.After(20 * time.Second):
		t.Fatal("the client process reported nothing for 20s")
		return "", nil, false
	}
}

func decodeReport[T any](t *testing.T, data []byte) T {
	t.Helper()
	var v T
	if err := json.Unmarshal(data, &v); err != nil {
		t.Fatalf("decoding %s: %v", data, err)
	}
	return v
}

// A client process that dispatched a run is SIGKILLed mid-run; a new
// client process re-attaches to the session by its control reference
// through the server, receives exactly the events after the last one the
// dead client read, and the run's result: the run went on without its
// client, was never cancelled and never ran twice.
func TestDispatchSurvivesClientKill(t *testing.T) {
	t.Parallel()
	url := startServe(t, "--provider", "scripted", "--script", writeFile(t, "kill.json", killScript))

	first := startClient(t, envClientRole+"=dispatch", envClientURL+"="+url)
	var envID string
	var ref contract.SessionRef
	var seen []contract.EnvironmentEvent
	for len(seen) == 0 || deltaText(seen) == "" {
		kind, data, ok := first.next(t)
		if !ok {
			t.Fatal("the dispatching client exited before reading the run's first text")
		}
		switch kind {
		case "env":
			envID = decodeReport[string](t, data)
		case "ref":
			ref = decodeReport[contract.SessionRef](t, data)
		case "event":
			seen = append(seen, decodeReport[contract.EnvironmentEvent](t, data))
		}
	}
	if err := first.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for { // the lines it wrote before it died
		kind, data, ok := first.next(t)
		if !ok {
			break
		}
		if kind == "event" {
			seen = append(seen, decodeReport[contract.EnvironmentEvent](t, data))
		}
		if kind == "result" {
			t.Fatal("the dispatching client read the result before it was killed; the run was too short to test")
		}
	}
	if err := first.cmd.Wait(); err == nil || !strings.Contains(err.Error(), "killed") {
		t.Fatalf("the first client was not killed: %v", err)
	}
	if ref.ControlRef == nil || seen[len(seen)-1].ID == nil {
		t.Fatalf("the first client reported no control reference or an event without an id: %+v", ref)
	}
	last := *seen[len(seen)-1].ID
	refJSON, err := json.Marshal(ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}

	second := startClient(t, envClientRole+"=attach", envClientURL+"="+url, envClientEnvID+"="+envID,
		envClientSession+"="+ref.ID, envClientRef+"="+string(refJSON), envClientSince+"="+last)
	var rest []contract.EnvironmentEvent
	var res contract.TurnResult
	for done := false; !done; {
		kind, data, ok := second.next(t)
		if !ok {
			t.Fatal("the re-attaching client exited without a result")
		}
		switch kind {
		case "event":
			rest = append(rest, decodeReport[contract.EnvironmentEvent](t, data))
		case "result":
			res = decodeReport[contract.TurnResult](t, data)
			done = true
		}
	}
	if err := second.cmd.Wait(); err != nil {
		t.Fatalf("the re-attaching client: %v", err)
	}

	t.Logf("the killed client read %d events (through %s), the new one %d and the result", len(seen), last, len(rest))
	if !res.Success || res.Text != "onetwothreefour" {
		t.Errorf("the result after the client's death: success %v, text %q; want the whole run", res.Success, res.Text)
	}
	if len(rest) == 0 {
		t.Fatal("the re-attaching client received no event; the kill came too late to test")
	}
	if _, ok := contract.EnvironmentEventTerminal(rest[len(rest)-1]); !ok {
		t.Error("the re-attaching client's events did not end with the terminal event")
	}
	// Together the two clients read every event of the run exactly once,
	// in order: compare with a full replay.
	p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	env, err := p.Get(ctx, envID)
	if err != nil || env == nil {
		t.Fatalf("Get(%s): %v", envID, err)
	}
	sess, err := env.(contract.SessionOpener).Session(ctx, ref.ID, ref.ControlRef)
	if err != nil {
		t.Fatal(err)
	}
	all, err := providertest.Collect(sess.Events(ctx, "", ""))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := eventIDs(append(slices.Clone(seen), rest...)), eventIDs(all); !slices.Equal(got, want) {
		t.Errorf("the two clients read %v, the run has %v", got, want)
	}
	if st, ok, err := sess.Status(ctx); err != nil || !ok || st != contract.SessionCompleted {
		t.Errorf("the run's status %q (%v, %v), want completed", st, ok, err)
	}
}

func deltaText(events []contract.EnvironmentEvent) string {
	var b strings.Builder
	for _, ev := range events {
		if n := ev.Normalized; n != nil && n.MessagePartUpdated != nil && n.MessagePartUpdated.Delta != nil {
			b.WriteString(*n.MessagePartUpdated.Delta)
		}
	}
	return b.String()
}

func eventIDs(events []contract.EnvironmentEvent) []string {
	ids := make([]string, len(events))
	for i, ev := range events {
		if ev.ID != nil {
			ids[i] = *ev.ID
		}
	}
	return ids
}
