package supervise

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// SJ18 check 2 (§3.6 "owned through the kernel's lease-generation
// fence", §9 answer_question "resolve only when delivered", behaviour
// 46; RES-03): a supervisor journaling in SQLite is paused (SIGSTOP)
// past its lease while its worker's blocks-run question is open, and
// another process takes the run over. Continued, the paused manager
// answers the question before its lease renewal has run: by its own
// clock its lease ran out, so the run may be another's, and the answer
// must not reach its worker — which would run on (and spend) for a run
// no longer this process's — nor be reported delivered; the process
// ends with ErrSpawnLogLost. The pause is the lease's monotonic end
// moved to the past (what a continued process's clock says) with the
// store's run taken over at the next generation, as another process's
// open does.
func TestSJ18PausedManagerPastItsLeaseDeliversNoAnswer(t *testing.T) {
	writer, manager := writerAndManager(t)
	n := func(v int64) *int64 { return &v }
	got := make(chan Decision, 1)
	asking := ExecutorFunc(func(ctx context.Context, w Work) (WorkResult, error) {
		spent := ledger.Spend{Tokens: n(5), Iterations: n(1), MicroUSD: n(5)}
		d, err := w.Ask(ctx, AskArgs{Level: "worker", Question: "which colour?", Reason: "the task does not say", Urgency: UrgencyBlocksRun})
		if err != nil {
			return WorkResult{Spent: spent}, err
		}
		got <- d
		return WorkResult{Text: d.Answer + " DONE", Spent: spent}, nil
	})
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	var answered AnswerResult
	var answerErr error
	o := sj18Options(writer, asking, st, BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
		if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "paint"}); err != nil {
			return BrainReport{}, err
		}
		if _, err := c.Await(ctx, AwaitArgs{TimeoutMS: 60_000, Kinds: []string{EventQuestion}}); err != nil {
			return BrainReport{}, err
		}
		if err := pausedPastLease(ctx, c, st, true); err != nil {
			return BrainReport{}, err
		}
		answered, answerErr = c.AnswerQuestion(ctx, AnswerArgs{QuestionID: "q1", Answer: "blue"})
		<-ctx.Done() // the loss stops the brain
		return BrainReport{}, context.Cause(ctx)
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, err = Supervise(ctx, manager, "t", o)
	if !errors.Is(err, ErrSpawnLogLost) {
		t.Errorf("the continued process: %v, want ErrSpawnLogLost", err)
	}
	select {
	case d := <-got:
		t.Errorf("the worker of a run this process no longer held got the answer %+v (answer_question: %+v, %v)", d, answered, answerErr)
	default:
	}
	if answered.Delivered {
		t.Errorf("answer_question said delivered for a run this process no longer held: %+v", answered)
	}
}

// sj18Options is the run every SJ18 paused-manager test starts: one
// writer worker on exec, journaled in st under a 6 s lease, every output
// passing its check, driven by brain.
func sj18Options(writer *profile.Profile, exec Executor, st store.Store, brain Brain) Options {
	n := func(v int64) *int64 { return &v }
	return Options{
		Budget:        ledger.Budget{Tokens: n(10_000), Iterations: n(10), MicroUSD: n(1_000_000)},
		PerWorker:     ledger.Budget{Tokens: n(1_000), Iterations: n(1), MicroUSD: n(100_000)},
		Profiles:      map[string]*profile.Profile{"writer": writer},
		Executor:      exec,
		RunID:         "run1",
		SpawnStore:    st,
		SpawnLeaseTTL: 6 * time.Second,
		Deliverable:   Deliverable{Check: func(context.Context, Output) (kernel.Verdict, error) { return kernel.Verdict{Passed: true}, nil }},
		Brain:         brain,
	}
}

// pausedPastLease makes c's run as a process finds it continued after a
// pause past its store journal's lease: another process took the run in
// st over at the next generation, as its open does, and — when lapsed —
// this process's own clock says its lease ran out (the lease's monotonic
// end moved to when the log was opened), though no renewal found out yet.
func pausedPastLease(ctx context.Context, c *Coordinator, st store.Store, lapsed bool) error {
	sl := c.log.spawn.(*StoreSpawnLog)
	if _, err := st.UpdateRun(ctx, sl.fence.RunID, func(r *store.Run) error {
		r.Generation++
		r.Owner, r.Doc = "another-machine/1", withLease(r.Doc, time.Now().Add(time.Minute))
		return nil
	}); err != nil {
		return err
	}
	if lapsed {
		sl.leaseEnd.Store(0)
	}
	return nil
}

// steeredExec is an executor with its own inbox (Steerer) whose workers
// run until cancelled; every message its inbox accepted is sent on got.
type steeredExec struct {
	started chan NodeID
	got     chan string
}

func (e steeredExec) Execute(ctx context.Context, w Work) (WorkResult, error) {
	e.started <- w.Node
	<-ctx.Done()
	return WorkResult{}, context.Cause(ctx)
}

func (e steeredExec) Deliver(_ context.Context, _ NodeID, msg string) bool {
	e.got <- msg
	return true
}

// SJ18 check 2 for steer_agent (§3.6 "Steering", behaviour 46, 48;
// RES-03): a manager whose run was taken over by another process
// steers its worker — its lease lapsed by its own clock (a pause past
// it), or only taken over (the other machine's clock ran ahead) so that
// the store refuses the steer's request record. Either way the steer
// reaches no worker of the run that is no longer this process's, is not
// reported delivered, and the process ends with ErrSpawnLogLost.
func TestSJ18PausedManagerSteersNoWorker(t *testing.T) {
	for _, lapsed := range []bool{true, false} {
		t.Run(map[bool]string{true: "lapsed", false: "fenced"}[lapsed], func(t *testing.T) {
			writer, manager := writerAndManager(t)
			exec := steeredExec{started: make(chan NodeID, 1), got: make(chan string, 4)}
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			var steered SteerResult
			var steerErr error
			o := sj18Options(writer, exec, st, BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
				if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "paint"}); err != nil {
					return BrainReport{}, err
				}
				var id NodeID
				select {
				case id = <-exec.started:
				case <-time.After(2 * time.Minute):
					return BrainReport{}, errors.New("the worker did not start")
				}
				if err := pausedPastLease(ctx, c, st, lapsed); err != nil {
					return BrainReport{}, err
				}
				steered, steerErr = c.Steer(ctx, SteerArgs{WorkerID: id, Instruction: "focus"})
				<-ctx.Done() // the loss stops the brain
				return BrainReport{}, context.Cause(ctx)
			}))
			o.BudgetExempt = true
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := Supervise(ctx, manager, "t", o); !errors.Is(err, ErrSpawnLogLost) {
				t.Errorf("the continued process: %v, want ErrSpawnLogLost", err)
			}
			select {
			case msg := <-exec.got:
				t.Errorf("a worker of a run this process no longer held got the steer %q (steer_agent: %+v, %v)", msg, steered, steerErr)
			default:
			}
			if steered.Delivered {
				t.Errorf("steer_agent said delivered for a run this process no longer held: %+v", steered)
			}
		})
	}
}

// SJ18 check 2 for a run dir's steer request (§3.6 "Steering",
// behaviour 46, 48): written for the worker of a manager whose store
// journal was taken over (its lease lapsed by its own clock, or only
// fenced), it is claimed by that manager's control scan, but reaches no
// worker of the run that is no longer the process's, and its
// acknowledgement does not say delivered.
func TestSJ18PausedManagerDeliversNoSteerFile(t *testing.T) {
	for _, lapsed := range []bool{true, false} {
		t.Run(map[bool]string{true: "lapsed", false: "fenced"}[lapsed], func(t *testing.T) {
			writer, manager := writerAndManager(t)
			exec := steeredExec{started: make(chan NodeID, 1), got: make(chan string, 4)}
			st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "runs.db"), sqlite.Options{})
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			dir := t.TempDir()
			o := sj18Options(writer, exec, st, BrainFunc(func(ctx context.Context, c *Coordinator, _ string) (BrainReport, error) {
				if _, err := c.Spawn(ctx, SpawnArgs{Profile: "writer", Task: "paint"}); err != nil {
					return BrainReport{}, err
				}
				var id NodeID
				select {
				case id = <-exec.started:
				case <-time.After(2 * time.Minute):
					return BrainReport{}, errors.New("the worker did not start")
				}
				if err := pausedPastLease(ctx, c, st, lapsed); err != nil {
					return BrainReport{}, err
				}
				if _, err := WriteWorkerSteer(ctx, dir, string(id), WorkerSteer{OperationID: "op-1", Message: "focus"}); err != nil {
					return BrainReport{}, err
				}
				select {
				case <-ctx.Done(): // the loss, once the scan found it, stops the brain
				case <-time.After(2 * time.Minute):
					return BrainReport{}, errors.New("the steer request was never taken")
				}
				return BrainReport{}, context.Cause(ctx)
			}))
			o.BudgetExempt, o.RunDir = true, dir
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			if _, err := Supervise(ctx, manager, "t", o); !errors.Is(err, ErrSpawnLogLost) {
				t.Errorf("the continued process: %v, want ErrSpawnLogLost", err)
			}
			select {
			case msg := <-exec.got:
				t.Errorf("a worker of a run this process no longer held got the steer file's %q", msg)
			default:
			}
			if ack, err := ReadSteerAck(context.Background(), dir, "op-1"); err != nil || ack != nil && ack.Effect == SteerDelivered {
				t.Errorf("the steer's acknowledgement %+v (%v): delivered by a process that no longer held the run", ack, err)
			}
		})
	}
}
