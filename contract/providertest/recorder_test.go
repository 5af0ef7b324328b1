package providertest

import (
	"slices"
	"testing"
)

// The recorder behind Probe: Fatal ends only its own step, a failed step
// fails its parents and is listed by path, Skip marks without failing,
// and cleanups run last-first.
func TestRecorder(t *testing.T) {
	rec := &recorder{TB: t, shared: &recording{}}
	var order []string
	var after []string
	rec.run(func(r *recorder) {
		r.Cleanup(func() { order = append(order, "first") })
		r.Cleanup(func() { order = append(order, "second") })
		r.Step("ok", func(t TB) { t.Log("fine") })
		r.Step("outer", func(t TB) {
			t.Step("fatal", func(t TB) {
				t.Fatal("stop here")
				after = append(after, "unreachable")
			})
			after = append(after, "outer goes on")
			t.Step("skipped", func(t TB) { t.Skip("not declared") })
		})
		after = append(after, "scenario goes on")
	})
	rec.shared.runCleanups()
	if !rec.failed || rec.skipped {
		t.Errorf("failed %v skipped %v; want failed, not skipped", rec.failed, rec.skipped)
	}
	if want := []string{"outer/fatal", "outer"}; !slices.Equal(rec.shared.report.FailedSteps, want) {
		t.Errorf("failed steps %v, want %v", rec.shared.report.FailedSteps, want)
	}
	if want := []string{"outer goes on", "scenario goes on"}; !slices.Equal(after, want) {
		t.Errorf("ran %v, want %v", after, want)
	}
	if want := []string{"second", "first"}; !slices.Equal(order, want) {
		t.Errorf("cleanups ran %v, want %v", order, want)
	}
	if len(rec.shared.report.Messages) != 3 {
		t.Errorf("messages %q, want a log, an error and a skip", rec.shared.report.Messages)
	}
}

func TestNamesAreUnique(t *testing.T) {
	names := Names()
	seen := map[string]bool{}
	for _, n := range names {
		if seen[n] {
			t.Errorf("scenario %s twice", n)
		}
		seen[n] = true
	}
	for _, want := range []string{"session-replay", "interaction-response", "portable-context", "workspace-branching", "exact-process-lifecycle", "dispatch"} {
		if !seen[want] {
			t.Errorf("no scenario %s", want)
		}
	}
}
