package postgres_test

import (
	"context"
	"fmt"
	"os"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/postgres"
)

// Open connects to a PostgreSQL database (here the one
// $AGENTRT_DATABASE_URL names, e.g. postgres://user:pass@host:5432/db),
// applies the embedded migrations once under an advisory lock, and returns
// a store.Store that many processes and machines can share; pass it as
// kernel.Request.Store. This example needs a running database, so it is
// compiled but not run.
func ExampleOpen() {
	ctx := context.Background()
	st, err := postgres.Open(ctx, os.Getenv("AGENTRT_DATABASE_URL"), postgres.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer st.Close()

	doc, _ := canonjson.Decode([]byte(`{"task":"Write a one-line release note."}`))
	if _, err := st.CreateRun(ctx, store.Run{ID: "note-1", Kind: "execute", Status: store.StatusPending, Doc: doc}); err != nil {
		fmt.Println(err) // store.ErrExists when the run is already there
		return
	}
	// Any process connected to the same database reads the same run.
	run, err := st.GetRun(ctx, "note-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(run.ID, run.Kind, run.Status, string(canonjson.Marshal(run.Doc)))
}
