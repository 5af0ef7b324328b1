package supervise_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// escalations reads the escalation records of run dir dir's
// coordination log, in order.
func escalations(t *testing.T, dir string) []supervise.EscalationRecord {
	t.Helper()
	recs, _, err := supervise.ReadCoordinationLog(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []supervise.EscalationRecord
	for _, r := range recs {
		if r.Kind == supervise.CoordEscalation && r.Escalation != nil {
			out = append(out, *r.Escalation)
		}
	}
	return out
}

// §3.6 escalateQuestion: the root manager's ask_parent goes to the
// caller's EscalateQuestion. Delivered, the reply is queued-for-parent
// naming who holds it and the question is listed escalated; not — no
// hook (no default operator queue), an error, a panic, a hook that does
// not answer in time, or a "delivered" naming nobody — it is no-parent
// with the reason, the manager told it is the last decider, and the
// question expired. Every ask is one record-only escalation record in
// the coordination log.
func TestEscalateQuestionDecidesTheRootsAskParent(t *testing.T) {
	cases := []struct {
		name       string
		hook       func(ctx context.Context, q supervise.Question) (supervise.EscalationOutcome, error)
		wantStatus string
		wantReason string // a substring of the reply's reason
		wantTo     string
		wantListed string
	}{
		{name: "no hook", wantStatus: "no-parent", wantReason: "no parent inbox is configured", wantListed: "expired"},
		{name: "delivered", hook: func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
			return supervise.EscalationOutcome{Delivered: true, To: "the run operator"}, nil
		}, wantStatus: "queued-for-parent", wantReason: "queued for the run operator", wantTo: "the run operator", wantListed: "escalated"},
		{name: "refused", hook: func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
			return supervise.EscalationOutcome{Reason: "the operator is away"}, nil
		}, wantStatus: "no-parent", wantReason: "the operator is away", wantListed: "expired"},
		{name: "error", hook: func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
			return supervise.EscalationOutcome{Delivered: true, To: "ignored"}, errors.New("parent inbox is unreachable")
		}, wantStatus: "no-parent", wantReason: "parent inbox is unreachable", wantListed: "expired"},
		{name: "panic", hook: func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
			panic("the inbox broke")
		}, wantStatus: "no-parent", wantReason: "panicked: the inbox broke", wantListed: "expired"},
		{name: "blocks", hook: func(ctx context.Context, _ supervise.Question) (supervise.EscalationOutcome, error) {
			select {} // ignores its context: callHook stops waiting for it
		}, wantStatus: "no-parent", wantReason: "did not answer", wantListed: "expired"},
		{name: "delivered to nobody", hook: func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
			return supervise.EscalationOutcome{Delivered: true}, nil
		}, wantStatus: "no-parent", wantReason: "without naming who holds", wantListed: "expired"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, askingExecutor, nil)
			o.RunDir = t.TempDir()
			var seen []supervise.Question
			var mu sync.Mutex
			if tc.hook != nil {
				o.EscalateQuestion = func(ctx context.Context, q supervise.Question) (supervise.EscalationOutcome, error) {
					mu.Lock()
					seen = append(seen, q)
					mu.Unlock()
					return tc.hook(ctx, q)
				}
			}
			var reply map[string]any
			var listed []supervise.Question
			var stopped map[string]any
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				reply = tool(t, ctx, c, supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which API version?",
					"reason": "two are supported", "urgency": "blocks-run"})
				listed = c.ListQuestions().Questions
				// Its own question never holds its stop: the root is its asker.
				stopped = tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "done"})
				return supervise.BrainReport{}, nil
			})
			start := time.Now()
			ctx := supervise.WithEscalateTimeout(context.Background(), 200*time.Millisecond)
			if _, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			if took := time.Since(start); took > 20*time.Second {
				t.Errorf("the run took %v: the escalation hook was waited on past its bound", took)
			}
			if reply["status"] != tc.wantStatus || !strings.Contains(reply["reason"].(string), tc.wantReason) {
				t.Errorf("ask_parent: %v, want status %s with a reason holding %q", reply, tc.wantStatus, tc.wantReason)
			}
			guidance, _ := reply["guidance"].(string)
			if last := strings.Contains(guidance, "YOU are the last decider"); last != (tc.wantStatus == "no-parent") {
				t.Errorf("ask_parent's guidance %q; last decider %v, want %v", guidance, last, tc.wantStatus == "no-parent")
			}
			if to, _ := reply["to"].(string); to != tc.wantTo {
				t.Errorf("ask_parent's to %q, want %q", to, tc.wantTo)
			}
			if len(listed) != 1 || listed[0].Status != tc.wantListed {
				t.Errorf("list_questions: %+v, want the question %s", listed, tc.wantListed)
			}
			if stopped["stopped"] != true {
				t.Errorf("stop: %v, want stopped", stopped)
			}
			wantQ := supervise.Question{ID: "q1", From: "run1", Level: "driver", Question: "which API version?", Reason: "two are supported",
				Urgency: supervise.UrgencyBlocksRun, Status: "open"}
			mu.Lock()
			if tc.hook != nil {
				if diff := cmp.Diff([]supervise.Question{wantQ}, seen); diff != "" {
					t.Errorf("the hook saw (-want +got):\n%s", diff)
				}
			}
			mu.Unlock()
			got := escalations(t, o.RunDir)
			want := []supervise.EscalationRecord{{QuestionID: "q1", From: "run1", Urgency: supervise.UrgencyBlocksRun,
				Delivered: tc.wantStatus == "queued-for-parent", To: tc.wantTo}}
			if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(supervise.EscalationRecord{}, "Reason", "AtMS")); diff != "" {
				t.Errorf("the coordination log's escalations (-want +got):\n%s", diff)
			}
			if len(got) == 1 && (got[0].AtMS == 0 || !strings.Contains(reply["reason"].(string), got[0].Reason) && !got[0].Delivered) {
				t.Errorf("the escalation record %+v does not hold when and why", got[0])
			}
		})
	}
}

// §3.6: answer_question escalateTo parent at the root crosses the same
// seam. Delivered, the worker's question stays undecided (listed
// escalated), a blocks-run question still refuses stop (behaviour 54),
// and the answer the manager gives once the caller answered reaches the
// waiting worker. Not delivered, the reply is no-parent with the last
// decider's guidance and the question stays open. escalateTo user does
// not call the hook. Undecided, it is among the re-entry's open
// questions (behaviour 40).
func TestEscalateQuestionDecidesTheRootsEscalationToParent(t *testing.T) {
	for _, delivered := range []bool{true, false} {
		t.Run(map[bool]string{true: "delivered", false: "refused"}[delivered], func(t *testing.T) {
			o := baseOptions(t, askingExecutor, nil)
			o.RunDir = t.TempDir()
			var calls atomic.Int64
			o.EscalateQuestion = func(_ context.Context, q supervise.Question) (supervise.EscalationOutcome, error) {
				calls.Add(1)
				if q.From != "run1:s1" || q.Question != "which colour?" {
					t.Errorf("the hook got %+v, want the worker's question", q)
				}
				if delivered {
					return supervise.EscalationOutcome{Delivered: true, To: "the product owner"}, nil
				}
				return supervise.EscalationOutcome{Reason: "nobody is on call"}, nil
			}
			var escalated, toUser, stop, answered, settled map[string]any
			var status string
			var reentry supervise.ReentryState
			o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
				tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint"))
				tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
				escalated = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "escalateTo": "parent", "escalateReason": "a product call"})
				toUser = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "escalateTo": "user"})
				status = c.ListQuestions().Questions[0].Status
				reentry = c.Reentry()
				stop = tool(t, ctx, c, supervise.VerbStop, map[string]any{"reason": "enough"})
				answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q1", "answer": "blue"})
				settled = tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
				return supervise.BrainReport{}, nil
			})
			if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
				t.Fatal(err)
			}
			wantStatus, wantListed, wantReason := "queued-for-parent", "escalated", "the product owner"
			if !delivered {
				wantStatus, wantListed, wantReason = "no-parent", "open", "nobody is on call"
			}
			if escalated["status"] != wantStatus || escalated["delivered"] != false || !strings.Contains(escalated["reason"].(string), wantReason) {
				t.Errorf("escalateTo parent: %v, want %s (%q), not delivered", escalated, wantStatus, wantReason)
			}
			if g, _ := escalated["guidance"].(string); strings.Contains(g, "last decider") == delivered {
				t.Errorf("escalateTo parent's guidance %q", g)
			}
			if toUser["status"] != "no-parent" || calls.Load() != 1 {
				t.Errorf("escalateTo user: %v, hook called %d times; want no-parent and the hook called once in all", toUser, calls.Load())
			}
			if status != wantListed {
				t.Errorf("the escalated question is listed %s, want %s", status, wantListed)
			}
			if stop["error"] != "unresolved-blocking-questions" {
				t.Errorf("stop while the escalated blocks-run question is undecided: %v", stop)
			}
			// Still the manager's to decide: a re-entry lists it open.
			if len(reentry.OpenQuestions) != 1 || reentry.OpenQuestions[0].ID != "q1" {
				t.Errorf("the re-entry's open questions %+v, want q1", reentry.OpenQuestions)
			}
			ev, _ := settled["event"].(map[string]any)
			if answered["delivered"] != true || ev["output"] != "answer: blue DONE" {
				t.Errorf("the later answer: %v, the worker settled %v; want it delivered and used", answered, settled)
			}
			if got := escalations(t, o.RunDir); len(got) != 1 || got[0].QuestionID != "q1" || got[0].From != "run1:s1" || got[0].Delivered != delivered {
				t.Errorf("the coordination log's escalations: %+v, want one for q1 from run1:s1, delivered %v", got, delivered)
			}
		})
	}
}

// escalateCall is a router manager's ask_parent call a1.
func escalateCall() scripted.ChatTurn {
	return turn(scripted.Call("a1", supervise.ToolPrefix+supervise.VerbAskParent,
		`{"level":"driver","question":"which API version?","reason":"two are supported","urgency":"blocks-run"}`), managerUsage(10, 5, 0.0001))
}

// A root manager whose process died after its ask_parent escalated its
// question — the escalation journaled, the call's result not — is
// resumed with the call run again by its tool loop: it gets the
// journaled outcome back (replayed), the caller's EscalateQuestion is
// not called again, and no second question is asked (§3.6
// escalateQuestion; doc.go "re-run calls"). Run dir (file journal) and
// store journal (SQLite, PostgreSQL).
func TestEscalateQuestionNotCalledAgainOnResume(t *testing.T) {
	type home struct {
		name  string
		setup func(t *testing.T, o *supervise.Options, dead *atomic.Bool) (context.Context, func() store.Store)
	}
	homes := []home{{"file", func(t *testing.T, o *supervise.Options, dead *atomic.Bool) (context.Context, func() store.Store) {
		o.RunDir = t.TempDir()
		// The process dies as the hook returns: the escalation reaches the
		// coordination log, nothing more reaches the spawn journal.
		return supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
			return cutAfter{SpawnLog: sl, kind: "none", dead: dead}
		}), nil
	}}}
	for _, qs := range questionStores {
		homes = append(homes, home{qs.name, func(t *testing.T, o *supervise.Options, _ *atomic.Bool) (context.Context, func() store.Store) {
			st := qs.open(t)
			o.RunID, o.SpawnLeaseTTL = "erun", kernel.MinLeaseTTL
			// The store takes the escalation record, then nothing more.
			o.SpawnStore = &cutStore{Store: st, kind: supervise.KindQuestionEscalated, after: 1}
			return context.Background(), func() store.Store { return st }
		}})
	}
	for _, h := range homes {
		t.Run(h.name, func(t *testing.T) {
			var calls atomic.Int64
			var dead atomic.Bool
			mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAskParent)
			first := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				escalateCall(), turn(scripted.Text("unreached"), managerUsage(10, 5, 0.0001)),
			}})
			o := baseOptions(t, askingExecutor, first)
			o.EscalateQuestion = func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
				calls.Add(1)
				dead.Store(true)
				return supervise.EscalationOutcome{Delivered: true, To: "the run operator"}, nil
			}
			ctx, reopen := h.setup(t, &o, &dead)
			if _, err := supervise.Supervise(ctx, mgr, "t", o); err == nil {
				t.Fatal("the cut run returned no error, want its journal's failure")
			}
			if calls.Load() != 1 {
				t.Fatalf("the cut run called the hook %d times, want once", calls.Load())
			}
			var seen []string
			second := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
				turn(scripted.Text("resumed"), managerUsage(10, 5, 0.0001)),
			}})
			o.Router, o.Resume, o.Budget = recordingModel{inner: second, seen: &seen}, true, ledger.Budget{}
			if reopen != nil {
				o.SpawnStore = reopen()
			}
			res, err := supervise.Supervise(context.Background(), mgr, "", o)
			if err != nil {
				t.Fatal(err)
			}
			if calls.Load() != 1 || res.BrainText != "resumed" {
				t.Errorf("the hook was called %d times in all, brain said %q; want once", calls.Load(), res.BrainText)
			}
			joined := strings.Join(seen, "\n")
			if !strings.Contains(joined, `"status":"queued-for-parent"`) || !strings.Contains(joined, `"replayed":true`) || !strings.Contains(joined, `"questionId":"q1"`) {
				t.Errorf("the resumed manager read %q, want q1's journaled outcome replayed", seen)
			}
			var n int
			if reopen == nil {
				n = len(escalations(t, o.RunDir))
				recs, _, err := supervise.ReadCoordinationLog(context.Background(), o.RunDir)
				if err != nil {
					t.Fatal(err)
				}
				asked := 0
				for _, r := range recs {
					if r.Kind == supervise.CoordQuestion {
						asked++
					}
				}
				if asked != 1 {
					t.Errorf("%d questions journaled, want the one ask", asked)
				}
			} else {
				asked, _ := journaledQuestions(t, o.SpawnStore, "erun")
				if len(asked) != 1 {
					t.Errorf("questions journaled %v, want the one ask", asked)
				}
				n = countStoreKind(t, o.SpawnStore, "erun", supervise.KindQuestionEscalated)
			}
			if n != 1 {
				t.Errorf("%d escalation records, want one", n)
			}
		})
	}
}

// countStoreKind counts run runID's spawn journal records of kind in st.
func countStoreKind(t *testing.T, st store.Store, runID, kind string) int {
	t.Helper()
	n, after := 0, ""
	for {
		recs, next, err := supervise.ReadStoreSpawnLog(context.Background(), st, runID, after)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range recs {
			if r.Kind == kind {
				n++
			}
		}
		if next == after {
			return n
		}
		after = next
	}
}

// The same for answer_question escalateTo parent: a root manager whose
// process died after its escalation of the worker's q1 was journaled,
// and before the call's result was, is resumed with the call run again;
// it gets the journaled outcome back (replayed) and the caller's
// EscalateQuestion is not called again (§3.6 escalateQuestion).
func TestEscalateQuestionDecisionNotCalledAgainOnResume(t *testing.T) {
	var calls atomic.Int64
	var dead atomic.Bool
	mgr := managerProfile(t, supervise.VerbSpawnWorker, supervise.VerbAwaitEvent, supervise.VerbAnswerQuestion)
	first := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(scripted.Call("s1", supervise.ToolPrefix+supervise.VerbSpawnWorker, `{"profile":"writer","task":"paint"}`), managerUsage(10, 5, 0.0001)),
		turn(scripted.Call("w1", supervise.ToolPrefix+supervise.VerbAwaitEvent, `{"kinds":["question"],"timeoutMs":60000}`), managerUsage(10, 5, 0.0001)),
		turn(scripted.Call("e1", supervise.ToolPrefix+supervise.VerbAnswerQuestion, `{"questionId":"q1","escalateTo":"parent"}`), managerUsage(10, 5, 0.0001)),
		turn(scripted.Text("unreached"), managerUsage(10, 5, 0.0001)),
	}})
	o := baseOptions(t, askingExecutor, first)
	o.RunDir = t.TempDir()
	o.EscalateQuestion = func(context.Context, supervise.Question) (supervise.EscalationOutcome, error) {
		calls.Add(1)
		dead.Store(true)
		return supervise.EscalationOutcome{Delivered: true, To: "the product owner"}, nil
	}
	ctx := supervise.WithSpawnLogWrapper(context.Background(), func(sl supervise.SpawnLog) supervise.SpawnLog {
		return cutAfter{SpawnLog: sl, kind: "none", dead: &dead}
	})
	if _, err := supervise.Supervise(ctx, mgr, "t", o); err == nil || calls.Load() != 1 {
		t.Fatalf("the cut run: err %v, hook called %d times; want its journal's failure after one call", err, calls.Load())
	}
	var seen []string
	second := scripted.NewChatModel(scripted.ChatScript{Turns: []scripted.ChatTurn{
		turn(scripted.Text("resumed"), managerUsage(10, 5, 0.0001)),
	}})
	o.Router, o.Resume, o.Budget = recordingModel{inner: second, seen: &seen}, true, ledger.Budget{}
	res, err := supervise.Supervise(context.Background(), mgr, "", o)
	if err != nil {
		t.Fatal(err)
	}
	if calls.Load() != 1 || res.BrainText != "resumed" {
		t.Errorf("the hook was called %d times in all, brain said %q; want once", calls.Load(), res.BrainText)
	}
	joined := strings.Join(seen, "\n")
	if !strings.Contains(joined, `"status":"queued-for-parent"`) || !strings.Contains(joined, `"replayed":true`) {
		t.Errorf("the resumed manager read %q, want q1's escalation replayed", seen)
	}
	if got := escalations(t, o.RunDir); len(got) != 1 || got[0].QuestionID != "q1" || got[0].Call != "e1" {
		t.Errorf("escalation records %+v, want the one of q1 by call e1", got)
	}
}

// §3.6 escalateQuestion, §9 ask_parent: the guidance a no-parent reply
// gives the root about its own question sends it to no verb that
// refuses. The root's own question is listed expired (decided: its asker
// is the root, so it never holds stop), so answer_question on it is
// refused already-decided; the guidance used to tell the manager to
// decide it with answer_question all the same.
func TestRootsOwnNoParentQuestionGuidanceNamesNoRefusedVerb(t *testing.T) {
	o := baseOptions(t, askingExecutor, nil)
	var reply, answered map[string]any
	o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		reply = tool(t, ctx, c, supervise.VerbAskParent, map[string]any{"level": "driver", "question": "which API version?",
			"reason": "two are supported", "urgency": "blocks-run"})
		answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": reply["questionId"], "deferReason": "deciding myself"})
		return supervise.BrainReport{}, nil
	})
	if _, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o); err != nil {
		t.Fatal(err)
	}
	guidance, _ := reply["guidance"].(string)
	if reply["status"] != "no-parent" || !strings.Contains(guidance, "YOU are the last decider") {
		t.Fatalf("ask_parent: %v, want no-parent with the last-decider guidance", reply)
	}
	if strings.Contains(guidance, supervise.VerbAnswerQuestion) && answered["error"] != nil {
		t.Errorf("the guidance %q sends the manager to answer_question, which refuses its own question: %v", guidance, answered)
	}
	if answered["error"] != "already-decided" {
		t.Errorf("answer_question on the root's own expired question: %v, want already-decided", answered)
	}
}
