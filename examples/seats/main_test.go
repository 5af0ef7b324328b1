package main

import (
	"bytes"
	"context"
	"testing"

	"github.com/agentrt/agentrt/store/memory"
)

// PRF-11, RG-07, RG-08: a quota refusal on the first stage continues on
// the second, authored stage; both providers receive their stage's
// credential request on create, and the stage that runs on its turn too;
// the record names both stages.
func TestSeats(t *testing.T) {
	var out bytes.Buffer
	if err := run(context.Background(), &out, memory.New(nil), "writer-1"); err != nil {
		t.Fatal(err)
	}
	want := `running the seat chain:
  scripted/first: credential request for stage 0 (create), selector all-eligible
  scripted/second: credential request for stage 1 (create), selector seat team-b
  scripted/second: credential request for stage 1 (turn), selector seat team-b
run writer-1 completed:
  stage 0 scripted/first on scripted: quota-refused (provider scripted refused stage 0: quota exhausted: the 5-hour window is used up (retry after 2h0m0s))
  stage 1 scripted/second on scripted: completed
served scripted/second: Restores are one click now.
`
	if out.String() != want {
		t.Errorf("printed\n%s\nwant\n%s", out.String(), want)
	}
}
