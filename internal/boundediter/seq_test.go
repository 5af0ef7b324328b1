package boundediter_test

import (
	"context"
	"errors"
	"iter"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/internal/boundediter"
)

// numbers yields 1..n, then does what tail says.
func numbers(n int, tail func(ctx context.Context)) func(ctx context.Context) iter.Seq2[int, error] {
	return func(ctx context.Context) iter.Seq2[int, error] {
		return func(yield func(int, error) bool) {
			for i := 1; i <= n; i++ {
				if !yield(i, nil) {
					return
				}
			}
			if tail != nil {
				tail(ctx)
			}
		}
	}
}

type got struct {
	items []int
	err   error
}

func drain(ctx context.Context, seq iter.Seq2[int, error], grace time.Duration) got {
	var g got
	for v, err := range boundediter.Seq2(ctx, seq, grace) {
		if err != nil {
			g.err = err
			continue
		}
		g.items = append(g.items, v)
	}
	return g
}

// A producer that ends is read whole; one that panics ends in a
// *PanicError after what it yielded; one that ignores its context and
// blocks is abandoned a grace after the context ended, with the
// context's cause; one that honours its context is heard to its end.
func TestSeq2BoundsAnUntrustedProducer(t *testing.T) {
	forever := make(chan struct{}) // never closed: a producer that ignores ctx
	t.Cleanup(func() { close(forever) })
	tests := []struct {
		name     string
		seq      func(ctx context.Context) iter.Seq2[int, error]
		deadline time.Duration
		items    []int
		check    func(error) bool
	}{
		{"ends", numbers(3, nil), 0, []int{1, 2, 3}, func(err error) bool { return err == nil }},
		{"panics", numbers(2, func(context.Context) { panic("producer bug") }), 0, []int{1, 2}, func(err error) bool {
			pe, ok := errors.AsType[*boundediter.PanicError](err)
			return ok && pe.Value == "producer bug"
		}},
		{"ignores its deadline", numbers(2, func(context.Context) { <-forever }), 100 * time.Millisecond, []int{1, 2}, func(err error) bool {
			_, ok := errors.AsType[*boundediter.AbandonedError](err)
			return ok && errors.Is(err, context.DeadlineExceeded)
		}},
		{"honours its deadline", numbers(1, func(ctx context.Context) { <-ctx.Done() }), 100 * time.Millisecond, []int{1}, func(err error) bool { return err == nil }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			if tc.deadline > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tc.deadline)
				defer cancel()
			}
			start := time.Now()
			g := drain(ctx, tc.seq(ctx), 200*time.Millisecond)
			if diff := cmp.Diff(tc.items, g.items); diff != "" {
				t.Errorf("items (-want +got):\n%s", diff)
			}
			if !tc.check(g.err) {
				t.Errorf("error %v", g.err)
			}
			if d := time.Since(start); d > 30*time.Second {
				t.Errorf("took %s", d)
			}
		})
	}
}

// A reader that stops early stops the producer: its yield returns false
// and it returns before Seq2 does.
func TestSeq2StopsTheProducerWhenTheReaderLeaves(t *testing.T) {
	returned := make(chan struct{})
	seq := func(yield func(int, error) bool) {
		defer close(returned)
		for i := 0; ; i++ {
			if !yield(i, nil) {
				return
			}
		}
	}
	for v := range boundediter.Seq2(context.Background(), seq, 10*time.Second) {
		if v == 2 {
			break
		}
	}
	select {
	case <-returned:
	default:
		t.Fatal("the producer was still running when Seq2 returned")
	}
}
