package supervise_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/supervise"
)

// step is one attempt of a scripted external driver: it may spawn and
// await an alpha worker (delivered, DONE) and then fail with err.
type step struct {
	deliver bool
	err     error
}

// attemptsBrain drives through Coordinator.DriveAttempts, one step per
// attempt (the last repeated), and records each re-entry it was given.
type attemptsBrain struct {
	steps    []step
	reentry  []*supervise.DriverReentry
	onReturn func(attempt int)
}

func (b *attemptsBrain) Drive(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
	return c.DriveAttempts(ctx, func(ctx context.Context, attempt int, r *supervise.DriverReentry) (supervise.BrainReport, error) {
		b.reentry = append(b.reentry, r)
		s := b.steps[min(attempt, len(b.steps))-1]
		if b.onReturn != nil {
			defer b.onReturn(attempt)
		}
		if s.deliver {
			if _, err := c.Spawn(ctx, supervise.SpawnArgs{Profile: "writer", Task: fmt.Sprintf("write alpha %d", attempt)}); err != nil {
				return supervise.BrainReport{}, err
			}
			if ev, err := c.Await(ctx, supervise.AwaitArgs{TimeoutMS: 60_000}); err != nil || ev.Event == nil {
				return supervise.BrainReport{}, errors.Join(err, fmt.Errorf("no settlement: %+v", ev))
			}
		}
		return supervise.BrainReport{Text: fmt.Sprint("attempt ", attempt)}, s.err
	})
}

// httpErr is a failure that carries an HTTP status, as the vendor
// providers' errors do.
type httpErr int

func (e httpErr) Error() string   { return fmt.Sprintf("upstream answered %d", int(e)) }
func (e httpErr) HTTPStatus() int { return int(e) }

func runAttempts(t *testing.T, b *attemptsBrain, tune func(*supervise.Options)) (supervise.SupervisedResult, []supervise.DriverAttempt) {
	t.Helper()
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = b
	o.RunDir = t.TempDir()
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Millisecond, UnavailablePause: time.Millisecond}
	var seen []supervise.DriverAttempt
	o.OnDriverAttempt = func(a supervise.DriverAttempt) { seen = append(seen, a) }
	if tune != nil {
		tune(&o)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	rows, _, err := supervise.ReadRunDir(context.Background(), o.RunDir)
	if err != nil {
		t.Fatal(err)
	}
	var journaled int
	for _, r := range rows {
		if r.Kind == supervise.KindDriverAttempt {
			journaled++
		}
	}
	if journaled != len(seen) {
		t.Errorf("%d attempts seen, %d journaled", len(seen), journaled)
	}
	return res, seen
}

func stops(as []supervise.DriverAttempt) string {
	var s []string
	for _, a := range as {
		x := fmt.Sprintf("%d:%s", a.Attempt, a.Class)
		if a.Error == "" {
			x = fmt.Sprintf("%d:ok", a.Attempt)
		}
		if a.Stop != "" {
			x += "/" + string(a.Stop)
		}
		if a.Reprompted {
			x += "/reprompted"
		}
		if a.RepromptRefusedBy != "" {
			x += "/" + string(a.RepromptRefusedBy)
		}
		s = append(s, x)
	}
	return strings.Join(s, " ")
}

// §3.6 driverRetry: how each kind of driver failure is answered — a
// transient one retried until a completed attempt wins the run, a
// terminal one ending it at once, failures that change nothing giving
// up after MaxConsecutiveFailures, failures that each make progress
// stopping at MaxAttempts, an unavailable upstream pausing without
// spending an attempt, Disabled ending at the first failure.
func TestDriverRetryAnswersEachFailure(t *testing.T) {
	transient := errors.New("pi exit unknown")
	cases := []struct {
		name     string
		steps    []step
		tune     func(*supervise.Options)
		want     string
		status   supervise.Status
		reason   supervise.NoWinnerReason
		errName  string
		contains string
	}{
		{name: "transient then delivered", steps: []step{{err: transient}, {deliver: true}},
			want: "1:transient 2:ok/completed", status: supervise.StatusWinner},
		{name: "terminal ends at once", steps: []step{{err: fmt.Errorf("%w: a bad request", supervise.ErrInvalidOptions)}},
			want: "1:terminal/terminal-error", status: supervise.StatusNoWinner, reason: supervise.ReasonDriverFailed,
			errName: "Error", contains: "a bad request"},
		{name: "no progress gives up", steps: []step{{err: transient}},
			want:   "1:transient 2:transient 3:transient/no-progress",
			status: supervise.StatusNoWinner, reason: supervise.ReasonDriverFailed,
			errName: "DriverAttemptsError", contains: "after 3 attempt(s), stopped by no-progress"},
		{name: "progress each time stops at max attempts", steps: []step{{deliver: true, err: transient}},
			tune: func(o *supervise.Options) { o.DriverRetry.MaxAttempts = 2 },
			want: "1:transient 2:transient/max-attempts", status: supervise.StatusWinner},
		{name: "4xx is terminal", steps: []step{{err: httpErr(401)}},
			want: "1:terminal/terminal-error", status: supervise.StatusNoWinner, reason: supervise.ReasonDriverFailed},
		{name: "5xx is transient", steps: []step{{err: httpErr(502)}, {deliver: true}},
			want: "1:transient 2:ok/completed", status: supervise.StatusWinner},
		{name: "429 pauses without an attempt", steps: []step{{err: httpErr(429)}, {err: httpErr(429)}, {err: httpErr(429)}, {deliver: true}},
			tune: func(o *supervise.Options) { o.DriverRetry.MaxAttempts = 1; o.Deadline = time.Now().Add(time.Minute) },
			want: "1:unavailable 2:unavailable 3:unavailable 4:ok/completed", status: supervise.StatusWinner},
		{name: "429 without a deadline counts as a failure", steps: []step{{err: httpErr(429)}, {deliver: true}},
			tune: func(o *supervise.Options) { o.DriverRetry.MaxAttempts = 1 },
			want: "1:transient/max-attempts", status: supervise.StatusNoWinner, reason: supervise.ReasonDriverFailed},
		{name: "disabled", steps: []step{{err: transient}, {deliver: true}},
			tune: func(o *supervise.Options) { o.DriverRetry.Disabled = true },
			want: "1:transient/retry-disabled", status: supervise.StatusNoWinner, reason: supervise.ReasonDriverFailed,
			errName: "Error", contains: "pi exit unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			b := &attemptsBrain{steps: tc.steps}
			res, seen := runAttempts(t, b, tc.tune)
			if got := stops(seen); got != tc.want {
				t.Errorf("attempts %s, want %s", got, tc.want)
			}
			if res.Status != tc.status || res.Reason != tc.reason {
				t.Errorf("status %s reason %s (error %+v), want %s %s", res.Status, res.Reason, res.Error, tc.status, tc.reason)
			}
			if tc.errName != "" && (res.Error == nil || res.Error.Name != tc.errName || !strings.Contains(res.Error.Message, tc.contains)) {
				t.Errorf("error %+v, want %s containing %q", res.Error, tc.errName, tc.contains)
			}
			if res.Continuation == nil || res.Continuation.Attempts != len(seen) {
				t.Errorf("continuation %+v, want %d attempts", res.Continuation, len(seen))
			}
			for _, a := range seen {
				if a.Manager != "run1" {
					t.Errorf("attempt %d names manager %q, want the root run1", a.Attempt, a.Manager)
				}
			}
			for i, r := range b.reentry {
				if (i == 0) != (r == nil) {
					t.Errorf("attempt %d entered with %+v", i+1, r)
				}
			}
		})
	}
}

// A retry re-enters with the failure that ended the attempt before it
// (never a re-prompt's instruction alone), numbered; a pause with its
// signal.
func TestDriverRetryReentryNamesTheFailure(t *testing.T) {
	b := &attemptsBrain{steps: []step{{err: errors.New("stream cut")}, {err: httpErr(503)}, {deliver: true}}}
	res, _ := runAttempts(t, b, func(o *supervise.Options) { o.Deadline = time.Now().Add(time.Minute) })
	if res.Status != supervise.StatusWinner {
		t.Fatalf("status %s reason %s error %+v", res.Status, res.Reason, res.Error)
	}
	if len(b.reentry) != 3 || b.reentry[1] == nil || b.reentry[2] == nil {
		t.Fatalf("re-entries %+v", b.reentry)
	}
	if r := b.reentry[1]; r.Reason != supervise.ReentryDriverFailure || r.Failure != "stream cut" || r.Retry != 1 {
		t.Errorf("second attempt entered with %+v", r)
	}
	if r := b.reentry[2]; r.Reason != supervise.ReentryUpstreamUnavailable || r.Signal != "http-503" || r.Pause != 1 {
		t.Errorf("third attempt entered with %+v", r)
	}
	c := res.Continuation
	if c.FailureRetries != 1 || c.UnavailablePauses != 1 || c.Ended != supervise.StopCompleted {
		t.Errorf("continuation %+v", c)
	}
}

// A cancellation that lands in the backoff ends the loop there: the
// driver is not entered again and the run ends as the cancellation
// says, not after the backoff.
func TestDriverRetryBackoffEndsOnCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	b := &attemptsBrain{steps: []step{{err: errors.New("pi exit unknown")}}, onReturn: func(int) { time.AfterFunc(50*time.Millisecond, cancel) }}
	o := baseOptions(t, newCounting(t, workerProvider(t)), nil)
	o.Brain = b
	o.DriverRetry = supervise.DriverRetry{InitialBackoff: time.Hour}
	start := time.Now()
	res, err := supervise.Supervise(ctx, managerProfile(t, supervise.VerbSpawnWorker), "ship a note", o)
	if err != nil {
		t.Fatal(err)
	}
	if d := time.Since(start); d > 30*time.Second {
		t.Errorf("the run took %s: the backoff was not cut", d)
	}
	if len(b.reentry) != 1 || res.Reason != supervise.ReasonAborted {
		t.Errorf("%d attempts, reason %s (error %+v); want 1 and aborted", len(b.reentry), res.Reason, res.Error)
	}
}

// §3.6 repromptOnUnmet: a driver that returns with nothing delivered is
// entered again with the default instruction naming what is owed; the
// re-prompt that delivers wins and spends no retry attempt.
func TestRepromptOnUnmetEntersAgainAndWins(t *testing.T) {
	b := &attemptsBrain{steps: []step{{}, {deliver: true}}}
	res, seen := runAttempts(t, b, func(o *supervise.Options) {
		o.Reprompt = supervise.Reprompt{Max: 3}
		o.DriverRetry.MaxAttempts = 1
	})
	if res.Status != supervise.StatusWinner {
		t.Fatalf("status %s reason %s error %+v", res.Status, res.Reason, res.Error)
	}
	if got, want := stops(seen), "1:ok/reprompted 2:ok/completed"; got != want {
		t.Errorf("attempts %s, want %s", got, want)
	}
	r := b.reentry[1]
	if r == nil || r.Reason != supervise.ReentryUnmetContract || r.Reprompt != 1 ||
		!strings.Contains(r.Steer, "The completion check has not passed") || !strings.Contains(r.Steer, doneCheck.Describe) {
		t.Errorf("re-prompt %+v", r)
	}
	if c := res.Continuation; c.Reprompts != 1 || c.FailureRetries != 0 {
		t.Errorf("continuation %+v", c)
	}
}

// The bounds of re-prompting: the count (reprompts-exhausted), the
// barren streak however high the count (no-progress), the caller's
// OnUnmet (caller-stop), UntilComplete under the deadline, and an
// empty instruction, which is the caller's fault and ends the run
// driver-failed naming it.
func TestRepromptBounds(t *testing.T) {
	cases := []struct {
		name   string
		re     supervise.Reprompt
		tune   func(*supervise.Options)
		want   string
		reason supervise.NoWinnerReason
	}{
		{name: "count", re: supervise.Reprompt{Max: 1},
			want: "1:ok/reprompted 2:ok/completed/reprompts-exhausted", reason: supervise.ReasonAllChildrenDown},
		{name: "barren", re: supervise.Reprompt{Max: 100},
			want: "1:ok/reprompted 2:ok/reprompted 3:ok/completed/no-progress", reason: supervise.ReasonAllChildrenDown},
		{name: "barren 1", re: supervise.Reprompt{Max: 100, MaxBarren: 1},
			want: "1:ok/reprompted 2:ok/completed/no-progress", reason: supervise.ReasonAllChildrenDown},
		{name: "until complete", re: supervise.Reprompt{UntilComplete: true},
			tune: func(o *supervise.Options) { o.Deadline = time.Now().Add(time.Minute) },
			want: "1:ok/reprompted 2:ok/reprompted 3:ok/completed/no-progress", reason: supervise.ReasonAllChildrenDown},
		{name: "caller stop", re: supervise.Reprompt{Max: 5, OnUnmet: func(context.Context, supervise.UnmetContract) (supervise.UnmetDecision, error) {
			return supervise.UnmetDecision{Stop: true}, nil
		}}, want: "1:ok/completed/caller-stop", reason: supervise.ReasonAllChildrenDown},
		{name: "empty steer", re: supervise.Reprompt{Max: 5, OnUnmet: func(context.Context, supervise.UnmetContract) (supervise.UnmetDecision, error) {
			return supervise.UnmetDecision{Steer: "  "}, nil
		}}, want: "1:terminal/terminal-error", reason: supervise.ReasonDriverFailed},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			res, seen := runAttempts(t, &attemptsBrain{steps: []step{{}}}, func(o *supervise.Options) {
				o.Reprompt = tc.re
				if tc.tune != nil {
					tc.tune(o)
				}
			})
			if got := stops(seen); got != tc.want {
				t.Errorf("attempts %s, want %s", got, tc.want)
			}
			if res.Status != supervise.StatusNoWinner || res.Reason != tc.reason {
				t.Errorf("status %s reason %s (error %+v), want no-winner %s", res.Status, res.Reason, res.Error, tc.reason)
			}
		})
	}
}

// Supervise refuses a Reprompt the run cannot honour before anything
// runs: on the router brain, UntilComplete without a deadline, with a
// count, negative bounds.
func TestRepromptOptionsRefused(t *testing.T) {
	cases := []struct {
		name string
		tune func(*supervise.Options)
		want string
	}{
		{"router brain", func(o *supervise.Options) { o.Brain = nil; o.Reprompt.Max = 1 }, "router brain"},
		{"until complete without a deadline", func(o *supervise.Options) { o.Reprompt.UntilComplete = true }, "needs the run's Deadline"},
		{"until complete with a count", func(o *supervise.Options) {
			o.Reprompt = supervise.Reprompt{UntilComplete: true, Max: 2}
			o.Deadline = time.Now().Add(time.Minute)
		}, "leave Max 0"},
		{"negative", func(o *supervise.Options) { o.DriverRetry.MaxAttempts = -1 }, "cannot be negative"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			o := baseOptions(t, newCounting(t, workerProvider(t)), twoWorkerManager())
			o.Brain = &attemptsBrain{steps: []step{{}}}
			tc.tune(&o)
			_, err := supervise.Supervise(context.Background(), managerProfile(t, supervise.VerbSpawnWorker), "t", o)
			if !errors.Is(err, supervise.ErrInvalidOptions) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Supervise: %v, want ErrInvalidOptions naming %q", err, tc.want)
			}
		})
	}
}

// quotaErr returns a quota refusal as a seated provider reports one.
func quotaErr() error { return &contract.QuotaRefusalError{Provider: "p", Message: "no quota"} }

// How each failure is classified (§3.6 driverRetry: terminal decisions,
// transient accidents, unavailable upstreams).
func TestClassifyDriverFailure(t *testing.T) {
	cases := []struct {
		name   string
		err    error
		class  supervise.FailureClass
		signal string
	}{
		{"plain", errors.New("pi exit unknown"), supervise.FailureTransient, ""},
		{"cancelled", context.Canceled, supervise.FailureTerminal, ""},
		{"stopped", fmt.Errorf("x: %w", supervise.ErrStopped), supervise.FailureTerminal, ""},
		{"lease lost", fmt.Errorf("x: %w", contract.ErrLeaseLost), supervise.FailureTerminal, ""},
		{"marked terminal", &supervise.TerminalDriverError{Err: errors.New("not installed")}, supervise.FailureTerminal, ""},
		{"kernel refused", &kernel.RunError{Status: store.StatusFailed, Reason: kernel.ReasonRefused}, supervise.FailureTerminal, ""},
		{"model mismatch", &kernel.RunError{Status: store.StatusFailed, Reason: kernel.ReasonModelMismatch}, supervise.FailureTerminal, ""},
		{"transport", &kernel.RunError{Status: store.StatusFailed, Reason: kernel.ReasonTransport}, supervise.FailureTransient, ""},
		{"in-band with a 429 in its text", &kernel.RunError{Status: store.StatusFailed, Reason: kernel.ReasonInBandError,
			Detail: "opencode: No provider served model (provider_quota_exhausted)"}, supervise.FailureUnavailable, "provider_quota_exhausted"},
		{"status code text", errors.New("the harness ended: status code 529"), supervise.FailureUnavailable, "http-529"},
		{"status code text not capacity", errors.New("the harness ended: status code 500"), supervise.FailureTransient, ""},
		{"prose about quotas", errors.New("the quota is fine"), supervise.FailureTransient, ""},
		{"quota refusal", quotaErr(), supervise.FailureUnavailable, "quota-refused"},
		{"408", httpErr(408), supervise.FailureTransient, ""},
		{"404", httpErr(404), supervise.FailureTerminal, ""},
		{"503", fmt.Errorf("wrapped: %w", httpErr(503)), supervise.FailureUnavailable, "http-503"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			class, signal := supervise.ClassifyDriverFailure(tc.err)
			if class != tc.class || signal != tc.signal {
				t.Errorf("ClassifyDriverFailure(%v) = %s %q, want %s %q", tc.err, class, signal, tc.class, tc.signal)
			}
		})
	}
}
