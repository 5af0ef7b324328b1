package cli

import (
	"errors"
	"fmt"
	"sort"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/checkreg"
)

func sortStrings(s []string) { sort.Strings(s) }

func newCheckCmd(stdio IO) *cobra.Command {
	var kind, function string
	var listKinds bool
	cmd := &cobra.Command{
		Use:   "check (--kind KIND | --function NAME) [FILE|-] | --kinds",
		Short: "Validate any contract document and print its verdict, canonical form and digest as JSON",
		Long: `Validate FILE (or standard input) as the contract kind KIND and print
{"valid","issues":[{"path","code","message"}],"canonical","digest",…} as JSON.
AgentProfile adds "profileDigest" (or "profileDigestError").
Exit status: 0 valid, 1 refused, 2 unknown kind or usage error.

With --function NAME, FILE holds a JSON array of arguments and the result is
printed as {"result": …}. --kinds lists the kinds and functions agentrt checks.`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			reg := checkreg.New()
			if listKinds {
				return writeJSON(stdio.Out, map[string]any{"kinds": reg.Kinds(), "functions": reg.Functions()})
			}
			if (kind == "") == (function == "") {
				return usage("give exactly one of --kind and --function (or --kinds)")
			}
			if kind != "" && !reg.HasKind(kind) {
				return usage("unknown kind %q; agentrt check --kinds lists the kinds", kind)
			}
			if function != "" && !reg.HasFunction(function) {
				return usage("unknown function %q; agentrt check --kinds lists the functions", function)
			}
			path := "-"
			if len(args) == 1 {
				path = args[0]
			}
			data, err := readInput(stdio, path)
			if err != nil {
				return err
			}
			if function != "" {
				result, err := reg.Call(function, data)
				if errors.Is(err, checkreg.ErrUnknown) {
					return usage("%v; agentrt check --kinds lists the functions", err)
				}
				if err != nil {
					return usage("%s: %v", function, err)
				}
				return writeJSON(stdio.Out, canonjson.ObjectValue([]canonjson.Member{{Name: "result", Value: result}}))
			}
			res, err := reg.Check(kind, data)
			if errors.Is(err, checkreg.ErrUnknown) {
				return usage("%v; agentrt check --kinds lists the kinds", err)
			}
			if err != nil {
				return &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", path, err)}
			}
			if err := writeJSON(stdio.Out, res.Value()); err != nil {
				return err
			}
			if !res.Valid {
				return refused()
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&kind, "kind", "", "contract kind, such as AgentProfile")
	cmd.Flags().StringVar(&function, "function", "", "contract function, such as harnessSupportsModel")
	cmd.Flags().BoolVar(&listKinds, "kinds", false, "list the kinds and functions")
	return cmd
}
