package cli

import (
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/profile/kb"
	"github.com/agentrt/agentrt/schema"
)

func newProfileCmd(stdio IO) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "profile",
		Short: "Validate, identify, measure and project agent profiles",
	}
	cmd.AddCommand(newProfileValidateCmd(stdio), newProfileDigestCmd(stdio), newProfileMeasureCmd(stdio),
		newProfileProjectCmd(stdio), newProfileKBCmd(stdio))
	return cmd
}

// loadProfile reads and parses FILE, printing a refusal (as JSON when
// asJSON) and returning refused() on invalid input.
func loadProfile(stdio IO, path string, asJSON bool) (*profile.Profile, error) {
	data, err := readInput(stdio, path)
	if err != nil {
		return nil, err
	}
	p, err := profile.Parse(data)
	if err != nil {
		var se *schema.Error
		if !errors.As(err, &se) {
			return nil, err
		}
		if asJSON {
			if err := writeJSON(stdio.Out, map[string]any{"valid": false, "issues": se.Issues}); err != nil {
				return nil, err
			}
		} else {
			writeIssues(stdio.Out, path, se.Issues)
		}
		return nil, refused()
	}
	return p, nil
}

func newProfileValidateCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Check that FILE (or - for stdin) is a valid AgentProfile",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			digest, derr := profile.Digest(p)
			if asJSON {
				out := map[string]any{"valid": true, "issues": []schema.Issue{}, "profileDigest": nil}
				if derr == nil {
					out["profileDigest"] = digest
				} else {
					out["profileDigestError"] = derr.Error()
				}
				return writeJSON(stdio.Out, out)
			}
			fmt.Fprintf(stdio.Out, "%s: valid AgentProfile\n", args[0])
			if derr != nil {
				fmt.Fprintf(stdio.Out, "  no identity: %v\n", derr)
				return nil
			}
			fmt.Fprintf(stdio.Out, "  digest %s\n", digest)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the verdict as JSON")
	return cmd
}

func newProfileDigestCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "digest FILE",
		Short: "Print the identity digest of the AgentProfile in FILE",
		Long: `Print the profile identity: sha256 over the RFC 8785 canonical JSON of the
validated profile, the same digest the reference TypeScript implementation computes.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			canonical, err := profile.Canonical(p)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			digest, err := profile.Digest(p)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				return writeJSON(stdio.Out, map[string]any{"profileDigest": digest, "canonicalBytes": len(canonical)})
			}
			fmt.Fprintln(stdio.Out, digest)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the digest and canonical size as JSON")
	return cmd
}

func newProfileMeasureCmd(stdio IO) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "measure FILE",
		Short: "Measure what the AgentProfile in FILE declares",
		Long: `Measure a profile's declaration: its identity digest and canonical size, the
UTF-8 bytes and logical lines of every prompt text and inline resource, tool and
MCP server declarations, and subagents. Nothing is loaded, resolved or tokenized,
and no prompt or resource text is printed. --json prints exactly the reference's
AgentProfileMeasurements shape.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			m, err := profile.Measure(p)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				return writeJSON(stdio.Out, m)
			}
			printMeasurements(stdio.Out, args[0], p, m)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print AgentProfileMeasurements as JSON")
	return cmd
}

func printMeasurements(w io.Writer, path string, p *profile.Profile, m *profile.Measurements) {
	name := "(unnamed)"
	if p.Name != nil {
		name = *p.Name
	}
	fmt.Fprintf(w, "%s — profile %s\n", path, name)
	fmt.Fprintf(w, "  digest          %s\n", m.ProfileDigest)
	fmt.Fprintf(w, "  canonical size  %d bytes\n", m.CanonicalBytes)
	if p.Harness != "" {
		fmt.Fprintf(w, "  harness         %s\n", p.Harness)
	}
	if p.Model != nil && p.Model.Default != nil {
		fmt.Fprintf(w, "  model           %s\n", *p.Model.Default)
	}
	if len(p.Seats) > 0 {
		fmt.Fprintf(w, "  seats           %d stages\n", len(p.Seats))
	}
	if len(m.Prompt) > 0 {
		fmt.Fprintln(w, "  prompt")
		for _, r := range m.Prompt {
			fmt.Fprintf(w, "    %-32s %6d bytes %5d lines\n", r.Path, r.Bytes, r.Lines)
		}
	}
	fmt.Fprintf(w, "  tools           %d declared, %d enabled, %d disabled\n", m.Tools.Declared, m.Tools.Enabled, m.Tools.Disabled)
	fmt.Fprintf(w, "  mcp servers     %d declared, %d enabled, %d disabled\n", m.MCP.Declared, m.MCP.Enabled, m.MCP.Disabled)
	fmt.Fprintf(w, "  subagents       %d declared\n", m.Subagents.Declared)
	if len(m.Resources) > 0 {
		fmt.Fprintln(w, "  resources")
		for _, r := range m.Resources {
			size := "not resolved"
			if r.Bytes != nil && r.Lines != nil {
				size = fmt.Sprintf("%d bytes %d lines", *r.Bytes, *r.Lines)
			}
			fmt.Fprintf(w, "    %-32s %-7s %s\n", r.Path, r.Kind, size)
		}
	}
	fmt.Fprintf(w, "  not assessed    tokens (%s), materialization (%s), usage (%s)\n",
		m.Coverage.Tokens, m.Coverage.Materialization, m.Coverage.Usage)
}

func newProfileProjectCmd(stdio IO) *cobra.Command {
	var asJSON bool
	var stage int
	cmd := &cobra.Command{
		Use:   "project FILE --stage N",
		Short: "Print the provider-facing profile for seat stage N",
		Long: `Print the profile a provider receives for seat stage N: the authored profile
without seats, with the stage's harness, provider and model, and the stage's
tools and permissions maps (an empty stage map removes the profile's map).
The authored profile keeps its own identity; this prints the effective one.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			if stage < 0 {
				return usage("--stage must be 0 or more")
			}
			proj, err := profile.Project(p, stage)
			if err != nil {
				return usage("%v", err)
			}
			if asJSON {
				return writeJSON(stdio.Out, proj)
			}
			authored, err := profile.Digest(p)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			effective, err := profile.Digest(proj)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(stdio.Out, "stage %d of %s\n  authored digest   %s\n  effective digest  %s\n", stage, args[0], authored, effective)
			if proj.Harness != "" {
				fmt.Fprintf(stdio.Out, "  harness           %s\n", proj.Harness)
			}
			if proj.Model != nil && proj.Model.Default != nil {
				fmt.Fprintf(stdio.Out, "  model             %s\n", *proj.Model.Default)
			}
			fmt.Fprintf(stdio.Out, "  tools             %s\n", describeMap(proj.Tools))
			fmt.Fprintf(stdio.Out, "  permissions       %s\n", describeMap(proj.Permissions))
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the projected AgentProfile as JSON")
	cmd.Flags().IntVar(&stage, "stage", 0, "seat stage to project (0 is the first)")
	return cmd
}

func describeMap[V any](m map[string]V) string {
	if m == nil {
		return "none declared (the harness's built-in exposure is unknown)"
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sortStrings(keys)
	return strings.Join(keys, ", ")
}

func newProfileKBCmd(stdio IO) *cobra.Command {
	var asJSON bool
	var harnessName, model string
	cmd := &cobra.Command{
		Use:   "kb FILE",
		Short: "Compose the knowledge base's harness and model guidance into the profile in FILE",
		Long: `Compose agentrt's dated harness and model guidance into a profile: harness
guidance, then model guidance, then the profile's own text, in appendSystemPrompt
where the harness owns an additive system-prompt control and in instructions
otherwise. Composing again replaces what an earlier composition wrote, so the
result is stable. --harness and --model compose for an executor's override
without changing the profile's own harness. Prints the composed profile (JSON
with --json) and its digest.`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			p, err := loadProfile(stdio, args[0], asJSON)
			if err != nil {
				return err
			}
			out, err := kb.WithProfileKB(p, kb.Selection{Harness: harness.Type(harnessName), Model: model})
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			if asJSON {
				return writeJSON(stdio.Out, out)
			}
			before, err := profile.Digest(p)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			after, err := profile.Digest(out)
			if err != nil {
				return &exitError{code: ExitFailed, err: err}
			}
			fmt.Fprintf(stdio.Out, "%s composed with the knowledge base (checked %s)\n", args[0], kb.CheckedAt)
			fmt.Fprintf(stdio.Out, "  digest before  %s\n  digest after   %s\n", before, after)
			if before == after {
				fmt.Fprintln(stdio.Out, "  no guidance applies to this harness and model")
			}
			if out.Prompt != nil && out.Prompt.AppendSystemPrompt != nil {
				fmt.Fprintf(stdio.Out, "\nappendSystemPrompt:\n%s\n", indentText(*out.Prompt.AppendSystemPrompt))
			}
			if out.Prompt != nil && len(out.Prompt.Instructions) > 0 {
				fmt.Fprintln(stdio.Out, "\ninstructions:")
				for _, line := range out.Prompt.Instructions {
					fmt.Fprintln(stdio.Out, indentText(line))
				}
			}
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the composed AgentProfile as JSON")
	cmd.Flags().StringVar(&harnessName, "harness", "", "compose for this harness instead of the profile's")
	cmd.Flags().StringVar(&model, "model", "", "compose for this model instead of the profile's model.default")
	return cmd
}

func indentText(s string) string { return "  " + strings.ReplaceAll(s, "\n", "\n  ") }

// loadWorkerProfiles loads the worker profiles at paths, keyed by the
// name a manager spawns each by, and those names in the order given. A
// profile without a name, or two with one name, is a usage error.
func loadWorkerProfiles(stdio IO, paths []string, asJSON bool) (map[string]*profile.Profile, []string, error) {
	profiles := map[string]*profile.Profile{}
	var names []string
	for _, path := range paths {
		p, err := loadProfile(stdio, path, asJSON)
		if err != nil {
			return nil, nil, err
		}
		if p.Name == nil || *p.Name == "" {
			return nil, nil, usage("worker profile %s has no name to spawn it by", path)
		}
		if _, dup := profiles[*p.Name]; dup {
			return nil, nil, usage("two worker profiles are named %q", *p.Name)
		}
		profiles[*p.Name] = p
		names = append(names, *p.Name)
	}
	return profiles, names, nil
}
