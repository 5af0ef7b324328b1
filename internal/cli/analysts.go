package cli

import (
	"fmt"

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
