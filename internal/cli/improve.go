package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve"
	"github.com/agentrt/agentrt/schema"
)

func newImproveCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "improve",
		Short: "Propose, review and activate a measured improvement (the only write path)",
		Long: `The improvement production path, recorded in the run store:

  propose FILE          record an AgentImprovementProposal (a passing,
                        sufficiently powered measured comparison)
  review DIGEST         record the one review of a proposal
  activate FILE         record an AgentImprovementActivation of an approved
                        proposal, and with --targets execute it once
  show DIGEST           print a recorded proposal or activation

Every record must carry its self-digest and name the digests of the records
before it. The same request again is replayed; a different one under the
same key is refused. Nothing is written to a target without an approved
review of a passing comparison.`,
	}
	cmd.AddCommand(newImproveProposeCmd(stdio), newImproveReviewCmd(stdio), newImproveActivateCmd(stdio), newImproveShowCmd(stdio))
	registerImproveSearch(cmd, stdio)
	return cmd
}

// improveRefusal reports a refused step: schema issues for people, the
// error otherwise.
func improveRefusal(stdio IO, what string, err error) error {
	var se *schema.Error
	if errors.As(err, &se) {
		writeIssues(stdio.Err, what, se.Issues)
		return refused()
	}
	return &exitError{code: ExitFailed, err: err}
}

func printRecorded(stdio IO, asJSON bool, what string, rec improve.Recorded) error {
	if asJSON {
		return writeJSON(stdio.Out, rec)
	}
	verb := "recorded"
	if rec.Replayed {
		verb = "already recorded (replayed)"
	}
	fmt.Fprintf(stdio.Out, "%s %s  %s\n  run %s\n", what, rec.Digest, verb, rec.RunID)
	return nil
}

func newImproveProposeCmd(stdio IO) *cobra.Command {
	var sf storeFlags
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "propose FILE",
		Short: "Record an improvement proposal (- reads standard input)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(stdio, args[0])
			if err != nil {
				return err
			}
			return withImprove(cmd.Context(), &sf, nil, func(svc *improve.Service) error {
				rec, err := svc.ProposeImprovement(cmd.Context(), data)
				if err != nil {
					return improveRefusal(stdio, "proposal", err)
				}
				return printRecorded(stdio, asJSON, "proposal", rec)
			})
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the recorded step as JSON")
	return cmd
}

func newImproveReviewCmd(stdio IO) *cobra.Command {
	var sf storeFlags
	var asJSON bool
	var decision, by, reason, feedback string
	cmd := &cobra.Command{
		Use:   "review PROPOSAL-DIGEST --decision approve|reject|request-changes --by NAME --reason TEXT",
		Short: "Record the one review of a recorded proposal",
		Long: `Record the review of a proposal, digested and dated now. approve lets an
activation follow; reject and request-changes end the path for this proposal.
A proposal has one review: the same review again is replayed, another one is
refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			r := candidate.ImprovementReview{
				Kind: candidate.KindImprovementReviewValue, ProposalDigest: args[0], Decision: decision,
				ReviewedBy: by, ReviewedAt: time.Now().UTC().Format("2006-01-02T15:04:05.000Z"), Reason: reason,
			}
			if cmd.Flags().Changed("feedback") {
				r.Feedback = &feedback
			}
			d, err := candidate.SelfDigest(&r)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			r.Digest = d
			v, err := canonjson.ToValue(&r)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			return withImprove(cmd.Context(), &sf, nil, func(svc *improve.Service) error {
				rec, err := svc.ReviewProposal(cmd.Context(), canonjson.Marshal(v))
				if err != nil {
					return improveRefusal(stdio, "review", err)
				}
				return printRecorded(stdio, asJSON, "review", rec)
			})
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&decision, "decision", "", "approve, reject or request-changes")
	cmd.Flags().StringVar(&by, "by", "", "who reviewed")
	cmd.Flags().StringVar(&reason, "reason", "", "why")
	cmd.Flags().StringVar(&feedback, "feedback", "", "optional feedback for the proposer")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the recorded step as JSON")
	for _, f := range []string{"decision", "by", "reason"} {
		_ = cmd.MarkFlagRequired(f)
	}
	return cmd
}

func newImproveActivateCmd(stdio IO) *cobra.Command {
	var sf storeFlags
	var asJSON bool
	var targetDir, candidatePath string
	cmd := &cobra.Command{
		Use:   "activate FILE [--targets DIR --candidate FILE]",
		Short: "Record an activation of an approved proposal, and execute it once",
		Long: `Record an AgentImprovementActivation (- reads standard input). It must name
the proposal, its approving review, the measured experiment and candidate,
and target only surfaces the proposal changes, before it expires.

With --targets, execute it: each target is the file DIR/IDENTITY, a JSON
state record whose "stateDigest" must still equal the target's
expectedBaseDigest; the --candidate record (its "stateDigest" equal to the
activation's candidateDigest) replaces it. A restore-baseline activation
undoes one: each target must hold the candidate, and the --candidate record
given is then the baseline state (its "stateDigest" equal to the target's
expectedBaseDigest) that is written back. When every target already holds
what the activation writes, nothing is written (already-applied).
An activation executes at most once; its outcome is recorded and shown again
by a later attempt, which is refused.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if (targetDir == "") != (candidatePath == "") {
				return usage("--targets and --candidate go together")
			}
			data, err := readInput(stdio, args[0])
			if err != nil {
				return err
			}
			var targets improve.Targets
			if targetDir != "" {
				c, err := readInput(stdio, candidatePath)
				if err != nil {
					return err
				}
				targets = &fileTargets{dir: targetDir, candidate: c}
			}
			return withImprove(cmd.Context(), &sf, targets, func(svc *improve.Service) error {
				rec, err := svc.CreateActivation(cmd.Context(), data)
				if err != nil {
					return improveRefusal(stdio, "activation", err)
				}
				if targets == nil {
					return printRecorded(stdio, asJSON, "activation", rec)
				}
				exec, err := svc.ExecuteActivation(cmd.Context(), rec.Digest)
				if exec.Result != nil {
					if asJSON {
						if werr := writeJSON(stdio.Out, exec); werr != nil {
							return werr
						}
					} else {
						printActivationResult(stdio, rec.Digest, exec.Result)
					}
				}
				if err != nil {
					return improveRefusal(stdio, "activation", err)
				}
				return nil
			})
		},
	}
	sf.register(cmd)
	cmd.Flags().StringVar(&targetDir, "targets", "", "execute: the directory holding each target as DIR/IDENTITY")
	cmd.Flags().StringVar(&candidatePath, "candidate", "", "execute: the state record written to every target (the candidate; for restore-baseline, the baseline)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the recorded step or result as JSON")
	return cmd
}

func printActivationResult(stdio IO, digest string, r *candidate.ImprovementActivationResult) {
	fmt.Fprintf(stdio.Out, "activation %s  %s\n", digest, r.Outcome.Status)
	for _, t := range r.Outcome.Targets {
		switch {
		case t.AfterDigest != nil:
			fmt.Fprintf(stdio.Out, "  %s %s  %s → %s\n", t.Surface, t.Identity, deref(t.BeforeDigest), *t.AfterDigest)
		case t.CurrentDigest != nil:
			fmt.Fprintf(stdio.Out, "  %s %s  now %s\n", t.Surface, t.Identity, *t.CurrentDigest)
		}
	}
	if r.Outcome.Message != nil {
		fmt.Fprintf(stdio.Out, "  %s: %s\n", deref(r.Outcome.Code), *r.Outcome.Message)
	}
	fmt.Fprintf(stdio.Out, "  result %s\n", r.Digest)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

func newImproveShowCmd(stdio IO) *cobra.Command {
	sf := storeFlags{existing: true}
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "show DIGEST",
		Short: "Print a recorded proposal (with its review) or activation (with its result)",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return withImprove(cmd.Context(), &sf, nil, func(svc *improve.Service) error {
				rec, err := svc.Show(cmd.Context(), args[0])
				if err != nil {
					return &exitError{code: ExitFailed, err: err}
				}
				if asJSON {
					return writeJSON(stdio.Out, rec)
				}
				fmt.Fprintf(stdio.Out, "%s %s  %s\n", rec.Kind, args[0], rec.Status)
				if rec.Kind == improve.KindProposalRun {
					p, _ := rec.Doc.Get("proposal")
					fmt.Fprintf(stdio.Out, "  run id %s, proposed %s\n", memberStr(p, "runId"), memberStr(p, "proposedAt"))
					if r, ok := rec.Doc.Get("review"); ok {
						fmt.Fprintf(stdio.Out, "  review %s: %s by %s — %s\n", memberStr(r, "digest"), memberStr(r, "decision"), memberStr(r, "reviewedBy"), memberStr(r, "reason"))
					} else {
						fmt.Fprintln(stdio.Out, "  not reviewed")
					}
					return nil
				}
				a, _ := rec.Doc.Get("activation")
				fmt.Fprintf(stdio.Out, "  proposal %s, expires %s\n", memberStr(a, "proposalDigest"), memberStr(a, "expiresAt"))
				if v, ok := rec.Doc.Get("result"); ok {
					var r candidate.ImprovementActivationResult
					if err := canonjson.FromValue(v, &r); err == nil {
						printActivationResult(stdio, args[0], &r)
					}
				} else {
					fmt.Fprintln(stdio.Out, "  not executed")
				}
				return nil
			})
		},
	}
	sf.register(cmd)
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the record as JSON")
	return cmd
}

func memberStr(v canonjson.Value, name string) string {
	m, _ := v.Get(name)
	return m.Str()
}

func withImprove(ctx context.Context, sf *storeFlags, targets improve.Targets, fn func(*improve.Service) error) error {
	s, err := sf.open(ctx)
	if err != nil {
		return err
	}
	defer s.Close()
	return fn(&improve.Service{Store: s, Targets: targets})
}

// fileTargets are profile targets kept as JSON state records
// DIR/IDENTITY: an object whose "stateDigest" names the measured profile
// state it holds. The digest is read from the record, not recomputed:
// profile state digests are the measuring runner's, not this command's.
type fileTargets struct {
	dir       string
	candidate []byte
}

func (f *fileTargets) path(identity string) (string, error) {
	if !filepath.IsLocal(identity) || strings.ContainsAny(identity, `/\`) {
		return "", fmt.Errorf("target identity %q is not a file name", identity)
	}
	return filepath.Join(f.dir, identity), nil
}

func fileDigest(data []byte) (string, error) {
	v, err := canonjson.Decode(data)
	if err != nil {
		return "", err
	}
	d, ok := v.Get("stateDigest")
	if !ok || !canonjson.IsDigest(d.Str()) {
		return "", errors.New(`a target state record needs a "stateDigest" (sha256:…)`)
	}
	return d.Str(), nil
}

func (f *fileTargets) Base(_ context.Context, _, identity string) (string, error) {
	p, err := f.path(identity)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		return "", err
	}
	return fileDigest(data)
}

func (f *fileTargets) Apply(_ context.Context, _, identity, digest string) (string, error) {
	p, err := f.path(identity)
	if err != nil {
		return "", err
	}
	d, err := fileDigest(f.candidate)
	if err != nil {
		return "", fmt.Errorf("candidate: %w", err)
	}
	if d != digest {
		return "", fmt.Errorf("the --candidate record's stateDigest %s is not %s, the state this activation writes", d, digest)
	}
	tmp, err := os.CreateTemp(f.dir, ".improve-*")
	if err != nil {
		return "", err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(f.candidate); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Sync(); err != nil {
		tmp.Close()
		return "", err
	}
	if err := tmp.Close(); err != nil {
		return "", err
	}
	if err := os.Rename(tmp.Name(), p); err != nil {
		return "", err
	}
	return d, nil
}
