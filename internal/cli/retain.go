package cli

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/remote"
	"github.com/agentrt/agentrt/retained"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/telemetry"
)

// retainFlags are agentrt run's retained-run flags.
type retainFlags struct {
	retain, detach bool
	key, turnID    string
}

func (f *retainFlags) register(cmd *cobra.Command) {
	cmd.Flags().BoolVar(&f.retain, "retain", false, "start a retained run: the provider owns it, its admission is recorded in the run store, and the control ref printed first re-attaches to it from any process (agentrt runs attach)")
	cmd.Flags().BoolVar(&f.detach, "detach", false, "with --retain: exit once the run is dispatched and its control ref printed, instead of following it")
	cmd.Flags().StringVar(&f.key, "key", "", "with --retain: the idempotency key (default: a new random one); the same --key and --turn-id continue the same run")
	cmd.Flags().StringVar(&f.turnID, "turn-id", "turn-1", "with --retain: the turn id; with --key it derives the run's identity")
}

// check refuses flags that need --retain without it.
func (f *retainFlags) check(cmd *cobra.Command) error {
	if f.retain {
		for _, name := range []string{"expect", "stage", "lease"} {
			if cmd.Flags().Changed(name) {
				return usage("--%s does not apply to --retain (the provider owns a retained run)", name)
			}
		}
		return nil
	}
	for _, name := range []string{"detach", "key", "turn-id"} {
		if cmd.Flags().Changed(name) {
			return usage("--%s applies to --retain only", name)
		}
	}
	return nil
}

// runRetained starts a retained run of task and prints its control ref as
// soon as the dispatched record is durable; without --detach it then
// follows the run to its result. A profile with seats runs its seat
// chain (runRetainedSeated).
func runRetained(ctx context.Context, stdio IO, f retainFlags, p contract.Provider, s store.Store, prof *profile.Profile, task string, asJSON bool) error {
	return startRetained(ctx, stdio, f, p, nil, s, prof, task, asJSON)
}

// startRetained is runRetained on p, or, with seats (agentrt run
// --retain --seats), on the providers the --seats file names for each
// stage of prof's chain.
func startRetained(ctx context.Context, stdio IO, f retainFlags, p contract.Provider, seats *seatAccountManager, s store.Store, prof *profile.Profile, task string, asJSON bool) error {
	credKey, err := credentialKey(s)
	if err != nil {
		return err
	}
	if credKey == nil && (seats != nil || len(prof.Seats) > 0) {
		fmt.Fprintf(stdio.Err, "no credential key: this run records no digest of its seats' account selectors; set %s, the same on every machine, so a recovery can prove the account selector did not change\n", envCredentialKey)
	}
	key := f.key
	if key == "" {
		var b [16]byte
		if _, err := rand.Read(b[:]); err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		key = "cli-" + hex.EncodeToString(b[:])
	}
	turnID := f.turnID
	tracing := startTracing(ctx, stdio)
	defer stopTracing(ctx, stdio, tracing)
	startCtx, span := ctx, (*telemetry.RetainedSpan)(nil)
	if _, recordID, err := retained.DeriveIdentity(key, turnID); err == nil && tracing != nil {
		// The run's root span covers its admission; the provider's calls
		// carry it on (TRACEPARENT, traceparent). A start whose record
		// exists replays an earlier one, which exported the root.
		st := telemetry.RetainedStart{RunID: recordID}
		if prof.Name != nil {
			st.Agent = *prof.Name
		}
		_, err := s.GetRun(ctx, recordID)
		st.Replayed = err == nil
		startCtx, span = tracing.StartRetained(ctx, st)
	}
	if seats != nil {
		for _, sp := range seats.providers {
			if err := persistCreateKeys(sp, s); err != nil {
				return err
			}
		}
		return runRetainedSeated(ctx, startCtx, stdio, f, seats, 0, s, prof, key, credKey, task, asJSON, tracing, span)
	}
	if err := persistCreateKeys(p, s); err != nil {
		return err
	}
	if len(prof.Seats) > 0 {
		k0, _, err := pickRetainedStage(ctx, stdio, p, prof)
		if err != nil {
			span.Dispatched(err)
			return err
		}
		accounts := kernel.AccountManagerFunc(func(context.Context, int, profile.Seat) (contract.Provider, error) { return p, nil })
		return runRetainedSeated(ctx, startCtx, stdio, f, accounts, k0, s, prof, key, credKey, task, asJSON, tracing, span)
	}
	// The profile must be one p can honor (PRF-07), before anything is
	// admitted.
	if _, _, err := pickRetainedStage(ctx, stdio, p, prof); err != nil {
		span.Dispatched(err)
		return err
	}
	create, turn, err := retainedRequest(prof, 0, key, turnID, task)
	if err != nil {
		span.Dispatched(err)
		return &exitError{code: ExitFailed, err: err}
	}
	run, err := retained.StartRetainedRun(startCtx, retained.StartOptions{
		Provider:      p,
		Store:         s,
		Environment:   create,
		Turn:          turn,
		CredentialKey: credKey,
		// The records are durable in the store before this hook runs; the
		// command has nothing to add to them.
		OnAdmission: func(context.Context, retained.Admission) error { return nil },
	})
	span.Dispatched(err)
	if err != nil {
		return startRetainedError(err)
	}
	printDispatched(ctx, stdio, run, nil, nil, key, turnID, asJSON, tracing)
	if f.detach {
		return nil
	}
	followCtx, followSpan := tracing.FollowRetained(ctx, run.ControlRef().Record)
	return follow(followCtx, stdio, run, retained.Cursor{}, asJSON, followSpan)
}

// startRetainedError maps a start's error to the command's exit.
func startRetainedError(err error) error {
	if errors.Is(err, retained.ErrInvalidOptions) || errors.Is(err, retained.ErrNotRetainable) {
		return usage("%v", err)
	}
	return &exitError{code: ExitFailed, err: err}
}

// printDispatched prints a dispatched retained run's control ref — the
// first thing printed about it — and, for a stage of a seated run, the
// stage; with tracing, the run's root span is exported now, while the
// provider runs the turn: should this process die, whoever attaches or
// recovers finds the parent of its spans.
func printDispatched(ctx context.Context, stdio IO, run *retained.Run, prof *profile.Profile, stage *kernel.StageAttempt, key, turnID string, asJSON bool, tracing *telemetry.Tracing) {
	ref := run.ControlRef()
	if asJSON {
		m := []canonjson.Member{{Name: "controlRef", Value: mustValue(ref)}}
		if stage != nil {
			m = append(m, canonjson.Member{Name: "stage", Value: canonjson.NumberValue(float64(stage.Stage))},
				canonjson.Member{Name: "node", Value: canonjson.StringValue(stage.Node)})
		}
		writeLine(stdio, canonjson.ObjectValue(m))
	} else {
		fmt.Fprintf(stdio.Out, "retained run %s  dispatched\n", ref.Record)
		fmt.Fprintf(stdio.Out, "  control   %s\n", canonjson.Marshal(mustValue(ref)))
		fmt.Fprintf(stdio.Out, "  key       %s (turn %s)\n", key, turnID)
		if stage != nil {
			seatOf := prof.Seats[stage.Stage]
			fmt.Fprintf(stdio.Out, "  stage     %d (%s on %s)\n", stage.Stage, seatOf.Model, seatOf.Provider)
			fmt.Fprintf(stdio.Out, "  node      %s\n", stage.Node)
		}
		fmt.Fprintf(stdio.Out, "  attach    agentrt runs attach %s\n", ref.Record)
	}
	if tracing != nil {
		flushCtx, cancel := context.WithTimeout(ctx, tracingFlush)
		tracing.Flush(flushCtx) // what was not delivered is reported at exit
		cancel()
	}
}

// runRetainedSeated runs a seated profile's chain as retained runs
// (retained.StartSeated) from stage k0, each stage on the provider
// accounts resolves — one provider for every stage, from the first it
// can honor, or the --seats file's — whose account owner binds each
// stage's credential from the request its create and turn carry
// (RG-10); each stage a retained run with its own admission records. A typed quota refusal moves on to the
// next stage, said on stderr; without --detach each dispatched stage is
// followed, so a refusal part way through its turn moves on too. When
// the chain moved on, a summary names every stage tried and why.
func runRetainedSeated(ctx, startCtx context.Context, stdio IO, f retainFlags, accounts kernel.AccountManager, k0 int, s store.Store, prof *profile.Profile, key string, credKey []byte, task string, asJSON bool, tracing *telemetry.Tracing, span *telemetry.RetainedSpan) error {
	var followErr error // the last followed stage's error, as the command reports it
	o := retained.SeatedOptions{Accounts: accounts, Store: s, Profile: prof, Stage: k0, IdempotencyKey: key, TurnID: f.turnID, Task: task, CredentialKey: credKey,
		// The records are durable in the store before this hook runs; the
		// command has nothing to add to them.
		OnAdmission: func(context.Context, retained.Admission) error { return nil },
		MovedOn: func(at kernel.StageAttempt) {
			fmt.Fprintf(stdio.Err, "stage %d (%s on %s, run %s): %s; moving on to stage %d\n", at.Stage, at.Model, at.Provider, at.RunID, stageLine(at), at.Stage+1)
		},
	}
	dispatched := false
	if !f.detach {
		o.Follow = func(ctx context.Context, run *retained.Run, at kernel.StageAttempt) error {
			if !dispatched {
				span.Dispatched(nil)
				dispatched = true
			}
			printDispatched(ctx, stdio, run, prof, &at, key, f.turnID, asJSON, tracing)
			followCtx, followSpan := tracing.FollowRetained(ctx, run.ControlRef().Record)
			followErr = follow(followCtx, stdio, run, retained.Cursor{}, asJSON, followSpan)
			if ee, ok := errors.AsType[*exitError](followErr); ok && ee.err == nil {
				return errors.New("the run ended without success")
			}
			return followErr
		}
	}
	res, err := retained.StartSeated(startCtx, o)
	if !dispatched {
		span.Dispatched(err)
	}
	if res == nil {
		return startRetainedError(err)
	}
	if f.detach && res.Run != nil {
		printDispatched(ctx, stdio, res.Run, prof, &res.Stages[len(res.Stages)-1], key, f.turnID, asJSON, tracing)
	}
	if len(res.Stages) > 1 {
		printRetainedChain(stdio, res, asJSON)
	}
	switch {
	case f.detach && res.Run != nil:
		return nil
	case followErr != nil && res.Run != nil && res.Stages[len(res.Stages)-1].Outcome != kernel.StageQuotaRefused:
		return followErr
	case err != nil:
		return startRetainedError(err)
	}
	return nil
}

// printRetainedChain prints the stages a seated retained run tried and
// how each ended: human lines, or one JSON line (--json).
func printRetainedChain(stdio IO, res *retained.SeatedRun, asJSON bool) {
	if asJSON {
		stages, _ := canonjson.ToValue(res.Stages)
		writeLine(stdio, canonjson.ObjectValue([]canonjson.Member{
			{Name: "seatedRun", Value: canonjson.StringValue(res.ID)},
			{Name: "node", Value: canonjson.StringValue(res.Node)},
			{Name: "stages", Value: stages},
		}))
		return
	}
	fmt.Fprintf(stdio.Out, "seated retained run %s  node %s\n", res.ID, res.Node)
	for _, at := range res.Stages {
		fmt.Fprintf(stdio.Out, "  stage %d   %s on %s (run %s): %s\n", at.Stage, at.Model, at.Provider, at.RunID, stageLine(at))
	}
}

// pickRetainedStage is the stage a retained run of prof runs on p, and
// that stage's projection: the first stage of the seat chain whose
// projection p can honor (kernel.ProjectStage, the check every run
// makes before any spend), stage 0 for a profile without seats. Each
// stage passed over is reported on stderr with why. When no stage can
// be honored the start is refused with the first stage's
// *kernel.StageUnsupportedError (every stage's, joined), before
// anything is admitted (PRF-07).
func pickRetainedStage(ctx context.Context, stdio IO, p contract.Provider, prof *profile.Profile) (int, *profile.Profile, error) {
	caps, err := p.Capabilities(ctx)
	if err != nil {
		return 0, nil, &exitError{code: ExitFailed, err: fmt.Errorf("reading %s's capabilities: %w", p.Name(), err)}
	}
	var refusals []error
	for k := range max(len(prof.Seats), 1) {
		eff, err := kernel.ProjectStage(caps, prof, k)
		if err == nil {
			for _, r := range refusals {
				fmt.Fprintf(stdio.Err, "passing over %v\n", r)
			}
			return k, eff, nil
		}
		refusals = append(refusals, err)
	}
	return 0, nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s can run no stage of this profile; nothing was started: %w", p.Name(), errors.Join(refusals...))}
}

// retainedRequest is the create and the turn of the retained run of
// task on stage of prof under key and turnID: what agentrt run --retain
// admits, and what agentrt runs recover re-sends from the same profile
// and task (retained.StageRequest: the stage's projection, and on a
// subscription profile the stage's credential requests, RG-07).
func retainedRequest(prof *profile.Profile, stage int, key, turnID, task string) (*contract.CreateInput, contract.TurnInput, error) {
	return retained.StageRequest(prof, stage, key, turnID, task)
}

// mustValue converts plain data to a canonical value; the retained types
// always convert.
func mustValue(x any) canonjson.Value {
	v, err := canonjson.ToValue(x)
	if err != nil {
		return canonjson.StringValue(fmt.Sprint(x))
	}
	return v
}

// writeLine prints v as one JSON line.
func writeLine(stdio IO, v canonjson.Value) error {
	_, err := machine(stdio.Out).Write(append(canonjson.Marshal(v), '\n'))
	return err
}

// follow prints a retained run's events after after and then its result;
// the exit status is 0 only when the run succeeded. It ends span (nil:
// untraced) with the result.
func follow(ctx context.Context, stdio IO, run *retained.Run, after retained.Cursor, asJSON bool, span *telemetry.RetainedSpan) error {
	var (
		res    *contract.TurnResult
		state  string
		failed error
	)
	defer func() { span.Followed(state, res, failed) }()
	last := after
	for ev, err := range run.Events(ctx, after) {
		if err != nil {
			failed = err
			return &exitError{code: ExitFailed, err: fmt.Errorf("%w (resume with --after-cursor %q --after-sequence %d)", err, last.Cursor, last.Sequence)}
		}
		last = ev.After()
		span.Event(ctx, ev.Event)
		if asJSON {
			if err := writeLine(stdio, canonjson.ObjectValue([]canonjson.Member{
				{Name: "sequence", Value: canonjson.NumberValue(float64(ev.Sequence))},
				{Name: "cursor", Value: canonjson.StringValue(ev.Cursor)},
				{Name: "event", Value: mustValue(ev.Event)},
			})); err != nil {
				return err
			}
			continue
		}
		fmt.Fprintf(stdio.Out, "%4d  %-24s %s\n", ev.Sequence, ev.Event.Type, eventText(mustValue(ev.Event.Data)))
	}
	res, failed = run.Result(ctx)
	if failed != nil {
		return &exitError{code: ExitFailed, err: failed}
	}
	snap, err := run.Status(ctx)
	if err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	status := canonjson.NullValue()
	if snap.Status != nil {
		state = string(*snap.Status)
		status = canonjson.StringValue(state)
	}
	if asJSON {
		if err := writeLine(stdio, canonjson.ObjectValue([]canonjson.Member{
			{Name: "record", Value: canonjson.StringValue(snap.RunID)},
			{Name: "status", Value: status},
			{Name: "success", Value: canonjson.BoolValue(res.Success)},
			{Name: "text", Value: canonjson.StringValue(res.Text)},
			{Name: "usage", Value: usageValue(res.Usage)},
		})); err != nil {
			return err
		}
	} else {
		state := "unknown"
		if snap.Status != nil {
			state = string(*snap.Status)
		}
		fmt.Fprintf(stdio.Out, "run %s  %s\n", snap.RunID, state)
		if res.Error != nil {
			fmt.Fprintf(stdio.Out, "  why       %s\n", *res.Error)
		}
		if res.Text != "" {
			fmt.Fprintf(stdio.Out, "  result    %s\n", clip(strings.ReplaceAll(res.Text, "\n", " "), 120))
		}
		fmt.Fprintf(stdio.Out, "  last      --after-cursor %q --after-sequence %d\n", last.Cursor, last.Sequence)
	}
	if !res.Success {
		return refused()
	}
	return nil
}

// usageValue is a turn's usage, or null when the provider reported none
// (unknown, never 0).
func usageValue(u *contract.TokenUsage) canonjson.Value {
	if u == nil {
		return canonjson.NullValue()
	}
	return mustValue(u)
}

// providerFlags select the provider of a retained-run command.
type providerFlags struct {
	name, script, baseURL string
}

func (f *providerFlags) register(cmd *cobra.Command) {
	cmd.Flags().StringVar(&f.name, "provider", "scripted", "the provider that owns the run (the one it was started on: scripted, remote, …)")
	cmd.Flags().StringVar(&f.script, "script", "", "script for the scripted provider")
	cmd.Flags().StringVar(&f.baseURL, "base-url", "", "the agentrt serve address of the remote provider")
}

// retainedStore opens the run store and the provider of a retained run.
func openRetained(ctx context.Context, sf *storeFlags, pf *providerFlags, open providerOpener) (store.Store, contract.Provider, error) {
	p, err := open(pf.name, pf.script, pf.baseURL, "")
	if err != nil {
		return nil, nil, err
	}
	if rp, ok := p.(*remote.Provider); ok {
		// A server that does not answer (down, or refusing the token)
		// would otherwise read as a provider named "remote", which no
		// record names: say what is wrong instead.
		cctx, cancel := context.WithTimeout(ctx, remote.DefaultCallTimeout)
		_, err := rp.Capabilities(cctx)
		cancel()
		if err != nil {
			return nil, nil, &exitError{code: ExitFailed, err: fmt.Errorf("the server at %s does not answer: %w; nothing was changed, try again once it answers (with its token in AGENTRT_SERVE_TOKEN)", pf.baseURL, err)}
		}
	}
	s, err := sf.open(ctx)
	if err != nil {
		return nil, nil, err
	}
	if err := persistCreateKeys(p, s); err != nil {
		s.Close()
		return nil, nil, err
	}
	return s, p, nil
}

// persistCreateKeys keeps p's keyed creates in the run store s when p
// can (contract.CreateKeyPersister): a retained run's keyed create
// retried by another process — runs recover, or run --retain again with
// the same --key — replays the environment its key made, or says it is
// gone or in doubt, and never makes a second one.
func persistCreateKeys(p contract.Provider, s store.Store) error {
	kp, ok := p.(contract.CreateKeyPersister)
	if !ok {
		return nil
	}
	if err := kp.PersistCreateKeys(store.KeyRecords(s)); err != nil {
		return &exitError{code: ExitFailed, err: err}
	}
	return nil
}

// retainedError maps a retained-run error to the command's exit.
func retainedError(id string, err error) error {
	switch {
	case errors.Is(err, retained.ErrNoRecord):
		return &exitError{code: ExitFailed, err: fmt.Errorf("no retained run %q in the store", id)}
	case errors.Is(err, retained.ErrEnvironmentGone):
		return &exitError{code: ExitFailed, err: fmt.Errorf("%w; the provider no longer holds the run (agentrt runs recover %s says what is left)", err, id)}
	}
	return &exitError{code: ExitFailed, err: err}
}

func newRunsAttachCmd(stdio IO, open providerOpener) *cobra.Command {
	sf := storeFlags{existing: true}
	var pf providerFlags
	var asJSON bool
	var after retained.Cursor
	cmd := &cobra.Command{
		Use:   "attach RUN",
		Short: "Re-attach to a retained run from any process and follow it to its result",
		Long: `Re-attach to the retained run RUN (as agentrt run --retain printed it) by
the control ref its admission recorded in the run store, and print its events
and then its result. Any process that shares the store and reaches the provider
that owns the run can attach: give the same --provider (and --base-url) it was
started on. --after-cursor and --after-sequence resume after an event a previous
attach printed; the run's history must still hold that event at that position,
or attach fails rather than skip anything. --json prints one JSON object per
event and one for the result.

Exit status: 0 when the run succeeded, 1 otherwise.`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			s, p, err := openRetained(ctx, &sf, &pf, open)
			if err != nil {
				return err
			}
			defer s.Close()
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			// Under the run's root span, wherever it was started.
			ctx, span := tracing.FollowRetained(ctx, args[0])
			// A seated run is followed at the stage it is on.
			id := args[0]
			if latest, err := retained.Latest(ctx, s, id); err == nil && latest.ID != id {
				fmt.Fprintf(stdio.Err, "run %s moved on to stage %d: attaching to that stage's run %s\n", id, derefInt(latest.Intent.Stage), latest.ID)
				id = latest.ID
			}
			run, err := retained.Attach(ctx, p, s, id)
			if err != nil {
				span.Followed("", nil, err)
				return retainedError(id, err)
			}
			return follow(ctx, stdio, run, after, asJSON, span)
		},
	}
	sf.register(cmd)
	pf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per event, then the result")
	cmd.Flags().StringVar(&after.Cursor, "after-cursor", "", "print only events after this event id (with --after-sequence)")
	cmd.Flags().Int64Var(&after.Sequence, "after-sequence", 0, "the sequence of the --after-cursor event")
	return cmd
}

func newRunsRecoverCmd(stdio IO, open providerOpener) *cobra.Command {
	sf := storeFlags{existing: true}
	var pf providerFlags
	var asJSON bool
	var profilePath, task string
	cmd := &cobra.Command{
		Use:   "recover RUN",
		Short: "Recover a retained run after the process that started it died",
		Long: `Recover the retained run RUN from its admission records: re-attach when the
provider proves it holds the run (recovered), report not_found when nothing is
left (nothing to clean up), or unverifiable when the provider cannot say now —
the environment is then kept, never destroyed.

A run whose starter died before its turn was dispatched can only go on with
what it was started with, which no record holds in full: give --profile (the
profile file it was started with) and --task (its task). Recovery then replays
the keyed create, when the environment was not recorded, and re-sends the
admitted turn under the run's turn id, which the provider runs at most once;
on a subscription profile both carry the seat's credential request. A profile
or task other than the admitted ones is refused before anything is sent. A
seated run records a keyed digest of its seat's account selector, never the
selector, and a profile whose selector for the run's stage changed since is
unverifiable, nothing sent under another account and nothing destroyed. The
key is $AGENTRT_CREDENTIAL_KEY (at least 32 bytes, kept out of the store) when
set, else a SQLite store's own key, in the file beside its database
(FILE.credential-key, owner-only, made by the first command that needs it);
give this command the key agentrt run --retain had. On PostgreSQL without the
variable no digest is recorded, and only the run's stage is checked.

Exit status: 0 when recovered, 1 otherwise.`,
		Args: cobra.MatchAll(cobra.ExactArgs(1), runArg),
		RunE: func(cmd *cobra.Command, args []string) error {
			ctx := cmd.Context()
			if cmd.Flags().Changed("task") && strings.TrimSpace(task) == "" {
				return usage("--task is empty; give the task the run was started with")
			}
			var prof *profile.Profile
			if profilePath != "" {
				var err error
				if prof, err = loadProfile(stdio, profilePath, asJSON); err != nil {
					return err
				}
			}
			s, p, err := openRetained(ctx, &sf, &pf, open)
			if err != nil {
				return err
			}
			defer s.Close()
			credKey, err := credentialKey(s)
			if err != nil {
				return err
			}
			opts := retained.RecoverOptions{Provider: p, Store: s, RunID: args[0], Profile: prof, CredentialKey: credKey}
			// The record names the key and turn id the request was
			// admitted under; a missing one is recovery's to report. A
			// seated run is recovered at the stage it was on: the last
			// stage its chain admitted, re-projected from its intent.
			admitted, loadErr := retained.Latest(ctx, s, args[0])
			if loadErr == nil && admitted.ID != args[0] {
				fmt.Fprintf(stdio.Err, "run %s moved on to stage %d: recovering that stage's run %s\n", args[0], derefInt(admitted.Intent.Stage), admitted.ID)
				opts.RunID = admitted.ID
			}
			if loadErr == nil {
				in := admitted.Intent
				stage := 0
				if in.Stage != nil {
					stage = *in.Stage
				}
				create, turn, err := retainedRequest(prof, stage, in.IdempotencyKey, in.TurnID, task)
				if prof != nil {
					// Exactly the admitted request, an older admission's
					// (created with the whole profile) included (RG-12); the
					// seat's account comes from this profile, so one the run
					// was not started with is refused before it is used.
					create, turn, err = retained.AdmittedRequest(prof, in, task)
					if _, ok := errors.AsType[*retained.MismatchError](err); ok {
						return usage("--profile %s is not the profile run %s was started with; give that profile file", profilePath, args[0])
					}
				}
				if err != nil {
					return usage("--profile %s cannot run stage %d, the stage run %s was started on: %v; give the profile file it was started with", profilePath, stage, args[0], err)
				}
				if prof != nil {
					opts.Environment = create
				}
				if task != "" {
					opts.Turn = &turn
				}
			}
			tracing := startTracing(ctx, stdio)
			defer stopTracing(ctx, stdio, tracing)
			ctx, span := tracing.RecoverRetained(ctx, args[0])
			rec, err := retained.RecoverRetainedRun(ctx, opts)
			if err != nil {
				span.Recovered("", err)
				return retainedError(args[0], err)
			}
			span.Recovered(string(rec.Outcome), nil)
			m := []canonjson.Member{
				{Name: "record", Value: canonjson.StringValue(args[0])},
				{Name: "outcome", Value: canonjson.StringValue(string(rec.Outcome))},
				{Name: "environmentId", Value: nullableString(rec.EnvironmentID)},
			}
			if opts.RunID != args[0] {
				// The stage the seated run was on, recovered in its place.
				m = append(m, canonjson.Member{Name: "stageRun", Value: canonjson.StringValue(opts.RunID)},
					canonjson.Member{Name: "stage", Value: canonjson.NumberValue(float64(derefInt(admitted.Intent.Stage)))})
			}
			if rec.Via != "" {
				m = append(m, canonjson.Member{Name: "via", Value: canonjson.StringValue(rec.Via)})
			}
			if rec.Run != nil {
				m = append(m, canonjson.Member{Name: "controlRef", Value: mustValue(rec.Run.ControlRef())})
			}
			if rec.Reason != "" {
				m = append(m, canonjson.Member{Name: "reason", Value: canonjson.StringValue(rec.Reason)})
			}
			var next []string // what to do about an unverifiable run
			if rec.Outcome == retained.Unverifiable {
				if _, ok := errors.AsType[*retained.CredentialChangedError](rec.Cause); ok {
					// The profile asks for another account than the run was
					// admitted under: only the admitted one goes on with it.
					next = []string{fmt.Sprintf("agentrt runs recover %s --profile PROFILE --task TASK with the profile file whose seat selectors the run was started with (and the same $%s)", args[0], envCredentialKey)}
				} else if loadErr == nil && admitted.Dispatched == nil && (prof == nil || task == "") {
					// Only the admitted request can go on with the run.
					in := admitted.Intent
					next = []string{
						fmt.Sprintf("agentrt runs recover %s --profile PROFILE --task TASK (the profile file and task it was started with, and the same --provider)", args[0]),
						fmt.Sprintf("agentrt run PROFILE --task TASK --retain --key %s --turn-id %s (continues the same run)", in.IdempotencyKey, in.TurnID),
					}
				} else if loadErr == nil && admitted.Dispatched == nil {
					next = []string{fmt.Sprintf("agentrt runs recover %s --profile PROFILE --task TASK again once the provider answers, with the task it was started with (the reason says what was refused)", args[0])}
				} else {
					next = []string{fmt.Sprintf("agentrt runs recover %s again once the provider answers", args[0])}
				}
				m = append(m, canonjson.Member{Name: "next", Value: mustValue(next)})
			}
			if asJSON {
				if err := writeJSON(stdio.Out, canonjson.ObjectValue(m)); err != nil {
					return err
				}
			} else {
				fmt.Fprintf(stdio.Out, "run %s  %s\n", args[0], rec.Outcome)
				if rec.EnvironmentID != "" {
					fmt.Fprintf(stdio.Out, "  env       %s\n", rec.EnvironmentID)
				}
				switch rec.Outcome {
				case retained.Recovered:
					fmt.Fprintf(stdio.Out, "  via       %s\n", rec.Via)
					fmt.Fprintf(stdio.Out, "  next      agentrt runs attach %s\n", args[0])
				case retained.Unverifiable:
					fmt.Fprintf(stdio.Out, "  why       %s\n", rec.Reason)
					fmt.Fprintf(stdio.Out, "  kept      nothing was destroyed\n")
					for i, line := range next {
						label := "next"
						if i > 0 {
							label = "or"
						}
						fmt.Fprintf(stdio.Out, "  %-9s %s\n", label, line)
					}
				default:
					fmt.Fprintf(stdio.Out, "  why       %s\n", rec.Reason)
				}
			}
			if rec.Outcome != retained.Recovered {
				return refused()
			}
			return nil
		},
	}
	sf.register(cmd)
	pf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the outcome as JSON")
	cmd.Flags().StringVar(&profilePath, "profile", "", "the profile file the run was started with: replays its keyed create and rebuilds a subscription seat's credential request")
	cmd.Flags().StringVar(&task, "task", "", "the task the run was started with: re-sends the admitted turn when its dispatch was not recorded")
	return cmd
}

// derefInt is *p, 0 when nil.
func derefInt(p *int) int {
	if p == nil {
		return 0
	}
	return *p
}

// retainedSummary describes a retained run record for runs list: where
// its admission got to.
func retainedSummary(r store.Run) string {
	rec, err := retained.FromRun(r)
	if err != nil {
		return "(unreadable record)"
	}
	stage := "intent"
	switch {
	case rec.Dispatched != nil:
		stage = "dispatched"
	case rec.Environment != nil:
		stage = "environment admitted"
	}
	return fmt.Sprintf("retained on %s, turn %s, %s", rec.Intent.Provider, rec.Intent.TurnID, stage)
}

// printRetained writes a retained run's admission records for people.
func printRetained(w io.Writer, r *retained.Record) {
	fmt.Fprintf(w, "run %s\n", r.ID)
	fmt.Fprintf(w, "  status    %s\n", r.Status)
	fmt.Fprintf(w, "  kind      %s\n", retained.Kind)
	fmt.Fprintf(w, "  started   %s\n", r.CreatedAt.Local().Format(time.RFC3339))
	fmt.Fprintf(w, "  updated   %s\n", r.UpdatedAt.Local().Format(time.RFC3339))
	in := r.Intent
	fmt.Fprintf(w, "  intent    provider %s, key %s, turn %s\n", in.Provider, in.IdempotencyKey, in.TurnID)
	fmt.Fprintf(w, "  identity  session %s, execution %s\n", in.SessionID, in.ExecutionID)
	if in.Stage != nil {
		fmt.Fprintf(w, "  stage     %d\n", *in.Stage)
	}
	fmt.Fprintf(w, "  request   %s\n", in.RequestDigest)
	if e := r.Environment; e != nil {
		fmt.Fprintf(w, "  env       %s\n", e.EnvironmentID)
	} else {
		fmt.Fprintf(w, "  env       not admitted\n")
	}
	if n := r.Native; n != nil {
		fmt.Fprintf(w, "  native    %s session %s (execution %s)\n", n.Provider, n.NativeSessionID, n.ExecutionID)
	}
	if sl := r.Seat; sl != nil {
		fmt.Fprintf(w, "  seated    run %s, node %s\n", sl.Logical, sl.Node)
		for _, at := range sl.Tried {
			fmt.Fprintf(w, "  tried     stage %d (%s on %s, run %s): %s\n", at.Stage, at.Model, at.Provider, at.RunID, stageLine(at))
		}
		if sl.MovedOn != nil {
			fmt.Fprintf(w, "  moved on  %s; to run %s (agentrt runs show %s)\n", stageLine(*sl.MovedOn), sl.Next, sl.Next)
		}
	}
	if ref, err := r.ControlRef(); err == nil {
		fmt.Fprintf(w, "  control   %s\n", canonjson.Marshal(mustValue(ref)))
		fmt.Fprintf(w, "  next      agentrt runs attach %s\n", r.ID)
	} else {
		fmt.Fprintf(w, "  control   not dispatched (agentrt runs recover %s)\n", r.ID)
	}
}

// cancelRetained cancels a retained run through its provider under an
// operation id, waiting up to wait for it to end.
func cancelRetained(ctx context.Context, stdio IO, s store.Store, pf *providerFlags, open providerOpener, id, operationID, reason string, wait time.Duration, asJSON bool) error {
	p, err := open(pf.name, pf.script, pf.baseURL, "")
	if err != nil {
		return err
	}
	run, err := retained.Attach(ctx, p, s, id)
	if err != nil {
		return retainedError(id, err)
	}
	if operationID == "" {
		var b [12]byte
		if _, err := rand.Read(b[:]); err != nil {
			return &exitError{code: ExitFailed, err: err}
		}
		operationID = "cli-cancel-" + hex.EncodeToString(b[:])
	}
	var why *string
	if reason != "" {
		why = &reason
	}
	out, cancelErr := run.Cancel(ctx, retained.CancelRequest{OperationID: operationID, Reason: why})
	if errors.Is(cancelErr, retained.ErrNoCancellation) || errors.Is(cancelErr, retained.ErrInvalidOptions) {
		return usage("%v", cancelErr)
	}
	accepted := out.Status == contract.StatusAccepted || out.Status == contract.StatusReplayed
	snap := out.Snapshot
	if accepted && out.Effect == contract.EffectCancelRequested && wait > 0 {
		fmt.Fprintf(stdio.Err, "cancel requested; waiting up to %s for run %s to end…\n", wait, id)
		deadline := time.Now().Add(wait)
		for time.Now().Before(deadline) && !terminalSnapshot(snap) {
			select {
			case <-ctx.Done():
				return &exitError{code: ExitFailed, err: ctx.Err()}
			case <-time.After(100 * time.Millisecond):
			}
			if snap, err = run.Status(ctx); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
		}
	}
	status, statusValue := "unknown", canonjson.NullValue()
	if snap.Status != nil {
		status = string(*snap.Status)
		statusValue = canonjson.StringValue(status)
	}
	if asJSON {
		m := []canonjson.Member{
			{Name: "runId", Value: canonjson.StringValue(id)},
			{Name: "operationId", Value: canonjson.StringValue(out.OperationID)},
			{Name: "outcome", Value: canonjson.StringValue(out.Status)},
			{Name: "effect", Value: canonjson.StringValue(out.Effect)},
			{Name: "status", Value: statusValue},
		}
		if out.Message != nil {
			m = append(m, canonjson.Member{Name: "message", Value: canonjson.StringValue(*out.Message)})
		}
		if err := writeJSON(stdio.Out, canonjson.ObjectValue(m)); err != nil {
			return err
		}
	} else {
		fmt.Fprintf(stdio.Out, "run %s  cancel %s, %s (status %s)\n", id, out.Status, out.Effect, status)
		fmt.Fprintf(stdio.Out, "  operation %s\n", out.OperationID)
		if out.Message != nil {
			fmt.Fprintf(stdio.Out, "  why       %s\n", *out.Message)
		}
	}
	if cancelErr != nil {
		return &exitError{code: ExitFailed, err: cancelErr}
	}
	// As for any run: done when it ended cancelled, or when the request
	// was taken and nobody asked to wait.
	cancelled := snap.Status != nil && *snap.Status == contract.SessionCancelled
	if accepted && (cancelled || out.Effect == contract.EffectCancelRequested && wait == 0) {
		return nil
	}
	return refused()
}

// terminalSnapshot reports whether a snapshot shows the run ended.
func terminalSnapshot(s retained.Snapshot) bool { return s.Terminal() }
