package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// PRF-11, RG-11: a seated run records the profile it runs — its
// validated document and identity, no secret — so a resumption in
// another process can run it without a copy; a record whose profile does
// not digest to its recorded identity is refused, and ResumeSeated
// refuses another profile than the recorded one, naming both.
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
		Profile: writer, Task: "write a note", Store: st, Check: nonEmpty, RunID: "profiled", Stage: 1}}); err != nil {
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
	if rec.ProfileDigest != want {
		t.Errorf("recorded profile digest %q; want %q", rec.ProfileDigest, want)
	}
	got, err := rec.RecordedProfile()
	if err != nil {
		t.Fatalf("the recorded profile: %v", err)
	}
	if d, _ := profile.Digest(got); d != want {
		t.Errorf("the recorded profile digests to %s; want %s", d, want)
	}

	tampered := *rec
	tampered.ProfileDigest = "sha256:00"
	if _, err := tampered.RecordedProfile(); err == nil {
		t.Error("a recorded profile that does not match its recorded identity was accepted")
	}
	if _, err := (&kernel.SeatedRecord{}).RecordedProfile(); !errors.Is(err, kernel.ErrNoRecordedProfile) {
		t.Errorf("a record without a profile: %v; want ErrNoRecordedProfile", err)
	}

	// An interrupted seated run (no stage recorded) resumed with another
	// profile is refused before anything is recorded.
	interrupted := kernel.SeatedRecord{Task: "write a note", Stages: []kernel.StageAttempt{}, Profile: rec.Profile, ProfileDigest: rec.ProfileDigest}
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
