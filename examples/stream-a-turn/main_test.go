package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentrt/agentrt/store/memory"
)

// FD-01, FD-10: a scripted turn streams normalized envelopes ending in one
// terminal, and the store replays all of them.
func TestStreamATurn(t *testing.T) {
	var out bytes.Buffer
	if err := streamTurn(context.Background(), &out, memory.New(nil)); err != nil {
		t.Fatal(err)
	}
	want := `1 status started
2 text "Shipped "
3 text "one-click restore."
4 raw scripted event "usage"
5 raw scripted event "done"
6 status completed (delivered)
replayed 6 of 6 envelopes from the store
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
