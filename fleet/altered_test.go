package fleet

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/store"
)

// A job runs only the spec that was admitted (the job names its digest,
// the run records it): a run whose recorded spec was changed after
// submission, or a job naming another spec than the run records, ends
// failed saying so, and nothing runs — no environment is created.
func TestAlteredSpecIsNeverRun(t *testing.T) {
	tests := []struct {
		name      string
		alter     bool   // change the recorded task after submission
		jobDigest string // what the job names; "" means the submission's
		want      string
	}{
		{"recorded spec changed", true, "", "the submission recorded"},
		{"job names another spec", false, "sha256:0000000000000000000000000000000000000000000000000000000000000000", "the job names spec"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f, _ := openTestFleet(t)
			ctx := t.Context()
			pv, err := canonjson.Decode([]byte(reattachProfile))
			if err != nil {
				t.Fatal(err)
			}
			sub, err := f.Submit(ctx, Submission{Spec: Spec{Profile: pv, Task: "write the note", Provider: "scripted"}})
			if err != nil {
				t.Fatal(err)
			}
			r, err := f.store.GetRun(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			digest, _ := r.Doc.Get(docSpecDigest)
			job := digest.Str()
			if tc.jobDigest != "" {
				job = tc.jobDigest
			}
			if tc.alter {
				if _, err := f.store.UpdateRun(ctx, sub.RunID, func(r *store.Run) error {
					spec, _ := r.Doc.Get(docSpec)
					r.Doc = r.Doc.With(docSpec, spec.With("task", canonjson.StringValue("delete everything")))
					return nil
				}); err != nil {
					t.Fatal(err)
				}
			}
			p := newEnvLedger(t, `{"turns":[{"repeat":true,"steps":[{"text":"note"}]}]}`)
			w, err := f.NewWorker(ctx, WorkerOptions{Providers: map[string]contract.Provider{"scripted": p}})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.execute(ctx, sub.RunID, job); err != nil {
				t.Fatal(err)
			}
			run, err := f.Get(ctx, sub.RunID)
			if err != nil {
				t.Fatal(err)
			}
			if run.Status != store.StatusFailed || run.Outcome == nil || !strings.Contains(run.Outcome.Error, tc.want) || len(run.Attempts) != 0 {
				t.Errorf("run %s, outcome %+v, %d attempts; want failed naming %q, no attempt", run.Status, run.Outcome, len(run.Attempts), tc.want)
			}
			if len(p.created) != 0 {
				t.Errorf("%d environments created for a spec nobody submitted", len(p.created))
			}
		})
	}
}
