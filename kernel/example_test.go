package kernel_test

import (
	"context"
	"fmt"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
)

// exampleProfile is the profile the examples run: a cli-base worker on the
// scripted provider.
const exampleProfile = `{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`

// exampleRequest builds one exact run of exampleProfile on a scripted
// provider that follows script, with a completion check that passes when
// the run wrote any text.
func exampleRequest(runID, script string) kernel.Request {
	p, err := profile.Parse([]byte(exampleProfile))
	if err != nil {
		panic(err)
	}
	sc, err := scripted.ParseScript([]byte(script))
	if err != nil {
		panic(err)
	}
	return kernel.Request{
		Profile:  p,
		Task:     "Write a one-line release note for one-click restore.",
		Provider: scripted.New(sc, scripted.Options{}),
		Store:    memory.New(nil),
		RunID:    runID,
		Check: func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: out.Text != "", Reason: "a note was written"}, nil
		},
	}
}

const noteScript = `{"turns":[{"steps":[
  {"text":"Shipped "},
  {"text":"one-click restore."},
  {"usage":{"inputTokens":18,"outputTokens":6},"mode":"delta"}
]}]}`

// envelopeKind names what one envelope carries.
func envelopeKind(env contract.EventEnvelope) string {
	e := env.Event
	switch {
	case e.Status != nil:
		return "status " + e.Status.Status
	case e.MessagePartUpdated != nil && e.MessagePartUpdated.Delta != nil:
		return fmt.Sprintf("%s %q", e.Type, *e.MessagePartUpdated.Delta)
	case e.Raw != nil:
		// Backend-native events, and the provider's own claim that the
		// turn ended; the terminal status envelope states the outcome
		// the kernel recorded.
		typ, _ := e.Raw.Event.Get("type")
		return fmt.Sprintf("%s %s %q", e.Type, e.Raw.Backend, typ.Str())
	}
	return e.Type
}

// Execute runs a profile once: the provider is checked against the
// profile, the turn runs and is recorded in the store, and the run is
// delivered only because the completion check passed on what it produced.
func ExampleExecute() {
	agent, err := profile.Parse([]byte(`{"name":"note-writer","harness":"cli-base",
		"model":{"provider":"scripted","default":"scripted/note-writer"}}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	// An offline provider that streams two pieces of text and reports usage.
	script, err := scripted.ParseScript([]byte(`{"turns":[{"steps":[
		{"text":"Shipped "},{"text":"one-click restore."},
		{"usage":{"inputTokens":18,"outputTokens":6},"mode":"delta"}]}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	res, err := kernel.Execute(context.Background(), kernel.Request{
		Profile:  agent,
		Task:     "Write a one-line release note for one-click restore.",
		Provider: scripted.New(script, scripted.Options{}),
		Store:    memory.New(nil),
		RunID:    "release-note",
		// The run is delivered only if this check passes on its outcome.
		Check: func(ctx context.Context, out kernel.Outcome) (kernel.Verdict, error) {
			return kernel.Verdict{Passed: out.Text != "", Reason: "a note was written"}, nil
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", res.RunID, res.Status)
	fmt.Println("text:", res.Text)
	fmt.Println("requested:", res.RequestedModel, "served:", res.Served.Model)
	fmt.Println("tokens in/out:", res.Usage.InputTokens, res.Usage.OutputTokens)
	fmt.Println("delivered:", res.Delivered, "-", res.Verdict.Reason)
	// Output:
	// run: release-note completed
	// text: Shipped one-click restore.
	// requested: scripted/note-writer served: scripted/note-writer
	// tokens in/out: 18 6
	// delivered: true - a note was written
}

// StreamRun runs one turn and yields its event envelopes, each once it is
// durable in the store, ending in exactly one terminal envelope that states
// the recorded outcome; Result then returns the recorded run.
func ExampleStreamRun() {
	run := kernel.StreamRun(context.Background(), exampleRequest("streamed-note", noteScript))
	for env, err := range run.Events() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(env.Sequence, envelopeKind(env))
	}
	res, err := run.Result()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("status:", res.Status, "delivered:", res.Delivered)
	// Output:
	// 1 status started
	// 2 message.part.updated "Shipped "
	// 3 message.part.updated "one-click restore."
	// 4 raw scripted "usage"
	// 5 raw scripted "done"
	// 6 status completed
	// status: completed delivered: true
}

// Replay reads a recorded run's envelopes back from the store: the same
// envelopes the live stream yielded, terminal included.
func ExampleReplay() {
	ctx := context.Background()
	req := exampleRequest("replayed-note", noteScript)
	var live []contract.EventEnvelope
	for env, err := range kernel.Stream(ctx, req) {
		if err != nil {
			fmt.Println(err)
			return
		}
		live = append(live, env)
	}

	// Later, or in another process sharing the store:
	i := 0
	for env, err := range kernel.Replay(ctx, req.Store, "replayed-note") {
		if err != nil {
			fmt.Println(err)
			return
		}
		same := i < len(live) && env.EventID == live[i].EventID && env.Sequence == live[i].Sequence
		fmt.Println(env.Sequence, envelopeKind(env), "same as live:", same)
		i++
	}
	fmt.Println("replayed", i, "of", len(live))
	// Output:
	// 1 status started same as live: true
	// 2 message.part.updated "Shipped " same as live: true
	// 3 message.part.updated "one-click restore." same as live: true
	// 4 raw scripted "usage" same as live: true
	// 5 raw scripted "done" same as live: true
	// 6 status completed same as live: true
	// replayed 6 of 6
}

// ReadRun reads a run back as a typed record: the store's row, the run's
// document decoded by its kind, and the spend its ledger holds.
func ExampleReadRun() {
	ctx := context.Background()
	req := exampleRequest("recorded-note", noteScript)
	if _, err := kernel.Execute(ctx, req); err != nil {
		fmt.Println(err)
		return
	}
	rec, err := kernel.ReadRun(ctx, req.Store, "recorded-note")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("run:", rec.ID, rec.Kind, rec.Status)
	doc := rec.Exact
	fmt.Println("task:", doc.Task)
	fmt.Println("requested:", doc.RequestedModel, "served:", doc.ServedModel)
	fmt.Println("ended:", doc.Terminal.Status, "delivered:", *doc.Delivered, "-", doc.Verdict.Reason)
	fmt.Println("text:", *doc.Text)
	// The store holds the turn's events; the terminal envelope that
	// Stream and Replay end with is stated from the run's record.
	fmt.Println("events:", rec.Events)
	fmt.Println("spend in/out:", rec.Spend.InputTokens, rec.Spend.OutputTokens, "in", rec.LedgerEntries, "ledger entries")
	// Output:
	// run: recorded-note execute completed
	// task: Write a one-line release note for one-click restore.
	// requested: scripted/note-writer served: scripted/note-writer
	// ended: completed delivered: true - a note was written
	// text: Shipped one-click restore.
	// events: 5
	// spend in/out: 18 6 in 2 ledger entries
}

// RequestCancel cancels a live run from anywhere that shares its store —
// another process, or `agentrt runs cancel`. The request is recorded in
// the run's record; the process that owns the run sees it at its next
// look (about twice a second) and ends the run cancelled, saying why.
func ExampleRequestCancel() {
	ctx := context.Background()
	// A turn that writes one word, then would wait for a minute.
	req := exampleRequest("long-note", `{"turns":[{"steps":[{"text":"Drafting"},{"delayMs":60000},{"text":" done."}]}]}`)
	run := kernel.StreamRun(ctx, req)

	cancelled := make(chan kernel.Effect, 1)
	for env, err := range run.Events() {
		if err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println(env.Sequence, envelopeKind(env))
		if env.Event.MessagePartUpdated != nil {
			// The run is live and its first text is durable: ask for its
			// cancellation as another process would, through the store
			// alone.
			go func() {
				effect, _, err := kernel.RequestCancel(ctx, req.Store, "long-note", "the operator stopped it", time.Now())
				if err != nil {
					fmt.Println(err)
				}
				cancelled <- effect
			}()
		}
	}
	fmt.Println("cancel request:", <-cancelled)
	// A run that did not complete returns its result and a *RunError.
	res, err := run.Result()
	fmt.Println("error:", err)
	if res == nil {
		return
	}
	fmt.Println("status:", res.Status, "reason:", res.Reason)
	fmt.Println("text kept:", res.Text)

	// Asking again changes nothing: the run has ended cancelled.
	effect, _, _ := kernel.RequestCancel(ctx, req.Store, "long-note", "again", time.Now())
	fmt.Println("second request:", effect)
	// Output:
	// 1 status started
	// 2 message.part.updated "Drafting"
	// 3 raw scripted "execution.cancelled"
	// 4 status cancelled
	// cancel request: cancel_requested
	// error: run long-note cancelled (cancelled): cancel requested for run long-note: the operator stopped it
	// status: cancelled reason: cancelled
	// text kept: Drafting
	// second request: cancelled
}
