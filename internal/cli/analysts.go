package cli

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// readAnalysts reads the --analysts file: a JSON array of analyst lens
// definitions (supervise.DecodeLenses), offered beside the built-in
// lenses. An empty path is no file.
func readAnalysts(stdio IO, path string) ([]supervise.Lens, error) {
	if path == "" {
		return nil, nil
	}
	data, err := readInput(stdio, path)
	if err != nil {
		return nil, err
	}
	lenses, err := supervise.DecodeLenses(data)
	if err != nil {
		return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w (a JSON array of lens definitions: id, description, area, question, instructions, toolGroup)", path, err)}
	}
	return lenses, nil
}

// analystsFlagUsage is the --analysts flag's help.
const analystsFlagUsage = "JSON array of analyst lens definitions offered beside the built-in lenses (failure-triage, claims-check)"

// analystModelFlags run analysts in process (supervise.Options
// .AnalystModel): a tool loop on a model with the lens's trace tools
// mounted, instead of a worker on the provider with no tools.
type analystModelFlags struct {
	model, script string
}

func (a *analystModelFlags) register(cmd *cobra.Command) {
	f := cmd.Flags()
	f.StringVar(&a.model, "analyst-model", "", "run analysts in process as tool loops on this model, with their lens's trace tools (on the --provider openai or anthropic endpoint, as the manager's model; with --provider scripted, see --analyst-script)")
	f.StringVar(&a.script, "analyst-script", "", "script of the analysts' scripted model, in --manager-script's form; a call names a trace tool as \"tool\" (getDatasetOverview, queryTraces, countTraces, viewTrace, viewSpans, searchTrace, searchSpan); implies --analyst-model with --provider scripted")
}

// open returns the analysts' model, or nil when the flags ask for none
// (analysts then run on the executor).
func (a analystModelFlags) open(providerName, baseURL, openaiAPI string) (contract.ChatModel, error) {
	switch {
	case a.model == "" && a.script == "":
		return nil, nil
	case providerName == "scripted":
		if a.script == "" {
			return nil, usage("--analyst-model with --provider scripted needs --analyst-script FILE, the analysts' turns")
		}
		data, err := readFile(a.script)
		if err != nil {
			return nil, err
		}
		script, err := parseManagerScript(data)
		if err != nil {
			return nil, &exitError{code: ExitFailed, err: fmt.Errorf("%s: %w", a.script, err)}
		}
		return scripted.NewChatModel(script), nil
	case a.script != "":
		return nil, usage("--analyst-script applies to --provider scripted only")
	case providerName == "openai" || providerName == "anthropic":
		return endpointModel(providerName, a.model, baseURL, openaiAPI)
	}
	return nil, usage("--analyst-model needs a model endpoint: --provider openai, anthropic or scripted (not %s)", providerName)
}
