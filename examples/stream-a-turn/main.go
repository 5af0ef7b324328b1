package main

import (
	"context"
	"fmt"
	"io"
	"os"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

func main() {
	ctx := context.Background()
	path, err := sqlite.DefaultPath()
	if err != nil {
		fail(err)
	}
	st, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fail(err)
	}
	defer st.Close()
	if err := streamTurn(ctx, os.Stdout, st); err != nil {
		fail(err)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "stream-a-turn:", err)
	os.Exit(1)
}

const noteWriter = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

const script = `{"turns":[{"steps":[
  {"text":"Shipped "},
  {"text":"one-click restore."},
  {"usage":{"inputTokens":18,"outputTokens":6},"mode":"delta"}
]}]}`

func streamTurn(ctx context.Context, w io.Writer, st store.Store) error {
	p, err := profile.Parse([]byte(noteWriter))
	if err != nil {
		return err
	}
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		return err
	}
	req := kernel.Request{
		Profile:  p,
		Task:     "Write a one-line release note for one-click restore.",
		Provider: scripted.New(sc, scripted.Options{}),
		Store:    st,
		Check: func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: out.Text != "", Reason: "a note was written"}, nil
		},
	}
	var runID string
	live := 0
	for env, err := range kernel.Stream(ctx, req) {
		if err != nil {
			return err
		}
		runID = env.RunID
		live++
		fmt.Fprintf(w, "%d %s\n", env.Sequence, describe(env))
	}
	replayed := 0
	for _, err := range kernel.Replay(ctx, st, runID) {
		if err != nil {
			return err
		}
		replayed++
	}
	fmt.Fprintf(w, "replayed %d of %d envelopes from the store\n", replayed, live)
	return nil
}

// describe says what one envelope carries.
func describe(env contract.EventEnvelope) string {
	e := env.Event
	switch {
	case e.Status != nil && e.Status.Detail != nil:
		return fmt.Sprintf("status %s (%s)", e.Status.Status, *e.Status.Detail)
	case e.Status != nil:
		return "status " + e.Status.Status
	case e.MessagePartUpdated != nil && e.MessagePartUpdated.Delta != nil:
		return fmt.Sprintf("text %q", *e.MessagePartUpdated.Delta)
	case e.Raw != nil:
		// Backend-native events, and the provider's own claim that the
		// turn ended (the terminal above states the recorded outcome).
		typ, _ := e.Raw.Event.Get("type")
		return fmt.Sprintf("raw %s event %q", e.Raw.Backend, typ.Str())
	}
	return e.Type
}
