package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"
)

// FD-08, RES-05, RES-06: the starter reads one event and is dropped; a
// new store connection and provider client re-attach by the control ref
// and receive exactly the remaining events and the result, under the same
// identity.
func TestRetainedRun(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out bytes.Buffer
	if err := retainedRun(ctx, &out, filepath.Join(t.TempDir(), "agentrt.db"), "release-notes-test"); err != nil {
		t.Fatal(err)
	}
	want := `admitted intent
admitted environment
admitted dispatched
control ref: record retained-7c765d44b62f6242a905492970c79864, session rs-7c765d44b62f6242a905492970c79864, execution rx-7c765d44b62f6242a905492970c79864
starter saw   1 execution.started
starter dropped
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
