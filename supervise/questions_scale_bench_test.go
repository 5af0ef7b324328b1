package supervise_test

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/agentrt/agentrt/ledger"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/supervise"
)

// BenchmarkAnswerQuestions: n questions are asked of the manager at once
// and it answers each: the cost per run should grow linearly with n
// (ns/op and B/op are per run of n questions).
func BenchmarkAnswerQuestions(b *testing.B) {
	for _, n := range []int{2000, 20000} {
		b.Run(fmt.Sprintf("questions=%d", n), func(b *testing.B) {
			manager, err := profile.Parse([]byte(`{"name": "m", "harness": "cli-base", "tools": {"agent_runtime_coordination_answer_question": true}}`))
			if err != nil {
				b.Fatal(err)
			}
			writer, err := profile.Parse([]byte(writerProfile))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				o := supervise.Options{Budget: ledger.Budget{Tokens: i64(1 << 40), Iterations: i64(1 << 40), MicroUSD: i64(1 << 40)},
					PerWorker: worker, Profiles: map[string]*profile.Profile{"writer": writer}, Deliverable: doneCheck,
					Executor: supervise.ExecutorFunc(func(context.Context, supervise.Work) (supervise.WorkResult, error) {
						return supervise.WorkResult{}, nil
					})}
				o.Brain = supervise.BrainFunc(func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
					var wg sync.WaitGroup
					errs := make([]error, n)
					for i := range n {
						wg.Go(func() {
							_, errs[i] = c.Ask(ctx, supervise.AskArgs{From: "w", Level: "worker", Urgency: supervise.UrgencyBlocksStep, Question: "which?"})
						})
					}
					for range n {
						if r, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000, Kinds: []string{supervise.EventQuestion}}); err != nil || r.Event == nil {
							return supervise.BrainReport{}, fmt.Errorf("await: %+v %w", r, err)
						}
					}
					for i := range n {
						if _, err := c.AnswerQuestion(ctx, supervise.AnswerArgs{QuestionID: fmt.Sprintf("q%d", i+1), Answer: "this"}); err != nil {
							return supervise.BrainReport{}, err
						}
					}
					wg.Wait()
					for _, err := range errs {
						if err != nil {
							return supervise.BrainReport{}, err
						}
					}
					return supervise.BrainReport{}, nil
				})
				if _, err := supervise.Supervise(context.Background(), manager, "t", o); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
