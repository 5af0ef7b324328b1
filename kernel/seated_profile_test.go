package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// PRF-11, RG-11: a seated run records the identity of the profile it
// runs and where the caller read it, never the profile itself (its seat
// selectors name accounts, which are never recorded); ResumeSeated
// refuses another profile than the recorded one, naming both, before
// anything is recorded.
func TestSeatedRunRecordsItsProfile(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "agentrt.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	writer := mustProfile(t, seatWriter)
	want, err := profile.Digest(writer)
	if err != nil {
		t.Fatal(err)
	}
	second := newSeatProvider(t, "scripted/second", false)
	accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return second, nil })
	if _, err := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: writer, Task: "write a note", Store: st, Check: nonEmpty, RunID: "profiled", Stage: 1}, ProfileSource: "/profiles/writer.json"}); err != nil {
		t.Fatal(err)
	}
	run, err := st.GetRun(ctx, "profiled")
	if err != nil {
		t.Fatal(err)
	}
	rec, err := kernel.DecodeSeatedRecord(run.Doc)
	if err != nil {
		t.Fatal(err)
	}
	if rec.ProfileDigest != want || rec.ProfileSource != "/profiles/writer.json" {
		t.Errorf("recorded profile %q from %q; want %q from /profiles/writer.json", rec.ProfileDigest, rec.ProfileSource, want)
	}
	if doc := string(canonjson.Marshal(run.Doc)); strings.Contains(doc, "team-b") {
		t.Errorf("the seated record names the account team-b:\n%s", doc)
	}

	// An interrupted seated run (no stage recorded) resumed with another
	// profile is refused before anything is recorded.
	interrupted := kernel.SeatedRecord{Task: "write a note", Stages: []kernel.StageAttempt{}, ProfileDigest: rec.ProfileDigest}
	doc, err := canonjson.ToValue(interrupted)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.CreateRun(ctx, store.Run{ID: "died", Kind: kernel.KindSeated, Status: store.StatusInterrupted, Doc: doc}); err != nil {
		t.Fatal(err)
	}
	other := mustProfile(t, seatWriter)
	other.Seats[1].Model = "scripted/third"
	_, err = kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: accounts, Request: kernel.Request{
		Profile: other, Task: "write a note", Store: st, Check: nonEmpty, RunID: "died"}})
	oe, ok := errors.AsType[*kernel.OptionsError](err)
	if !ok || oe.Field != "Profile" {
		t.Fatalf("resuming with another profile: %v; want an *OptionsError for Profile", err)
	}
	if _, err := st.GetRun(ctx, "died.resume-1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("a refused resumption was recorded (%v)", err)
	}
}
