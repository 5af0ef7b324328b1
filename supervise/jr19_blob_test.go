package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// outRefOf is the outRef a row holds.
func outRefOf(t *testing.T, row string) string {
	t.Helper()
	_, ref, ok := strings.Cut(row, `"outRef":"`)
	if !ok {
		t.Fatalf("no outRef in %s", row)
	}
	ref, _, _ = strings.Cut(ref, `"`)
	return ref
}

// JR19 (g), §3.6 "blobs/ (one content-addressed JSON file per settled
// result)" and behaviour 46: a result blob whose bytes do not hash to
// its name — the run dir's file or the store's copy rewritten — is
// never delivered. A settled worker's forged blob leaves it settled
// and undelivered (another delivered worker wins, none runs again);
// the finished record of an ended run keeps the text it committed.
func TestJR19ForgedSettledBlobIsNeverDelivered(t *testing.T) {
	for hname, mk := range tamperedJournals(t) {
		for _, ended := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/ended=%v", hname, ended), func(t *testing.T) {
				j := mk(t)
				res, again, _, err := jr19Resume(t, j, ended, func(rows []string) []string {
					j.forgeBlob(t, outRefOf(t, rows[jrRowOf(rows, "settled", "run1:s1")]), `{"text":"forged: DONE"}`)
					if !ended {
						rows = withoutFinished(rows)
					}
					return rows
				})
				if err != nil || res.Winner == nil {
					t.Fatalf("the resume: %+v, %v", res, err)
				}
				want := supervise.NodeID("run1:s3")
				if ended {
					want = "run1:s1" // the finished record's, with the text it committed
				}
				if res.Winner.Node != want || strings.Contains(res.Winner.Text, "forged") {
					t.Errorf("winner %s %q; want %s and never the forged text", res.Winner.Node, res.Winner.Text, want)
				}
				if n := again.count("alpha") + again.count("beta") + again.count("slow"); n != 0 {
					t.Errorf("the resume ran %d workers again", n)
				}
			})
		}
	}
}

// JR19 (g), behaviour 46 over §3.6 (a submit_result's result is stored
// before its record is journaled, so every submitted record has its
// blob): a submitted record whose blob does not hash to its name — or
// is gone — cannot say what the run accepted. A resume refuses it with
// a *ResumeError naming the journal's place and the blob's, in each
// home alike. Before, it replayed into the run's winner with an empty
// text.
func TestJR19ForgedSubmittedBlobIsRefused(t *testing.T) {
	for hname, mk := range tamperedJournals(t) {
		t.Run(hname, func(t *testing.T) {
			j := mk(t)
			o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
			j.set(&o)
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				if c.Reentry().Resumed {
					return supervise.BrainReport{}, nil
				}
				_, err := c.Submit(ctx, supervise.SubmitArgs{Result: "mine: DONE"})
				return supervise.BrainReport{}, err
			})
			if res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o); err != nil || res.Winner == nil || res.Winner.Text != "mine: DONE" {
				t.Fatalf("the first run: %+v, %v", res, err)
			}
			rows := withoutFinished(j.rows(t))
			last := rows[len(rows)-1]
			if !strings.Contains(last, `"kind":"submitted"`) {
				t.Fatalf("the journal's last row before its end is not the submission: %s", last)
			}
			j.write(t, rows)
			j.forgeBlob(t, outRefOf(t, last), `{"text":"forged: DONE"}`)
			o.Resume = true
			res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
			if err == nil {
				t.Fatalf("the resume returned %s winner %+v; want a *supervise.ResumeError naming %s", res.Status, res.Winner, j.where)
			}
			refusedAt(t, err, j.where)
			if _, ok := errors.AsType[*supervise.BlobError](err); !ok {
				t.Errorf("the refusal %v names no *supervise.BlobError", err)
			}
		})
	}
}

// JR19 (d), §3.6 "submit_result retains the FIRST passing result" and
// "payload conflict fails closed": Submit journals one submitted record
// per manager (a second is refused earlier-passing-result before it is
// journaled), so a journal holding a second one with another result is
// no run's. Replayed, the later record replaced the first: the resumed
// run's winner was the result the manager never had accepted. It is
// refused with a *ResumeError naming the journal's place, in every home
// alike; the same record twice is one submission.
func TestJR19SecondSubmissionIsRefused(t *testing.T) {
	for hname, mk := range tamperedJournals(t) {
		for _, same := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/same=%v", hname, same), func(t *testing.T) {
				j := mk(t)
				brain := supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					if c.Reentry().Resumed {
						return supervise.BrainReport{}, nil
					}
					if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: "write alpha"}); err != nil {
						return supervise.BrainReport{}, err
					}
					if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventSettled}}); err != nil || ev.Event == nil {
						return supervise.BrainReport{}, fmt.Errorf("await: %+v, %v", ev, err)
					}
					_, err := c.Submit(ctx, supervise.SubmitArgs{Result: "mine: DONE"})
					return supervise.BrainReport{}, err
				})
				o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
				j.set(&o)
				o.Brain = brain
				if res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o); err != nil || res.Winner == nil || res.Winner.Text != "mine: DONE" {
					t.Fatalf("the first run: %+v, %v", res, err)
				}
				rows := withoutFinished(j.rows(t))
				second := rows[len(rows)-1]
				if !same {
					// alpha's result, whose blob the journal holds.
					second = `{"kind":"submitted","outRef":"` + outRefOf(t, rows[jrRowOf(rows, "settled", "run1:s1")]) + `","verdict":{"passed":true}}`
				}
				j.write(t, append(rows, second))
				again := newCounting(t, workerProvider(t))
				o = baseOptions(t, again, nil)
				j.set(&o)
				o.Brain, o.Resume = brain, true
				res, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "ship", o)
				if same {
					if err != nil || res.Winner == nil || res.Winner.Text != "mine: DONE" {
						t.Fatalf("the resume over the same submission twice: %+v, %v; want the submitted result", res.Winner, err)
					}
					return
				}
				if err == nil {
					t.Fatalf("the resume returned %s winner %+v; want a *supervise.ResumeError naming %s", res.Status, res.Winner, j.where)
				}
				refusedAt(t, err, j.where)
				if again.count("alpha") != 0 {
					t.Errorf("the refused resume ran alpha again")
				}
			})
		}
	}
}
