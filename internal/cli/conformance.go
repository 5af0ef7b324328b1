package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"
	"golang.org/x/mod/modfile"

	"github.com/agentrt/agentrt/conformance"
)

func newConformanceCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "conformance",
		Short: "Emit and verify the release conformance manifest (what a module archive's own tests proved)",
	}
	cmd.AddCommand(newConformanceArchiveCmd(stdio), newConformanceEmitCmd(stdio), newConformanceVerifyCmd(stdio))
	return cmd
}

func newConformanceArchiveCmd(stdio IO) *cobra.Command {
	var root, version, revision, out string
	cmd := &cobra.Command{
		Use:   "archive --version V --out A",
		Short: "Write the module zip of a commit, as `go mod download` would serve it",
		Long: `Write the module zip of REVISION (default HEAD) of the git repository at
--source-root for the module its go.mod declares, as version V: the archive a
conformance manifest speaks for. Exit status: 0 written, 1 failed, 2 usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if version == "" || out == "" {
				return usage("--version and --out are required")
			}
			gomod, err := readInput(stdio, filepath.Join(root, "go.mod"))
			if err != nil {
				return err
			}
			abs, err := filepath.Abs(root)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			var buf bytes.Buffer
			if err := conformance.CreateArchive(cmd.Context(), &buf, abs, modfile.ModulePath(gomod), version, revision); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if err := os.WriteFile(out, buf.Bytes(), 0o644); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(stdio.Out, "%s %s\n", conformance.BytesHash(buf.Bytes()), out)
			return nil
		},
	}
	cmd.Flags().StringVar(&root, "source-root", ".", "module root and git worktree")
	cmd.Flags().StringVar(&version, "version", "", "module version the archive is built as (required)")
	cmd.Flags().StringVar(&revision, "revision", "HEAD", "git revision to archive")
	cmd.Flags().StringVar(&out, "out", "", "archive file to write (required)")
	return cmd
}

func newConformanceEmitCmd(stdio IO) *cobra.Command {
	var (
		archive, cohortReport, out, caps, root, version, commit, pins, sandboxRange string
		sandboxVersions                                                             []string
		skipTests                                                                   bool
	)
	cmd := &cobra.Command{
		Use:   "emit --archive A --cohort-report C --out M",
		Short: "Run the tests capabilities.json names and write the content-addressed manifest",
		Long: `Run, once with go test -json, every test case that conformance/capabilities.json
names as evidence, resolve each capability (supported only when every declared
case passed; unsupported when one failed; otherwise unproven) and write the
manifest for archive A and cohort report C to M. Failing tests are evidence,
not an error. The cohort report is checked against release/cohort.json when
that file exists. Prints the digest, the per-status counts and one line per
capability. Exit status: 0 written, 1 refused or failed, 2 usage.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if archive == "" || cohortReport == "" || out == "" {
				return usage("--archive, --cohort-report and --out are required")
			}
			o := conformance.EmitOptions{SourceRoot: root, Capabilities: caps, Version: version, SourceCommit: commit,
				Sandbox: conformance.SandboxVersions{PeerRange: sandboxRange, Verified: sandboxVersions}, SkipTests: skipTests, Log: stdio.Err}
			var err error
			if o.Archive, err = readInput(stdio, archive); err != nil {
				return err
			}
			if o.CohortReport, err = readInput(stdio, cohortReport); err != nil {
				return err
			}
			if pins == "" {
				if p := filepath.Join(root, "release", "cohort.json"); fileExists(p) {
					pins = p
				}
			}
			if pins != "" {
				if o.CohortPins, err = readInput(stdio, pins); err != nil {
					return err
				}
			}
			m, err := conformance.Emit(cmd.Context(), o)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			data, err := m.Encode()
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if err := os.WriteFile(out, data, 0o644); err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(stdio.Out, "digest %s\n%s\n", m.Digest, countsLine(m.Counts()))
			keys := make([]string, 0, len(m.Capabilities))
			for k := range m.Capabilities {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			for _, k := range keys {
				c := m.Capabilities[k]
				fmt.Fprintf(stdio.Out, "  %-11s %s (%s)\n", c.Status, k, c.Scenario)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&archive, "archive", "", "module zip the manifest speaks for (required)")
	f.StringVar(&cohortReport, "cohort-report", "", "cohort report of the external-consumer resolution (required)")
	f.StringVar(&out, "out", "", "manifest file to write (required)")
	f.StringVar(&caps, "capabilities", "", "capability map (default SOURCE-ROOT/conformance/capabilities.json)")
	f.StringVar(&root, "source-root", ".", "module root holding go.mod and the evidence files")
	f.StringVar(&version, "version", "", "release version the archive must hold (default: the archive's)")
	f.StringVar(&commit, "source-commit", "", "full source commit (default: git HEAD of the source root)")
	f.StringVar(&pins, "cohort-pins", "", "release cohort pins (default SOURCE-ROOT/release/cohort.json when present)")
	f.StringVar(&sandboxRange, "sandbox-range", "", "execution backend range the module declares")
	f.StringArrayVar(&sandboxVersions, "sandbox-version", nil, "exact backend version a consumer was verified against (repeatable)")
	f.BoolVar(&skipTests, "skip-tests", false, "dry run: record every case as missing without running tests")
	return cmd
}

func newConformanceVerifyCmd(stdio IO) *cobra.Command {
	var (
		archive, cohortReport, root string
		require                     []string
	)
	cmd := &cobra.Command{
		Use:   "verify MANIFEST",
		Short: "Recompute every check of a conformance manifest; fail closed on --require",
		Long: `Recompute every check of MANIFEST: its schema, its digest, each capability's
result digest and status, and, when given, the archive's sha256 and module
identity, the cohort report, and the bytes of each evidence file under
--source-root. --require KEY (repeatable) fails unless KEY is supported. Each
problem is printed as a GitHub ::error:: line. A missing or unproven
capability fails only when required. Exit status: 0 verified, 1 a problem,
2 usage.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			data, err := readInput(stdio, args[0])
			if err != nil {
				return err
			}
			o := conformance.VerifyOptions{SourceRoot: root, Require: require}
			if archive != "" {
				if o.Archive, err = readInput(stdio, archive); err != nil {
					return err
				}
			}
			if cohortReport != "" {
				if o.CohortReport, err = readInput(stdio, cohortReport); err != nil {
					return err
				}
			}
			r := conformance.Verify(data, o)
			if !r.OK() {
				for _, p := range r.Problems {
					fmt.Fprintf(stdio.Out, "::error::%s\n", p.Error())
				}
				return refused()
			}
			fmt.Fprintf(stdio.Out, "verified %s\n%s\n", r.Digest, countsLine(r.Counts))
			return nil
		},
	}
	f := cmd.Flags()
	f.StringVar(&archive, "archive", "", "module zip whose sha256 and identity must match")
	f.StringVar(&cohortReport, "cohort-report", "", "cohort report that must equal the recorded cohort")
	f.StringVar(&root, "source-root", "", "directory whose evidence files must hash as recorded")
	f.StringArrayVar(&require, "require", nil, "capability that must be supported (repeatable)")
	return cmd
}

func countsLine(n map[conformance.Status]int) string {
	var b bytes.Buffer
	for i, s := range conformance.Statuses {
		if i > 0 {
			b.WriteByte(' ')
		}
		fmt.Fprintf(&b, "%s=%d", s, n[s])
	}
	return b.String()
}

func fileExists(name string) bool {
	_, err := os.Stat(name)
	return !errors.Is(err, os.ErrNotExist)
}
