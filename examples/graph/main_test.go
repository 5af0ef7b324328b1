package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/store/memory"
	"github.com/agentrt/agentrt/supervise"
)

// FD-07, behaviour 53: a graph written as data runs as one supervised
// run; both delegations are delivered with their bytes and destination
// workers, the critic's finding reaches the driver with the SOURCE
// worker, the critic's output is never delivered, and the run dir's
// journal holds one edge record per ledger row. The driver's scripted
// model reports no cost, so the dollars stay unknown.
func TestGraph(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	if err := run(context.Background(), &out, memory.New(nil), dir); err != nil {
		t.Fatal(err)
	}
	want := `delegates:driver->coder #1 delivered fresh 81 bytes, worker login:s1
analyzes:critic:coder->driver #1 delivered steer 77 bytes, worker login:s1
delegates:driver->reviewer #1 delivered fresh 70 bytes, worker login:s3
worker login:s1 coder    done, delivered true
worker login:s2 critic   done, delivered false
worker login:s3 reviewer done, delivered false
winner: login:s1 "patch: guard the nil session."
spent: 625 tokens, 3 worker iterations, $0.004000 (known false)
`
	if out.String() != want {
		t.Errorf("output:\n%s\nwant:\n%s", out.String(), want)
	}
	data, err := os.ReadFile(filepath.Join(dir, supervise.SpawnJournalFile))
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), `"kind":"edge"`); n != 3 {
		t.Errorf("journal has %d edge records, want 3", n)
	}
}
