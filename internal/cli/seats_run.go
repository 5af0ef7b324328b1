package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/store"
)

// seatedFlagsRefused are the run flags that pick one provider; a seated
// run's --seats file picks each stage's instead.
var seatedFlagsRefused = []string{"provider", "script", "base-url", "openai-api", "retain", "detach", "key", "turn-id", "enqueue"}

// retainedSeatsRefused are the run flags a retained run of the seat
// chain does not take: the --seats file picks each stage's provider,
// and the provider owns a retained run.
var retainedSeatsRefused = []string{"provider", "script", "base-url", "openai-api", "enqueue", "stage", "lease", "expect"}

// runRetainedSeatsCmd is agentrt run --retain --seats: the profile's seat
// chain as retained runs, each stage on the provider the --seats file
// names for it.
func runRetainedSeatsCmd(ctx context.Context, cmd *cobra.Command, stdio IO, sf storeFlags, rf retainFlags, path, seatsPath, task string, timeout time.Duration, asJSON, quiet bool) error {
	for _, name := range retainedSeatsRefused {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return usage("--%s does not apply to --retain --seats: the --seats file names each stage's provider, which owns the run", name)
		}
	}
	p, err := loadProfile(stdio, path, asJSON)
	if err != nil {
		return err
	}
	m, err := openSeated(stdio, seatedRun{seatsPath: seatsPath, quiet: quiet}, p)
	if err != nil {
		// Refused before the store is opened: nothing is recorded.
		return err
	}
	s, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return startRetained(ctx, stdio, rf, nil, m, s, p, task, asJSON)
}

// seatedRun is what a seated run command needs besides its profile.
type seatedRun struct {
	seatsPath, task, expect string
	// profileSource is the profile file's absolute path, recorded so
	// that runs resume can read it again; "" for stdin.
	profileSource string
	stage         int
	lease         time.Duration
	asJSON, quiet bool
}

// checkSeatedFlags refuses the flags that pick one provider.
func checkSeatedFlags(cmd *cobra.Command) error {
	for _, name := range seatedFlagsRefused {
		if f := cmd.Flags().Lookup(name); f != nil && f.Changed {
			return usage("--%s does not apply to --seats: the --seats file names each stage's provider", name)
		}
	}
	return nil
}

// openSeated reads the --seats file and opens every stage's provider
// from stage on, refusing a profile without seats.
func openSeated(stdio IO, sr seatedRun, p *profile.Profile) (*seatAccountManager, error) {
	if len(p.Seats) == 0 {
		return nil, usage("--seats: the profile has no seats; run it without --seats")
	}
	if sr.stage < 0 || sr.stage >= len(p.Seats) {
		return nil, usage("--stage %d: the profile has %d seats (0 to %d)", sr.stage, len(p.Seats), len(p.Seats)-1)
	}
	a, err := loadSeatAccounts(stdio, sr.seatsPath)
	if err != nil {
		return nil, err
	}
	m, err := openSeatAccounts(a, p, sr.stage)
	if err != nil {
		return nil, err
	}
	if !sr.quiet {
		m.progress = stdio.Err
	}
	return m, nil
}

// runSeated runs the profile's seat chain (agentrt run --seats).
func runSeated(ctx context.Context, stdio IO, sr seatedRun, p *profile.Profile, m *seatAccountManager, s store.Store, where string) error {
	// The id is printed first, so a user whose process dies knows what
	// to resume.
	id := kernel.NewID("seated")
	if !sr.quiet {
		fmt.Fprintf(stdio.Err, "seated run %s: %d stages from stage %d (resume it with agentrt runs resume %s if this process dies)\n", id, len(p.Seats)-sr.stage, sr.stage, id)
	}
	res, runErr := kernel.ExecuteSeated(ctx, kernel.SeatedRequest{Accounts: m, Request: kernel.Request{
		RunID: id, Profile: p, Task: sr.task, Store: s, Check: kernel.ExpectCheck(sr.expect), Stage: sr.stage, LeaseTTL: sr.lease},
		ProfileSource: sr.profileSource})
	return reportSeated(ctx, stdio, sr, s, res, runErr, where)
}

// reportSeated prints a seated run's outcome — each stage tried and why
// it moved on, then the last stage's result — and turns it into the
// command's exit status.
func reportSeated(ctx context.Context, stdio IO, sr seatedRun, s store.Store, res *kernel.SeatedResult, runErr error, where string) error {
	if errors.Is(runErr, kernel.ErrInvalidOptions) {
		return usage("%v", runErr)
	}
	if res == nil {
		return &exitError{code: ExitFailed, err: runErr}
	}
	var re *kernel.RunError
	if runErr != nil && !errors.As(runErr, &re) {
		return &exitError{code: ExitFailed, err: runErr}
	}
	status, reason, detail := store.StatusCompleted, "", ""
	if re != nil {
		status, reason, detail = re.Status, re.Reason, re.Detail
	}
	var deadline *int64
	node := ""
	if rec, err := kernel.ReadRun(ctx, s, res.RunID); err == nil && rec.Seated != nil {
		deadline, node = rec.Seated.DeadlineUnixMs, rec.Seated.Node
	}
	delivered := status == store.StatusCompleted && res.Final != nil && res.Final.Delivered
	if sr.asJSON {
		if err := writeJSON(stdio.Out, seatedValue(res, status, reason, detail, delivered, deadline, node)); err != nil {
			return err
		}
	} else {
		printSeated(stdio.Out, res, status, reason, detail, delivered, node, sr.seatsPath, where)
	}
	if !delivered {
		return refused()
	}
	return nil
}

func seatedValue(res *kernel.SeatedResult, status store.Status, reason, detail string, delivered bool, deadline *int64, node string) canonjson.Value {
	stages, _ := canonjson.ToValue(res.Stages)
	final := canonjson.NullValue()
	if res.Final != nil {
		final = resultValue(res.Final)
	}
	m := []canonjson.Member{
		{Name: "runId", Value: canonjson.StringValue(res.RunID)},
		{Name: "node", Value: nullableString(node)},
		{Name: "status", Value: canonjson.StringValue(string(status))},
		{Name: "delivered", Value: canonjson.BoolValue(delivered)},
		{Name: "stages", Value: stages},
		{Name: "final", Value: final},
		// The run's spend: every stage's, not only the last one's.
		{Name: "usage", Value: kernel.UsageValue(res.Usage)},
	}
	if deadline != nil {
		m = append(m, canonjson.Member{Name: "deadlineUnixMs", Value: canonjson.NumberValue(float64(*deadline))})
	}
	if res.TeardownUnconfirmed != "" {
		m = append(m, canonjson.Member{Name: "teardownUnconfirmed", Value: canonjson.StringValue(res.TeardownUnconfirmed)})
	}
	if reason != "" {
		m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(reason)},
			canonjson.Member{Name: "detail", Value: canonjson.StringValue(detail)})
	}
	return canonjson.ObjectValue(m)
}

func printSeated(w io.Writer, res *kernel.SeatedResult, status store.Status, reason, detail string, delivered bool, node, seatsPath, where string) {
	state := string(status)
	if status == store.StatusCompleted {
		if delivered {
			state += ", delivered"
		} else {
			state += ", NOT delivered"
		}
	}
	fmt.Fprintf(w, "seated run %s  %s\n", res.RunID, state)
	if node != "" {
		fmt.Fprintf(w, "  node      %s (every stage ran as this logical node)\n", node)
	}
	if reason != "" {
		fmt.Fprintf(w, "  why       %s: %s\n", reason, detail)
	}
	for _, at := range res.Stages {
		fmt.Fprintf(w, "  stage %d   %s on %s: %s\n", at.Stage, at.Model, at.Provider, stageLine(at))
	}
	if f := res.Final; f != nil {
		fmt.Fprintf(w, "  last run  %s  %s\n", f.RunID, f.Status)
		served := f.Served.Model
		if served == "" {
			served = "unknown (not reported)"
		}
		fmt.Fprintf(w, "  model     requested %s, served %s\n", orUnknown(f.RequestedModel), served)
		printCheck(w, f.Verdict, f.CheckError)
		if f.Text != "" {
			fmt.Fprintf(w, "  result    %s\n", clip(strings.ReplaceAll(f.Text, "\n", " "), 120))
		}
	}
	u := res.Usage
	fmt.Fprintf(w, "  usage     input %s, output %s, cost %s (every stage's)\n", u.InputTokens, u.OutputTokens, usd(u.CostUSD))
	if res.TeardownUnconfirmed != "" {
		fmt.Fprintf(w, "  teardown  NOT confirmed: %s\n", res.TeardownUnconfirmed)
	}
	fmt.Fprintf(w, "  recorded  in %s\n", where)
	fmt.Fprintf(w, "  next      agentrt runs show %s\n", res.RunID)
	if status == store.StatusInterrupted {
		fmt.Fprintf(w, "            agentrt runs resume %s --seats %s (once its lease lapsed)\n", res.RunID, seatsPath)
	}
}

// stageLine says how one stage ended and how it relates to the stage
// before: why it moved on, and its continuity.
func stageLine(at kernel.StageAttempt) string {
	var b strings.Builder
	b.WriteString(at.Outcome)
	if at.RetryAfterMs != nil {
		fmt.Fprintf(&b, " (retry after %s)", (time.Duration(*at.RetryAfterMs) * time.Millisecond).String())
	}
	if at.Reason != "" {
		fmt.Fprintf(&b, ": %s", clip(strings.ReplaceAll(at.Reason, "\n", " "), 160))
	}
	if at.Continuity != "" {
		fmt.Fprintf(&b, "; continuity %s", at.Continuity)
		if at.ContinuityReason != "" {
			fmt.Fprintf(&b, " (%s)", clip(at.ContinuityReason, 160))
		}
	}
	if at.KeptRun != nil {
		fmt.Fprintf(&b, "; left its session in environment %s for the next stage", at.KeptRun.EnvironmentID)
	}
	return b.String()
}

// runSeatedCmd opens the profile and the store and runs the seat chain,
// under --timeout when given (the deadline a resumed run keeps).
func runSeatedCmd(ctx context.Context, stdio IO, sf storeFlags, path string, sr seatedRun, timeout time.Duration) error {
	p, err := loadProfile(stdio, path, sr.asJSON)
	if err != nil {
		return err
	}
	if path != "-" {
		if abs, err := filepath.Abs(path); err == nil {
			sr.profileSource = abs
		}
	}
	m, err := openSeated(stdio, sr, p)
	if err != nil {
		// Refused before the store is opened: nothing is recorded.
		return err
	}
	s, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	return runSeated(ctx, stdio, sr, p, m, s, sf.describe())
}

// recordedProfile reads the profile a seated run ran from where its
// record says it was read, and checks it is that profile: a usage error
// naming --profile when the record names no source, a failure saying so
// when the file is gone or changed.
func recordedProfile(stdio IO, id string, prior store.Run, asJSON bool) (*profile.Profile, error) {
	rec, err := kernel.DecodeSeatedRecord(prior.Doc)
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("run %s: %w", id, err)}
	}
	if rec.ProfileSource == "" || rec.ProfileDigest == "" {
		return nil, usage("--profile is required: run %s recorded no profile file to read again (its profile came from stdin, or it was recorded before runs kept it); give the profile it ran", id)
	}
	p, err := loadProfile(stdio, rec.ProfileSource, asJSON)
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("run %s ran the profile %s, which cannot be read again (%v); give the profile it ran with --profile", id, rec.ProfileSource, err)}
	}
	d, err := profile.Digest(p)
	if err != nil || d != rec.ProfileDigest {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("run %s ran profile %s from %s, which has changed since (it is now %s); give the profile it ran with --profile", id, rec.ProfileDigest, rec.ProfileSource, d)}
	}
	return p, nil
}

// newRunsResumeCmd is agentrt runs resume: kernel.ResumeSeated.
func newRunsResumeCmd(stdio IO) *cobra.Command {
	var sf storeFlags
	var sr seatedRun
	var profilePath string
	cmd := &cobra.Command{
		Use:   "resume RUN --seats ACCOUNTS.json [--profile PROFILE]",
		Short: "Go on with a seated run whose process died",
		Long: `Resume the seated run RUN (started by agentrt run --seats) after the process
running it died and its lease lapsed. The run RUN stays as it was recorded —
interrupted — and the resumption is recorded as RUN.resume-N: it keeps the
original deadline and task, opens with the stages already tried, and goes on
with the stage after the last one refused for quota. Where that refusal left
a session (or the stage in progress when the process died was continuing
one), the stage continues the same native session in the same environment
when its provider proves continuity; otherwise it starts fresh, and the
summary says why.

The run's record holds the identity of the profile it ran and the file it was
read from (never the profile itself: its seats name accounts, which are never
recorded), so without --profile the profile is read again from that file and
must still be the one RUN ran. --profile is needed when the profile came from
stdin, the file moved or changed, or the run was recorded before runs kept
it; when given, PROFILE must be the profile RUN ran (the same digest), else
the resumption is refused.
ACCOUNTS.json names each stage's provider as for agentrt run --seats. A run
still held by a live process's lease, a run that ended, or another profile is
refused with what to do.

Exit status: 0 when the resumed run completed and was delivered, 1 when it
did not or cannot be resumed, 2 for a usage error.`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if sr.seatsPath == "" {
				return usage("--seats is required: the file naming each stage's provider")
			}
			var p *profile.Profile
			if profilePath != "" {
				var err error
				if p, err = loadProfile(stdio, profilePath, sr.asJSON); err != nil {
					return err
				}
			}
			s, err := sf.open(ctx)
			if err != nil {
				return err
			}
			defer s.Close()
			// Bounded like the resumption's own reads, by its lease: a
			// store that stopped answering does not hold the command.
			bound := sr.lease
			if bound <= 0 {
				bound = kernel.DefaultLeaseTTL
			}
			rctx, cancelRead := context.WithTimeout(ctx, bound)
			prior, err := s.GetRun(rctx, args[0])
			cancelRead()
			if errors.Is(err, store.ErrNotFound) {
				return &exitError{code: ExitFailed, err: fmt.Errorf("no run %s in %s (agentrt runs list lists its runs; give the store the run was recorded in with --db or --database)", args[0], sf.describe())}
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if prior.Kind != kernel.KindSeated {
				return &exitError{code: ExitFailed, err: fmt.Errorf("run %s is a %s run, not a seated one: only a run started with agentrt run --seats can be resumed", args[0], prior.Kind)}
			}
			if p == nil {
				// The profile the run ran, read again from where its
				// record says; a given --profile is checked against the
				// recorded identity by the resumption.
				if p, err = recordedProfile(stdio, args[0], prior, sr.asJSON); err != nil {
					return err
				}
			}
			// The stage to go on from is the resumption's to decide;
			// open every stage's provider.
			m, err := openSeated(stdio, sr, p)
			if err != nil {
				return err
			}
			res, runErr := kernel.ResumeSeated(ctx, kernel.SeatedRequest{Accounts: m, Request: kernel.Request{
				RunID: args[0], Profile: p, Store: s, Check: kernel.ExpectCheck(sr.expect), LeaseTTL: sr.lease}})
			if errors.Is(runErr, kernel.ErrNotResumable) {
				return &exitError{code: ExitFailed, err: runErr}
			}
			if oe, ok := errors.AsType[*kernel.OptionsError](runErr); ok && oe.Field == "Profile" {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%s: %s", args[0], oe.Problem)}
			}
			return reportSeated(ctx, stdio, sr, s, res, runErr, sf.describe())
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&profilePath, "profile", "", "the profile the run ran, checked against its recorded identity (default: the file the run read it from; - for stdin)")
	cmd.Flags().StringVar(&sr.seatsPath, "seats", "", "the JSON file naming each stage's provider, as for agentrt run --seats (required)")
	cmd.Flags().StringVar(&sr.expect, "expect", "", "deliver only if the result contains this text")
	cmd.Flags().DurationVar(&sr.lease, "lease", kernel.DefaultLeaseTTL, "how long the resumed run stays running if this process dies or stalls")
	cmd.Flags().BoolVar(&sr.asJSON, "json", false, "print the result as JSON")
	cmd.Flags().BoolVarP(&sr.quiet, "quiet", "q", false, "print no progress on stderr")
	return cmd
}
