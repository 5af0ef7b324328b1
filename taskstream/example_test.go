package taskstream_test

import (
	"context"
	"fmt"
	"log"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/taskstream"
)

// One agent turn as the runtime's task stream, run as an exact kernel
// run on the scripted provider.
func ExampleRun() {
	p, err := profile.Parse([]byte(`{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`))
	if err != nil {
		log.Fatal(err)
	}
	sc, err := scripted.ParseScript([]byte(`{"turns":[{"steps":[{"text":"Restores are one click."},{"usage":{"inputTokens":9,"outputTokens":5},"mode":"delta"}]}]}`))
	if err != nil {
		log.Fatal(err)
	}
	backend := &taskstream.ProviderBackend{Provider: scripted.New(sc, scripted.Options{}), Profile: p, Store: memory.New(nil)}
	for e, err := range taskstream.Run(context.Background(), taskstream.Options{
		Task:    taskstream.Task{ID: "note", Intent: "Write a one-line release note."},
		Backend: backend,
	}) {
		if err != nil {
			log.Fatal(err)
		}
		switch e.Type {
		case taskstream.EventTextDelta:
			fmt.Printf("%s %q\n", e.Type, e.Text)
		case taskstream.EventLLMCall:
			fmt.Printf("%s %s in=%d out=%d cost known=%v\n", e.Type, e.LLMCall.Model, *e.LLMCall.TokensIn, *e.LLMCall.TokensOut, e.LLMCall.USDKnown)
		case taskstream.EventFinal:
			fmt.Printf("%s %s %q\n", e.Type, e.Status, e.Text)
		default:
			fmt.Println(e.Type)
		}
	}
	// Output:
	// task_start
	// readiness_start
	// readiness_end
	// session_created
	// backend_start
	// text_delta "Restores are one click."
	// llm_call scripted/note-writer in=9 out=5 cost known=false
	// backend_end
	// task_end
	// final completed "Restores are one click."
}
