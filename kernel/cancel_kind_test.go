package kernel_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/delegation"
	"github.com/agentrt/agentrt/fleet"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
	"github.com/agentrt/agentrt/supervise"
)

// RequestCancel writes its request only into runs the kernel's cancel
// path honours (§13 cancel effects): a run another package owns (a
// retained run, a delegation, a supervised run's journal) is refused with
// a typed error naming the kinds it cancels and the path to use, and its
// record is left as it was. Kernel kinds and fleet runs (whose worker
// forwards the request) are still accepted.
func TestRequestCancelRefusesForeignKinds(t *testing.T) {
	ctx := context.Background()
	st, err := sqlite.Open(ctx, filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	live := time.Now().Add(time.Hour)
	tests := []struct {
		kind    string
		refused bool
	}{
		{retained.Kind, true},
		{delegation.Kind, true},
		{supervise.SpawnLogRunKind, true},
		{"execute", false},
		{kernel.KindToolLoop, false},
		{kernel.KindRounds, false},
		{kernel.KindRuntime, false},
		{kernel.KindSeated, false},
		{fleet.Kind, false},
		{"improve-propose", false}, // a caller-chosen RunToolLoop kind
	}
	for _, tc := range tests {
		t.Run(tc.kind, func(t *testing.T) {
			id := "run-" + tc.kind
			before, err := st.CreateRun(ctx, store.Run{ID: id, Kind: tc.kind, Status: store.StatusRunning, Owner: "elsewhere", LeaseUntil: live})
			if err != nil {
				t.Fatal(err)
			}
			effect, _, err := kernel.RequestCancel(ctx, st, id, "stop", time.Now())
			after, gerr := st.GetRun(ctx, id)
			if gerr != nil {
				t.Fatal(gerr)
			}
			_, requested := after.Doc.Get("cancelRequested")
			if !tc.refused {
				if err != nil || effect != kernel.EffectCancelRequested || !requested {
					t.Fatalf("effect %q err %v requested %v; want cancel_requested recorded", effect, err, requested)
				}
				return
			}
			fe, ok := errors.AsType[*kernel.ForeignKindError](err)
			if !ok || !errors.Is(err, kernel.ErrNotKernelRun) {
				t.Fatalf("err %v; want a *ForeignKindError matching ErrNotKernelRun", err)
			}
			if fe.RunID != id || fe.Kind != tc.kind || fe.Use == "" {
				t.Errorf("error fields %+v", fe)
			}
			if effect != kernel.EffectUnknown {
				t.Errorf("effect %q, want unknown", effect)
			}
			if requested || after.Revision != before.Revision {
				t.Errorf("the refused request changed the record (revision %d → %d)", before.Revision, after.Revision)
			}
		})
	}
}
