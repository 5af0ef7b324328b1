package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/memory"
)

// FD-03, FD-10: a scripted model calls a tool twice, then answers; the
// loop is recorded completed.
func TestToolLoop(t *testing.T) {
	st := memory.New(nil)
	var out bytes.Buffer
	if err := toolLoop(context.Background(), &out, st); err != nil {
		t.Fatal(err)
	}
	want := `tool stock({"sku":"A-1"}) → {"sku":"A-1","units":12}
tool stock({"sku":"B-2"}) → {"sku":"B-2","units":0}
answer: A-1: 12 in stock. B-2: sold out.
stop: completed after 3 model turns; tokens in 214, out 29
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
	runs, err := st.ListRuns(context.Background(), store.ListOptions{})
	if err != nil || len(runs) != 1 || runs[0].Status != store.StatusCompleted || runs[0].Kind != "tool-loop" {
		t.Errorf("recorded %+v, %v", runs, err)
	}
}
