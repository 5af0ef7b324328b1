package sqlite_test

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// Open creates the file (and its migrations) on first use; a run written
// through one Store is read back through another opened on the same file,
// as a second process would. kernel.Execute and the other front doors
// take the Store as Request.Store.
func ExampleOpen() {
	ctx := context.Background()
	dir, err := os.MkdirTemp("", "agentrt-example-")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "agentrt.db")

	writer, err := sqlite.Open(ctx, path, sqlite.Options{})
	if err != nil {
		fmt.Println(err)
		return
	}
	doc, _ := canonjson.Decode([]byte(`{"task":"Write a one-line release note."}`))
	if _, err := writer.CreateRun(ctx, store.Run{ID: "note-1", Kind: "execute", Status: store.StatusPending, Doc: doc}); err != nil {
		fmt.Println(err)
		return
	}
	if err := writer.Close(); err != nil {
		fmt.Println(err)
		return
	}

	// MustExist: a reader refuses a path where no store is, rather than
	// answering from a new, empty one.
	reader, err := sqlite.Open(ctx, path, sqlite.Options{MustExist: true})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer reader.Close()
	run, err := reader.GetRun(ctx, "note-1")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(run.ID, run.Kind, run.Status, "revision", run.Revision, "generation", run.Generation)
	fmt.Println(string(canonjson.Marshal(run.Doc)))

	_, err = reader.GetRun(ctx, "note-2")
	fmt.Println("note-2 not found:", errors.Is(err, store.ErrNotFound))
	// Output:
	// note-1 execute pending revision 1 generation 1
	// {"task":"Write a one-line release note."}
	// note-2 not found: true
}
