package fleet_test

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/providers/scripted"
)

// A submitter and a worker, usually on different machines, sharing one
// PostgreSQL database. (It needs a database, so it is compiled, not run;
// the package's tests run the same calls.)
func Example() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	f, err := fleet.Open(ctx, fleet.Options{DatabaseURL: os.Getenv("AGENTRT_DATABASE_URL")})
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()
	if _, err := f.Migrate(ctx); err != nil { // once, or `agentrt fleet migrate`
		log.Fatal(err)
	}

	// Submit: returns at once with the run's id; the key makes a retry
	// return the same run.
	profile, _ := canonjson.Decode([]byte(`{"name":"note-writer","harness":"cli-base","model":{"provider":"scripted","default":"scripted/note-writer"}}`))
	sub, err := f.Submit(ctx, fleet.Submission{
		Spec:           fleet.Spec{Profile: profile, Task: "Write a release note", Provider: "scripted"},
		IdempotencyKey: "notes-42",
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("submitted", sub.RunID)

	// Work: until ctx ends, then a graceful stop.
	w, err := f.NewWorker(ctx, fleet.WorkerOptions{
		Providers: map[string]contract.Provider{"scripted": scripted.New(scripted.DefaultScript(), scripted.Options{})},
	})
	if err != nil {
		log.Fatal(err)
	}
	if err := w.Run(ctx); err != nil {
		log.Fatal(err)
	}
	r, err := f.Get(context.Background(), sub.RunID)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(r.Status, len(r.Attempts), "attempt(s)")
}
