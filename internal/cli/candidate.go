package cli

import (
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/verify"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

func newCandidateCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "candidate",
		Short: "Identify and verify frozen improvement candidates (AgentCandidateBundle)",
	}
	cmd.AddCommand(newCandidateDigestCmd(stdio), newCandidateVerifyCmd(stdio), newCandidateVerifyReceiptCmd(stdio), newCandidateScanCmd(stdio))
	return cmd
}

// dialectFlag parses --dialect.
func dialectFlag(s string) (candidate.Dialect, error) {
	switch d := candidate.Dialect(s); d {
	case candidate.DialectAuto, candidate.DialectSeed, candidate.DialectTS16:
		return d, nil
	}
	return "", usage("--dialect must be auto, seed or ts16, not %q", s)
}

func newCandidateDigestCmd(stdio IO) *cobra.Command {
	var asJSON bool
	var dialect string
	cmd := &cobra.Command{
		Use:   "digest FILE",
		Short: "Validate FILE (or - for stdin) as an AgentCandidateBundle and print its computed digest",
		Long: `Validate FILE as an AgentCandidateBundle in the chosen dialect and print the
digest computed over it (RFC 8785 SHA-256 without the top-level digest). The
carried digest is reported, not trusted. Exit status: 0 valid, 1 invalid,
2 usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := dialectFlag(dialect)
			if err != nil {
				return err
			}
			data, err := readInput(stdio, args[0])
			if err != nil {
				return err
			}
			b, err := candidate.ParseBundle(data, d)
			if err != nil {
				var se *schema.Error
				if !errors.As(err, &se) {
					return &exitError{code: ExitUsage, err: err}
				}
				if asJSON {
					if err := writeJSON(stdio.Out, map[string]any{"valid": false, "issues": se.Issues}); err != nil {
						return err
					}
				} else {
					writeIssues(stdio.Out, args[0], se.Issues)
				}
				return refused()
			}
			digest, err := candidate.Digest(b)
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			used := candidate.DialectTS16
			if b.Lineage != nil && d != candidate.DialectTS16 {
				used = candidate.DialectSeed
			}
			if asJSON {
				return writeJSON(stdio.Out, map[string]any{"valid": true, "dialect": used, "digest": digest,
					"carriedDigest": b.Digest, "carriedMatches": digest == b.Digest})
			}
			fmt.Fprintln(stdio.Out, digest)
			if digest != b.Digest {
				fmt.Fprintf(stdio.Err, "agentrt: %s carries %s, not its computed digest\n", args[0], b.Digest)
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&dialect, "dialect", string(candidate.DialectAuto), "bundle dialect: auto, seed or ts16")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the result as JSON")
	return cmd
}

func newCandidateScanCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "scan FILE",
		Short: "Report the strings of a JSON document (a candidate bundle, say) that look like secrets",
		Long: `Scan every string of FILE (or - for stdin), member names, prompts and inline
file contents included, for credential material (spec candidate §20: run it
before persisting a bundle). Each finding is a JSON pointer and the rule that
matched; the matched text is never printed. FILE need not be a valid bundle:
any strict JSON document is scanned.

Exit status: 0 no finding, 1 findings, 2 unreadable input or usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(stdio, args[0])
			if ee := (*exitError)(nil); errors.As(err, &ee) {
				// Missing, a directory, unreadable or too large: the help
				// promises 2 for input that cannot be scanned.
				return &exitError{code: ExitUsage, err: ee.err}
			} else if err != nil {
				return err
			}
			v, err := canonjson.Decode(data)
			if err != nil {
				return &exitError{code: ExitUsage, err: fmt.Errorf("%s: %w", args[0], err)}
			}
			findings := candidate.ScanSecrets(v)
			if asJSON {
				if findings == nil {
					findings = []candidate.SecretFinding{}
				}
				if err := writeJSON(stdio.Out, map[string]any{"findings": findings}); err != nil {
					return err
				}
			} else {
				for _, f := range findings {
					where := "value"
					if f.InName {
						where = "member name"
					}
					fmt.Fprintf(stdio.Out, "%s%s: %s looks like a secret (%s)\n", args[0], f.Path, where, f.Rule)
				}
				if len(findings) == 0 {
					fmt.Fprintf(stdio.Out, "%s: no secret found\n", args[0])
				}
			}
			if len(findings) > 0 {
				return refused()
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the findings as JSON")
	return cmd
}

// largeBundle is the size from which candidate verify reports each step
// on stderr.
const largeBundle = 1 << 20

func newCandidateVerifyCmd(stdio IO) *cobra.Command {
	var asJSON bool
	var dialect, artifacts, ociLayout, platform, materialize, receiptOut string
	var offline, executeSupport, resolveOCI bool
	var repos []string
	cmd := &cobra.Command{
		Use:   "verify FILE [--repo owner/repo=DIR]... [--artifacts DIR]",
		Short: "Verify a candidate bundle's integrity (spec candidate §22) and print the verification record",
		Long: `Verify FILE (or - for stdin) as spec candidate §22 describes: strict parse,
dialect, schema, digest, artifacts (length then sha256), workspace manifests
and archives, resources, code (git repositories given with --repo, never
fetched) and entrypoint evidence.

Artifact refs are read from the content-addressed directory --artifacts
(files named by sha256 hex) and, unless --offline, from s3/ipfs through a
resolver that refuses private and internal addresses. Archives in the
reference layout are decoded and compared with their manifests; other
encodings are reported "unverified". Strings that look like secrets are
reported by JSON pointer, never printed, and do not change the verdict.

Optional steps:
  --execute-support     step 5, the reference runtime's support policy
                        (unsupported-surface)
  --resolve-oci         step 11 from the image's registry (anonymous,
                        private addresses refused), or --oci-layout DIR from
                        a local OCI image layout; --platform picks the manifest
  --materialize CONTEXT step 13 for a bundle that verifies: the candidate
                        workspace, profile staging directory and task workspace
                        are written from the verified bytes into the context's
                        fresh roots and re-scanned, and the
                        AgentCandidateMaterializationReceipt is added to the
                        record (and written to --receipt FILE); nothing is
                        executed. A context that does not fit the bundle is an
                        operational error.

Prints a summary, or with --json the verification record as canonical JSON.
A bundle of 1 MiB or more gets a line on stderr as each step begins.
Exit status: 0 verified, 1 rejected, 2 operational or usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := dialectFlag(dialect)
			if err != nil {
				return err
			}
			opts := verify.Options{Dialect: d, Repositories: map[string]string{}}
			for _, r := range repos {
				name, dir, ok := strings.Cut(r, "=")
				if !ok || strings.Count(name, "/") != 1 || dir == "" {
					return usage("--repo wants owner/repo=DIR, not %q", r)
				}
				opts.Repositories[name] = dir
			}
			opts.Artifacts = artifactPort(artifacts, offline)
			if executeSupport {
				policy := verify.ReferenceSupport()
				opts.Support = &policy
			}
			switch {
			case resolveOCI && (ociLayout != "" || offline):
				return usage("--resolve-oci reads registries over the network: it goes with neither --oci-layout nor --offline")
			case resolveOCI:
				opts.OCI = &verify.Registry{}
			case ociLayout != "":
				opts.OCI = verify.OCILayout(ociLayout)
			}
			if opts.Platform, err = platformFlag(platform); err != nil {
				return err
			}
			if receiptOut != "" && materialize == "" {
				return usage("--receipt needs --materialize")
			}
			if opts.Materialize, err = contextDocument(stdio, "materialize", materialize, verify.ParseMaterializationContext); err != nil {
				return err
			}
			data, err := readOperational(stdio, args[0])
			if err != nil {
				return err
			}
			if len(data) >= largeBundle {
				// A large bundle takes a while: say which step it is in.
				opts.Progress = func(n int, name string) {
					fmt.Fprintf(stdio.Err, "verifying %s: step %d, %s…\n", args[0], n, name)
				}
			}
			rec, err := verify.Verify(cmd.Context(), data, opts)
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			if r := rec.MaterializationReceipt; r != nil && receiptOut != "" {
				if err := writeDocument(receiptOut, r); err != nil {
					return &exitError{code: ExitUsage, err: err}
				}
			}
			return report(stdio, asJSON, rec, rec.Verdict == verify.Verified, func() { writeRecord(stdio, args[0], rec) })
		},
	}
	cmd.Flags().StringVar(&dialect, "dialect", string(candidate.DialectAuto), "bundle dialect: auto, seed or ts16")
	cmd.Flags().StringArrayVar(&repos, "repo", nil, "a local repository for owner/repo, as owner/repo=DIR (repeatable)")
	cmd.Flags().StringVar(&artifacts, "artifacts", "", "a content-addressed artifact directory (files named by sha256 hex)")
	cmd.Flags().BoolVar(&offline, "offline", false, "read artifact refs from --artifacts only, never through the network")
	cmd.Flags().BoolVar(&executeSupport, "execute-support", false, "apply the reference runtime's execution support policy (step 5)")
	cmd.Flags().StringVar(&ociLayout, "oci-layout", "", "an OCI image layout directory holding pinned containers' indexes and manifests (step 11)")
	cmd.Flags().BoolVar(&resolveOCI, "resolve-oci", false, "fetch pinned containers' indexes and manifests from their registries, refusing private addresses (step 11)")
	cmd.Flags().StringVar(&materialize, "materialize", "", "a materialization context document: perform step 13 into its fresh roots and emit the receipt")
	cmd.Flags().StringVar(&receiptOut, "receipt", "", "with --materialize, also write the materialization receipt to this file")
	cmd.Flags().StringVar(&platform, "platform", "linux/amd64", "the container platform step 11 selects, os/architecture[/variant]")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verification record as canonical JSON")
	return cmd
}

// platformFlag parses --platform os/architecture[/variant].
func platformFlag(s string) (candidate.Platform, error) {
	parts := strings.Split(s, "/")
	if len(parts) < 2 || len(parts) > 3 || slices.Contains(parts, "") {
		return candidate.Platform{}, usage("--platform wants os/architecture[/variant], not %q", s)
	}
	p := candidate.Platform{OS: parts[0], Architecture: parts[1]}
	if len(parts) == 3 {
		p.Variant = &parts[2]
	}
	return p, nil
}

// artifactPort is the port of --artifacts DIR and --offline: the local
// content-addressed directory first, then (unless offline) s3 and ipfs
// through the address-checking resolver, with private-cas objects read
// from the directory.
func artifactPort(dir string, offline bool) verify.ArtifactPort {
	switch {
	case offline && dir == "":
		return nil // every ref unavailable: only embedded bytes are checked
	case offline:
		return verify.Dir(dir)
	case dir == "":
		return &verify.Resolver{}
	}
	return verify.Chain{verify.Dir(dir), &verify.Resolver{PrivateCAS: verify.Dir(dir)}}
}

// readOperational reads FILE (or - for stdin); failing to read is an
// operational error (exit 2), not a rejection.
func readOperational(stdio IO, name string) ([]byte, error) {
	data, err := readInput(stdio, name)
	if err != nil {
		var ee *exitError
		if errors.As(err, &ee) {
			ee.code = ExitUsage
		}
	}
	return data, err
}

// report prints a verification record (canonical JSON with --json, else
// through summary) and maps its verdict to the exit status: 0 when ok, 1
// otherwise.
func report(stdio IO, asJSON bool, rec any, ok bool, summary func()) error {
	if asJSON {
		if err := writeCanonical(stdio, rec); err != nil {
			return err
		}
	} else {
		summary()
	}
	if !ok {
		return refused()
	}
	return nil
}

// writeDocument writes doc's canonical JSON to the file name, which must
// not exist yet (a receipt is never overwritten).
func writeDocument(name string, doc any) error {
	v, err := canonjson.ToValue(doc)
	if err != nil {
		return err
	}
	text, err := canonjson.Canonical(v)
	if err != nil {
		return err
	}
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return err
	}
	if _, err := f.Write(append(text, '\n')); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeCanonical prints a record as canonical JSON and a newline.
func writeCanonical(stdio IO, rec any) error {
	v, err := canonjson.ToValue(rec)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	text, err := canonjson.Canonical(v)
	if err != nil {
		return &exitError{code: ExitUsage, err: err}
	}
	fmt.Fprintf(stdio.Out, "%s\n", text)
	return nil
}

// contextDocument reads the context file of flag and parses it with
// parse; an unreadable or invalid context file is an operational error.
func contextDocument[T any](stdio IO, flag, name string, parse func([]byte) (*T, error)) (*T, error) {
	if name == "" {
		return nil, nil
	}
	data, err := readOperational(stdio, name)
	if err != nil {
		return nil, err
	}
	doc, err := parse(data)
	if err != nil {
		return nil, &exitError{code: ExitUsage, err: fmt.Errorf("--%s %s: %w", flag, name, err)}
	}
	return doc, nil
}

func newCandidateVerifyReceiptCmd(stdio IO) *cobra.Command {
	var asJSON, offline bool
	var artifacts, materialization, bundle, task, dialect string
	cmd := &cobra.Command{
		Use:   "verify-receipt FILE [--materialization FILE] [--bundle FILE] [--task FILE] [--artifacts DIR]",
		Short: "Verify a candidate materialization receipt, run receipt or execution evidence (spec candidate §22.1)",
		Long: `Verify FILE (or - for stdin): an AgentCandidateMaterializationReceipt, an
AgentCandidateRunReceipt or a CandidateExecutionEvidence. Every schema rule,
every self-digest and evidence digest is recomputed, every evidence artifact
must be byte for byte the canonical JSON of its material, and every other
artifact is checked by length then sha256 (refs read from --artifacts, files
named by sha256 hex, and unless --offline from s3/ipfs through a resolver that
refuses private addresses). A run receipt is bound to --materialization; the
frozen limits are checked over its duration, steps and settled usage.
--bundle and --task add the publication rules (bundle digest, profile,
harness, instruction delivery, workspace, container, model, limits, grader).

Verdicts: valid; invalid; limit-exceeded (sound, but over a frozen limit);
invalid-capture (no closed settlement or no complete trace: such a cell is
excluded, never scored or counted as zero spend).

Prints a summary, or with --json the record as canonical JSON.
Exit status: 0 valid, 1 any other verdict, 2 operational or usage error
(unreadable files, a context document that does not verify).`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			d, err := dialectFlag(dialect)
			if err != nil {
				return err
			}
			opts := verify.ReceiptOptions{Artifacts: artifactPort(artifacts, offline)}
			if opts.Materialization, err = contextDocument(stdio, "materialization", materialization, candidate.ParseMaterializationReceipt); err != nil {
				return err
			}
			if opts.Bundle, err = contextDocument(stdio, "bundle", bundle, func(b []byte) (*candidate.Bundle, error) { return candidate.ParseBundle(b, d) }); err != nil {
				return err
			}
			if opts.Task, err = contextDocument(stdio, "task", task, candidate.ParseBenchmarkTask); err != nil {
				return err
			}
			data, err := readOperational(stdio, args[0])
			if err != nil {
				return err
			}
			rec, err := verify.VerifyReceipt(cmd.Context(), data, opts)
			if err != nil {
				return &exitError{code: ExitUsage, err: err}
			}
			return report(stdio, asJSON, rec, rec.Verdict == verify.Valid, func() { writeReceiptRecord(stdio, args[0], rec) })
		},
	}
	cmd.Flags().StringVar(&materialization, "materialization", "", "the materialization receipt a run receipt binds")
	cmd.Flags().StringVar(&bundle, "bundle", "", "the candidate bundle, for the publication rules")
	cmd.Flags().StringVar(&dialect, "dialect", string(candidate.DialectAuto), "the --bundle dialect: auto, seed or ts16")
	cmd.Flags().StringVar(&task, "task", "", "the benchmark task, for the publication rules")
	cmd.Flags().StringVar(&artifacts, "artifacts", "", "a content-addressed artifact directory (files named by sha256 hex)")
	cmd.Flags().BoolVar(&offline, "offline", false, "read artifact refs from --artifacts only, never through the network")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the record as canonical JSON")
	return cmd
}

// writeReceiptRecord prints a receipt verification record for people.
func writeReceiptRecord(stdio IO, what string, rec *verify.ReceiptRecord) {
	w := stdio.Out
	fmt.Fprintf(w, "%s: %s", what, rec.Verdict)
	if rec.ReceiptKind != "" {
		fmt.Fprintf(w, " (%s)", rec.ReceiptKind)
	}
	fmt.Fprintln(w)
	if rec.ReceiptDigest != "" {
		fmt.Fprintf(w, "  receipt digest %s\n", rec.ReceiptDigest)
	}
	fmt.Fprintf(w, "  %d digests, %d artifacts, %d workspace manifests verified\n", len(rec.Evidence), len(rec.Artifacts), len(rec.Workspaces))
	if l := rec.Limits; l != nil {
		switch {
		case len(l.Violations) > 0:
			fmt.Fprintf(w, "  limits exceeded: %s\n", strings.Join(l.Violations, "; "))
		case !l.UsageWithinLimits:
			fmt.Fprintln(w, "  limits: the router reported the usage over the limits")
		default:
			fmt.Fprintln(w, "  within the frozen limits")
		}
	}
	if len(rec.Context) > 0 {
		fmt.Fprintf(w, "  checked against: %s\n", strings.Join(rec.Context, ", "))
	}
	writeIssueLines(w, rec.Issues)
	if len(rec.NotPerformed) > 0 {
		fmt.Fprintf(w, "  not performed: %s\n", strings.Join(rec.NotPerformed, "; "))
	}
	fmt.Fprintf(w, "  record digest %s\n", rec.Digest)
}

// writeIssueLines prints verification issues, one per line.
func writeIssueLines(w io.Writer, issues []verify.Issue) {
	for _, is := range issues {
		path := is.Path
		if path == "" {
			path = "(root)"
		}
		fmt.Fprintf(w, "  %s %s: %s\n", is.Code, path, is.Message)
	}
}

// writeRecord prints a verification record for people.
func writeRecord(stdio IO, what string, rec *verify.Record) {
	w := stdio.Out
	fmt.Fprintf(w, "%s: %s (dialect %s)\n", what, rec.Verdict, rec.Dialect)
	if rec.BundleDigest != "" {
		fmt.Fprintf(w, "  bundle digest %s\n", rec.BundleDigest)
	}
	if rec.CodeKind != "" {
		fmt.Fprintf(w, "  code %s", rec.CodeKind)
		if rec.MaterializedTree != nil {
			fmt.Fprintf(w, ", materialized tree %s", *rec.MaterializedTree)
		}
		fmt.Fprintln(w)
	}
	fmt.Fprintf(w, "  %d artifacts, %d resources, %d workspaces verified\n", len(rec.Artifacts), len(rec.Resources), len(rec.Workspaces))
	for _, ws := range rec.Workspaces {
		fmt.Fprintf(w, "  workspace %s: %d files, archive content %s\n", ws.Path, ws.Files, ws.ArchiveContent)
	}
	if rec.Entrypoint != nil {
		fmt.Fprintf(w, "  entrypoint %s %s\n", rec.Entrypoint.Path, rec.Entrypoint.SHA256)
	}
	if c := rec.Container; c != nil {
		if c.DeferredToTask {
			fmt.Fprintln(w, "  container: evaluator-owned, deferred to the task")
		} else {
			fmt.Fprintf(w, "  container %s index %s manifest %s\n", c.Image, c.IndexDigest, c.ManifestDigest)
		}
	}
	if r := rec.MaterializationReceipt; r != nil {
		fmt.Fprintf(w, "  materialized: receipt %s (plan %s)\n", r.Digest, r.ExecutionPlan.Digest)
	}
	if rec.SupportPolicy != "" {
		fmt.Fprintf(w, "  support policy %s applied\n", rec.SupportPolicy)
	}
	for _, f := range rec.Secrets {
		fmt.Fprintf(w, "  warning: %s looks like a secret (%s); it is not printed\n", f.Path, f.Rule)
	}
	writeIssueLines(w, rec.Issues)
	fmt.Fprintf(w, "  not performed: %s\n", strings.Join(rec.NotPerformed, "; "))
	fmt.Fprintf(w, "  record digest %s\n", rec.Digest)
}
