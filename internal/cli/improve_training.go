package cli

import (
	"context"
	"fmt"
	"io"
	"strings"
	"unicode"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
)

// improveTraining turns --mode, --training-dataset and
// --training-execution-ref into Improve's mode and training options,
// reading each dataset file (search.Improve checks it against its pin).
func improveTraining(stdio IO, f *improveSearchFlags) (search.Mode, *search.TrainingOptions, error) {
	mode := search.Mode(f.mode)
	if mode != search.ModeTraining {
		if len(f.trainingDatasets) > 0 || f.trainingExecutionRef != "" {
			return "", nil, usage("--training-dataset and --training-execution-ref need --mode training")
		}
		return mode, nil, nil
	}
	if len(f.trainingDatasets) == 0 || f.trainingExecutionRef == "" {
		return "", nil, usage("--mode training needs --training-dataset FILE@sha256:HEX and --training-execution-ref REF")
	}
	t := &search.TrainingOptions{ExecutionRef: f.trainingExecutionRef}
	for _, arg := range f.trainingDatasets {
		file, pin, ok := splitPin(arg)
		if !ok {
			return "", nil, usage("--training-dataset %s: give FILE@sha256:HEX (HEX is the file's 64 hex digit sha256sum)", arg)
		}
		data, err := readInput(stdio, file)
		if err != nil {
			return "", nil, err
		}
		t.Datasets = append(t.Datasets, search.TrainingDataset{Name: file, SHA256: pin, Bytes: data})
	}
	return mode, t, nil
}

// maxSharedOutput bounds an output --share-outputs shows the method.
const maxSharedOutput = 4 << 10

// shareOutputs is --share-outputs' DescribeArtifact: the output text, cut
// at a space before maxSharedOutput bytes so that no word (and so no
// secret the scrubber would recognise whole) is cut in two. Improve
// scrubs what it returns.
func shareOutputs(on bool) func(context.Context, search.Artifact) (string, error) {
	if !on {
		return nil
	}
	return func(_ context.Context, a search.Artifact) (string, error) {
		return cutAtSpace(a.Output.Text, maxSharedOutput), nil
	}
}

// cutAtSpace returns s, or its longest prefix of at most n bytes that
// ends before a space, with " …" to say it was cut.
func cutAtSpace(s string, n int) string {
	if len(s) <= n {
		return s
	}
	i := strings.LastIndexFunc(s[:n+1], unicode.IsSpace)
	if i <= 0 {
		return "…"
	}
	return strings.TrimRightFunc(s[:i], unicode.IsSpace) + " …"
}

// splitPin splits FILE@sha256:HEX at its last "@sha256:"; the pin is
// returned as a digest ("sha256:" and lowercase hex).
func splitPin(arg string) (file, pin string, ok bool) {
	i := strings.LastIndex(arg, "@sha256:")
	if i <= 0 {
		return "", "", false
	}
	file, pin = arg[:i], strings.ToLower(arg[i+1:])
	return file, pin, canonjson.IsDigest(pin)
}

// improveOptionHint names the flag behind a refused option.
func improveOptionHint(oe *search.OptionsError) error {
	flag := ""
	switch p := oe.Path; {
	case p == "/training/executionRef":
		flag = "--training-execution-ref"
	case strings.HasPrefix(p, "/training/datasets/"):
		var n int
		if _, err := fmt.Sscanf(strings.TrimPrefix(p, "/training/datasets/"), "%d", &n); err == nil {
			flag = fmt.Sprintf("--training-dataset #%d", n+1)
		} else {
			flag = "--training-dataset"
		}
	case p == "/training/datasets":
		flag = "--training-dataset"
	case p == "/mode" || p == "/training":
		flag = "--mode"
	case p == "/resume":
		flag = "--resume"
	}
	if flag == "" {
		return oe
	}
	return fmt.Errorf("%w (%s)", oe, flag)
}

// printImproveProvenance prints what came of the run dir and, in
// training mode, of training.
func printImproveProvenance(w io.Writer, p search.Provenance) {
	if p.RunDir != "" {
		fmt.Fprintf(w, "resume    %s (%s) in %s", p.ResumeStatus, p.Resume, p.RunDir)
		if p.Superseded != "" {
			fmt.Fprintf(w, "; the journal of another recipe was kept at %s", p.Superseded)
		}
		fmt.Fprintln(w)
	}
	if t := p.Training; t != nil {
		examples := 0
		for _, r := range t.Receipts {
			examples += len(r.Examples)
		}
		fmt.Fprintf(w, "training  on %s: %d receipts, %d examples, no held-out case among them\n", t.ExecutionRef, len(t.Receipts), examples)
	}
}
