package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store/sqlite"
)

func main() {
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
	if err := retainedRun(ctx, os.Stdout, path, "release-notes-"+hex.EncodeToString(b[:])); err != nil {
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
  {"delayMs":200},
  {"text":"Wrote the release notes."}
]}]}`

// retainedRun starts a retained run under key, drops the starter, and
// re-attaches from a fresh store connection by the control ref.
func retainedRun(ctx context.Context, w io.Writer, dbPath, key string) error {
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		return err
	}
	provider := scripted.New(sc, scripted.Options{})
	ref, after, err := startThenDrop(ctx, w, provider, dbPath, key)
	if err != nil {
		return err
	}
	// ref is plain data: it could have been written to a file, a queue or
	// a database and read by another process.
	return reattach(ctx, w, provider.Reconnect(), dbPath, ref, after)
}

// startThenDrop starts the run, reads its first event, and returns its
// control ref and the cursor of that event; its handle and store
// connection are gone when it returns.
func startThenDrop(ctx context.Context, w io.Writer, p contract.Provider, dbPath, key string) (retained.ControlRef, retained.Cursor, error) {
	st, err := sqlite.Open(ctx, dbPath, sqlite.Options{})
	if err != nil {
		return retained.ControlRef{}, retained.Cursor{}, err
	}
	defer st.Close()
	prof, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		return retained.ControlRef{}, retained.Cursor{}, err
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
		return retained.ControlRef{}, retained.Cursor{}, err
	}
	ref := run.ControlRef()
	fmt.Fprintf(w, "control ref: record %s, session %s, execution %s\n", ref.Record, ref.Run.SessionID, ref.Run.ExecutionID)
	var after retained.Cursor
	for ev, err := range run.Events(ctx, retained.Cursor{}) {
		if err != nil {
			return retained.ControlRef{}, retained.Cursor{}, err
		}
		fmt.Fprintf(w, "starter saw   %d %s\n", ev.Sequence, ev.Event.Type)
		after = ev.After()
		break
	}
	fmt.Fprintln(w, "starter dropped")
	return ref, after, nil
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
