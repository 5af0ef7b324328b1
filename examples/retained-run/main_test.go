package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestMain lets the test binary play the starter: the test re-executes
// it with starterEnv set, as the example re-executes itself.
func TestMain(m *testing.M) {
	if os.Getenv(starterEnv) != "" {
		starterMain()
		return
	}
	os.Exit(m.Run())
}

// FD-08, RES-05, RES-06: the starter is a real child process (this test
// binary re-executed) that starts the run, reads one event and is killed
// with SIGKILL; this process re-attaches by the control ref it printed,
// through a new store connection and provider client, and receives
// exactly the remaining events and the result, under the same identity.
// The provider (served on loopback, as agentrt serve would) owns the run.
func TestRetainedRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := retainedRun(ctx, &out, self, filepath.Join(t.TempDir(), "agentrt.db"), "release-notes-test"); err != nil {
		t.Fatalf("%v\n%s", err, out.String())
	}
	want := `starter: admitted intent
starter: admitted environment
starter: admitted dispatched
starter: control ref: record retained-7c765d44b62f6242a905492970c79864, session rs-7c765d44b62f6242a905492970c79864, execution rx-7c765d44b62f6242a905492970c79864
starter: saw 1 execution.started
starter ended: signal: killed
re-attached, same identity: true
re-attach saw 2 message.part.updated Drafted the outline. 
re-attach saw 3 message.part.updated Wrote the release notes.
re-attach saw 4 done Drafted the outline. Wrote the release notes.
result: completed "Drafted the outline. Wrote the release notes."
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
