package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/sidecar"
	"github.com/agentrt/agentrt/store/sqlite"
)

// starterEnv, set in a child's environment, makes this program the
// starter: it starts the run and waits to be killed.
const starterEnv = "AGENTRT_EXAMPLE_RETAINED_STARTER"

func main() {
	if os.Getenv(starterEnv) != "" {
		starterMain()
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	path, err := sqlite.DefaultPath()
	if err != nil {
		fail(err)
	}
	// A new key per invocation: the same key and turn id would continue
	// the run an earlier invocation started.
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		fail(err)
	}
	self, err := os.Executable()
	if err != nil {
		fail(err)
	}
	if err := retainedRun(ctx, os.Stdout, self, path, "release-notes-"+hex.EncodeToString(b[:])); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "retained-run:", err)
	os.Exit(1)
}

const noteWriter = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

// The job writes a first line, works for a while, then writes the rest.
const script = `{"turns":[{"steps":[
  {"text":"Drafted the outline. "},
  {"delayMs":300},
  {"text":"Wrote the release notes."}
]}]}`

// started is what the starter prints once the run is dispatched and its
// first event seen: the plain-data claim ticket and the cursor after
// that event.
type started struct {
	Ref   retained.ControlRef `json:"ref"`
	After retained.Cursor     `json:"after"`
}

// retainedRun serves the provider on loopback (as agentrt serve would:
// it owns the run), starts the starter as a child process (the program
// self), kills it with SIGKILL once it printed the control ref and its
// first event, and re-attaches from this process by that control ref.
func retainedRun(ctx context.Context, w io.Writer, self, dbPath, key string) error {
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		return err
	}
	srv, err := sidecar.New(scripted.New(sc, scripted.Options{}), sidecar.Options{})
	if err != nil {
		return err
	}
	defer srv.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	hs := &http.Server{Handler: srv, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = hs.Serve(ln) }()
	defer hs.Close()
	baseURL := "http://" + ln.Addr().String()

	st, err := startChild(ctx, w, self, baseURL, dbPath, key)
	if err != nil {
		return err
	}
	// st.Ref is plain data: it could have been written to a file, a queue
	// or a database and read by any other process.
	p, err := remote.New(remote.Options{BaseURL: baseURL})
	if err != nil {
		return err
	}
	return reattach(ctx, w, p, dbPath, st.Ref, st.After)
}

// startChild runs the starter as a child process, reads what it printed
// and kills it with SIGKILL: nothing of it lives on but the run store's
// records and the run the provider owns.
func startChild(ctx context.Context, w io.Writer, self, baseURL, dbPath, key string) (started, error) {
	cmd := exec.CommandContext(ctx, self)
	cmd.Env = append(os.Environ(), starterEnv+"=1", "STARTER_BASE_URL="+baseURL, "STARTER_DB="+dbPath, "STARTER_KEY="+key)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return started{}, err
	}
	if err := cmd.Start(); err != nil {
		return started{}, err
	}
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		var st started
		if err := json.Unmarshal(lines.Bytes(), &st); err == nil && st.Ref.Record != "" {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL
				return started{}, err
			}
			_ = cmd.Wait() // a killed process's Wait reports the signal
			fmt.Fprintf(w, "starter ended: %s\n", cmd.ProcessState)
			return st, nil
		}
		fmt.Fprintf(w, "starter: %s\n", lines.Text())
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return started{}, fmt.Errorf("the starter ended without printing its control ref: %w", errors.Join(lines.Err(), ctx.Err()))
}

// starterMain is the child: it starts the run, prints its control ref
// and first event, and waits to be killed.
func starterMain() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p, err := remote.New(remote.Options{BaseURL: os.Getenv("STARTER_BASE_URL")})
	if err != nil {
		fail(err)
	}
	st, err := start(ctx, os.Stdout, p, os.Getenv("STARTER_DB"), os.Getenv("STARTER_KEY"))
	if err != nil {
		fail(err)
	}
	line, err := json.Marshal(st)
	if err != nil {
		fail(err)
	}
	fmt.Printf("%s\n", line)
	<-ctx.Done() // killed long before
	fail(errors.New("the starter was not killed"))
}

// start starts the run, reads its first event, and returns its control
// ref and the cursor of that event.
func start(ctx context.Context, w io.Writer, p contract.Provider, dbPath, key string) (started, error) {
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return started{}, err
	}
	defer st.Close()
	prof, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		return started{}, err
	}
	turnID, prompt := "turn-1", "Write the release notes."
	run, err := retained.StartRetainedRun(ctx, retained.StartOptions{
		Provider:    p,
		Store:       st,
		Environment: &contract.CreateInput{Profile: profile.Ref{Inline: prof}, IdempotencyKey: &key},
		Turn:        contract.TurnInput{TurnID: &turnID, Prompt: &prompt},
		// Each record is already durable in the store when this runs.
		OnAdmission: func(ctx context.Context, a retained.Admission) error {
			fmt.Fprintf(w, "admitted %s\n", a.Kind)
			return nil
		},
	})
	if err != nil {
		return started{}, err
	}
	ref := run.ControlRef()
	fmt.Fprintf(w, "control ref: record %s, session %s, execution %s\n", ref.Record, ref.Run.SessionID, ref.Run.ExecutionID)
	for ev, err := range run.Events(ctx, retained.Cursor{}) {
		if err != nil {
			return started{}, err
		}
		fmt.Fprintf(w, "saw %d %s\n", ev.Sequence, ev.Event.Type)
		return started{Ref: ref, After: ev.After()}, nil
	}
	return started{}, errors.New("the run ended before its first event")
}

// reattach re-attaches through a new store connection and provider client
// and follows the run from after to its result.
func reattach(ctx context.Context, w io.Writer, p contract.Provider, dbPath string, ref retained.ControlRef, after retained.Cursor) error {
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return err
	}
	defer st.Close()
	run, err := retained.ReconnectRetainedRun(ctx, retained.ReconnectOptions{Provider: p, Store: st, Ref: ref})
	if err != nil {
		return err
	}
	same := run.ControlRef() == ref
	fmt.Fprintf(w, "re-attached, same identity: %t\n", same)
	for ev, err := range run.Events(ctx, after) {
		if err != nil {
			return err
		}
		text := ""
		for _, name := range []string{"delta", "text"} {
			if t, ok := ev.Event.Data[name]; ok && t.Kind() == canonjson.String && text == "" {
				text = " " + t.Str()
			}
		}
		fmt.Fprintf(w, "re-attach saw %d %s%s\n", ev.Sequence, ev.Event.Type, text)
	}
	res, err := run.Result(ctx)
	if err != nil {
		return err
	}
	snap, err := run.Status(ctx)
	if err != nil {
		return err
	}
	status := "unknown"
	if snap.Status != nil {
		status = string(*snap.Status)
	}
	fmt.Fprintf(w, "result: %s %q\n", status, res.Text)
	return nil
}
