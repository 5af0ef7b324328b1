package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentrt/agentrt/store/memory"
)

// FD-04: the caller's own model calls land in the run's ledger; the one
// that reported no cost leaves the total a floor, never a made-up sum.
func TestRuntimeRun(t *testing.T) {
	var out bytes.Buffer
	if err := summarize(context.Background(), &out, memory.New(nil), "summarize-1"); err != nil {
		t.Fatal(err)
	}
	want := `run summarize-1 completed after 3 model calls
spent: input 108, output 18, cost ≥ 0.0008 USD
summary: Restores… Now… Old…
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
