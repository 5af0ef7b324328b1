package search

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Mode is what an Improve run may do with data beside its scenarios.
type Mode string

// Modes.
const (
	// ModeSearch (the default) searches with the scenarios alone.
	ModeSearch Mode = "search"
	// ModeTraining also hands the method byte-pinned training datasets,
	// to train on through a separate executor (TrainingOptions).
	ModeTraining Mode = "training"
)

// TrainingOptions configure ModeTraining.
type TrainingOptions struct {
	// ExecutionRef names the executor training runs on; it must differ
	// from Options.ExecutionRef, the executor that is measured.
	ExecutionRef string
	// Datasets are the data the method may train on, each pinned by the
	// SHA-256 of its bytes (at least one).
	Datasets []TrainingDataset
}

// TrainingDataset is one training dataset: its bytes (a training dataset
// file, ParseTrainingDataset) and the digest they must have.
type TrainingDataset struct {
	// Name names it for people (a file name).
	Name string
	// SHA256 pins Bytes: "sha256:" and 64 lowercase hex digits.
	SHA256 string
	Bytes  []byte
}

// Example is one training example.
type Example struct {
	Input    string `json:"input"`
	Expected string `json:"expected,omitzero"`
}

// Digest is the example's content identity (ExampleDigest).
func (e Example) Digest() string { return ExampleDigest(e.Input, e.Expected) }

// ExampleDigest is the content identity of an example or a case: the
// digest of its input and expected answer, whatever its id or partition.
// A training receipt lists its examples by it, and a test case whose
// digest appears there was trained on.
func ExampleDigest(input, expected string) string {
	d, _ := canonjson.Digest(canonjson.ObjectValue([]canonjson.Member{
		{Name: "input", Value: canonjson.StringValue(input)},
		{Name: "expected", Value: canonjson.StringValue(expected)},
	}))
	return d
}

// TrainingData is a verified dataset as a method receives it.
type TrainingData struct {
	Name     string
	Digest   string
	Examples []Example
}

// TrainingInput is what a method receives in ModeTraining.
type TrainingInput struct {
	// ExecutionRef is the executor to train on.
	ExecutionRef string
	// Datasets are the verified datasets, in the order given.
	Datasets []TrainingData
}

// TrainingReceipt records what a training consumed: on which executor,
// from which pinned dataset, and every example by ExampleDigest.
type TrainingReceipt struct {
	ExecutionRef string `json:"executionRef"`
	// Dataset is the pinned dataset's digest ("" when the examples came
	// from the train and selection cases).
	Dataset  string   `json:"dataset,omitzero"`
	Examples []string `json:"examples"`
}

// TrainingProvenance is what a ModeTraining result records of training.
type TrainingProvenance struct {
	ExecutionRef string `json:"executionRef"`
	// Receipts are Improve's own (one per dataset handed to the method)
	// followed by those the method reported.
	Receipts []TrainingReceipt `json:"receipts"`
}

// DatasetDigestError refuses a training dataset whose bytes are not the
// ones pinned.
type DatasetDigestError struct {
	// Path is the dataset's option ("/training/datasets/<index>").
	Path, Name string
	Want, Got  string
}

func (e *DatasetDigestError) Error() string {
	return fmt.Sprintf("search: training dataset %s (%s) has digest %s, not the pinned %s: refusing bytes that are not the ones pinned",
		e.Name, e.Path, e.Got, e.Want)
}

// TrainingReceiptError refuses a training receipt a method reported: one
// on another executor than the training one, or from a dataset that was
// not pinned. The final measurement is not run.
type TrainingReceiptError struct {
	// Path is "/trainingReceipts/<index>" of the method's output.
	Path   string
	Reason string
}

func (e *TrainingReceiptError) Error() string {
	return fmt.Sprintf("search: training receipt %s: %s; the final measurement was not run", e.Path, e.Reason)
}

// HeldOutError refuses the final measurement because a test case was
// trained on: its ExampleDigest appears in a training receipt.
type HeldOutError struct {
	// CaseIDs are the test cases trained on, in scenario order.
	CaseIDs []string
	// Dataset is the first offending receipt's dataset digest ("" when
	// the method's receipt named none).
	Dataset string
}

func (e *HeldOutError) Error() string {
	from := "a training receipt"
	if e.Dataset != "" {
		from = "training dataset " + e.Dataset
	}
	return fmt.Sprintf("search: held-out test cases %s appear in %s: the final measurement is refused; remove them from the training data or the test partition",
		strings.Join(e.CaseIDs, ", "), from)
}

// TrainingDatasetKind names the training dataset file in errors.
const TrainingDatasetKind = "ImproveTrainingDataset"

// Limits of a training dataset.
const (
	MaxTrainingDatasetBytes = 64 << 20
	MaxTrainingExamples     = 100000
	MaxTrainingDatasets     = 16
)

// trainingDatasetSchema is the training dataset file:
//
//	{"examples": [{"input": "…", "expected": "…"}, …]}
var trainingDatasetSchema = schema.Object(
	schema.Req("examples", schema.Array(schema.Object(
		schema.Req("input", schema.String(schema.MaxLen(MaxScenarioBytes))),
		schema.Opt("expected", schema.String(schema.MaxLen(MaxScenarioBytes))),
	)).MinItems(1).MaxItems(MaxTrainingExamples)),
)

// ParseTrainingDataset decodes a training dataset file strictly (unknown
// members, duplicate names, wrong types refused); a refusal is a
// *schema.Error whose issues carry JSON pointers.
func ParseTrainingDataset(data []byte) ([]Example, error) {
	if len(data) > MaxTrainingDatasetBytes {
		return nil, &schema.Error{Kind: TrainingDatasetKind, Issues: []schema.Issue{{Code: schema.CodeTooBig,
			Message: fmt.Sprintf("the file is %d bytes; at most %d", len(data), MaxTrainingDatasetBytes)}}}
	}
	f, err := contract.Parse[struct {
		Examples []Example `json:"examples"`
	}](TrainingDatasetKind, trainingDatasetSchema, data)
	if err != nil {
		return nil, err
	}
	return f.Examples, nil
}

// training is a ModeTraining run's verified input and its own receipts.
type training struct {
	input    TrainingInput
	receipts []TrainingReceipt
	digests  []string // the pinned datasets' digests, sorted
}

// checkTraining checks the mode's options and, in ModeTraining, verifies
// every dataset's bytes against its pin and parses it. It returns nil in
// ModeSearch.
func checkTraining(o *Options) (*training, error) {
	bad := func(path, format string, args ...any) error {
		return &OptionsError{Path: path, Reason: fmt.Sprintf(format, args...)}
	}
	switch o.Mode {
	case "":
		o.Mode = ModeSearch
	case ModeSearch, ModeTraining:
	default:
		return nil, bad("/mode", "%q is not search or training", o.Mode)
	}
	t := o.Training
	if o.Mode == ModeSearch {
		if t != nil {
			return nil, bad("/training", "training options need mode training")
		}
		return nil, nil
	}
	switch {
	case t == nil:
		return nil, bad("/training", "mode training needs a training executionRef and pinned datasets")
	case t.ExecutionRef == "":
		return nil, bad("/training/executionRef", "name the executor training runs on")
	case t.ExecutionRef == o.ExecutionRef:
		return nil, bad("/training/executionRef", "%q is the measured executor; training must run on a separate one", t.ExecutionRef)
	case len(t.Datasets) == 0:
		return nil, bad("/training/datasets", "mode training needs at least one pinned dataset")
	case len(t.Datasets) > MaxTrainingDatasets:
		return nil, bad("/training/datasets", "%d datasets is more than %d", len(t.Datasets), MaxTrainingDatasets)
	}
	tr := &training{input: TrainingInput{ExecutionRef: t.ExecutionRef}}
	for i, d := range t.Datasets {
		at := fmt.Sprintf("/training/datasets/%d", i)
		if !canonjson.IsDigest(d.SHA256) {
			return nil, bad(at+"/sha256", "pin the dataset as sha256:<64 lowercase hex>")
		}
		if got := canonjson.DigestBytes(d.Bytes); got != d.SHA256 {
			return nil, &DatasetDigestError{Path: at, Name: d.Name, Want: d.SHA256, Got: got}
		}
		examples, err := ParseTrainingDataset(d.Bytes)
		if err != nil {
			if se := (*schema.Error)(nil); errors.As(err, &se) && len(se.Issues) > 0 {
				return nil, bad(at+"/bytes"+se.Issues[0].Path, "%s", se.Issues[0].Message)
			}
			return nil, bad(at+"/bytes", "%v", err)
		}
		rc := TrainingReceipt{ExecutionRef: t.ExecutionRef, Dataset: d.SHA256, Examples: make([]string, len(examples))}
		for j, e := range examples {
			rc.Examples[j] = e.Digest()
		}
		tr.input.Datasets = append(tr.input.Datasets, TrainingData{Name: d.Name, Digest: d.SHA256, Examples: examples})
		tr.receipts = append(tr.receipts, rc)
		tr.digests = append(tr.digests, d.SHA256)
	}
	slices.Sort(tr.digests)
	return tr, nil
}

// inputCopy is the method's own copy of the training input: what it does
// to it changes neither the receipts nor a later run.
func (t *training) inputCopy() *TrainingInput {
	in := TrainingInput{ExecutionRef: t.input.ExecutionRef, Datasets: make([]TrainingData, len(t.input.Datasets))}
	for i, d := range t.input.Datasets {
		d.Examples = slices.Clone(d.Examples)
		in.Datasets[i] = d
	}
	return &in
}

// recipe is the training part of the recipe identity (nil in ModeSearch).
func (t *training) recipe() *trainingRecipe {
	if t == nil {
		return nil
	}
	return &trainingRecipe{ExecutionRef: t.input.ExecutionRef, Datasets: t.digests}
}

type trainingRecipe struct {
	ExecutionRef string   `json:"executionRef"`
	Datasets     []string `json:"datasets"`
}

// checkReceipts accepts the method's receipts (each on the training
// executor, from a pinned dataset or none) and refuses the final
// measurement when any receipt lists a test case's example digest.
func (t *training) checkReceipts(scs []Scenario, reported []TrainingReceipt) ([]TrainingReceipt, error) {
	all := slices.Clone(t.receipts)
	for i, rc := range reported {
		at := fmt.Sprintf("/trainingReceipts/%d", i)
		switch {
		case rc.ExecutionRef != t.input.ExecutionRef:
			return nil, &TrainingReceiptError{Path: at, Reason: fmt.Sprintf("it ran on %q, not the training executor %q", rc.ExecutionRef, t.input.ExecutionRef)}
		case rc.Dataset != "" && !slices.Contains(t.digests, rc.Dataset):
			return nil, &TrainingReceiptError{Path: at, Reason: fmt.Sprintf("dataset %s was not pinned", rc.Dataset)}
		}
		all = append(all, rc)
	}
	return all, heldOut(scs, all)
}

// heldOut refuses receipts that list a test case's example digest.
func heldOut(scs []Scenario, receipts []TrainingReceipt) error {
	test := map[string][]string{}
	for _, sc := range scs {
		if sc.Partition == Test {
			d := ExampleDigest(sc.Input, sc.Expected)
			test[d] = append(test[d], sc.ID)
		}
	}
	var leak *HeldOutError
	seen := map[string]bool{}
	for _, rc := range receipts {
		for _, d := range rc.Examples {
			ids, ok := test[d]
			if !ok || seen[d] {
				continue
			}
			seen[d] = true
			if leak == nil {
				leak = &HeldOutError{Dataset: rc.Dataset}
			}
			leak.CaseIDs = append(leak.CaseIDs, ids...)
		}
	}
	if leak == nil {
		return nil
	}
	order := map[string]int{}
	for i, sc := range scs {
		order[sc.ID] = i
	}
	slices.SortFunc(leak.CaseIDs, func(a, b string) int { return order[a] - order[b] })
	return leak
}
