package search_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/improve/search"
	"github.com/agentrt/agentrt/schema"
)

// dataset makes a training dataset file of examples, pinned to its bytes.
func dataset(name string, examples ...search.Example) search.TrainingDataset {
	var b strings.Builder
	b.WriteString(`{"examples":[`)
	for i, e := range examples {
		if i > 0 {
			b.WriteByte(',')
		}
		v, err := canonjson.ToValue(e)
		if err != nil {
			panic(err)
		}
		b.Write(canonjson.Marshal(v))
	}
	b.WriteString(`]}`)
	data := []byte(b.String())
	return search.TrainingDataset{Name: name, SHA256: canonjson.DigestBytes(data), Bytes: data}
}

// cleanExamples are training examples that are no test case.
func cleanExamples() []search.Example {
	return []search.Example{{Input: "good morning", Expected: "GOOD MORNING"}, {Input: "see you", Expected: "SEE YOU"}}
}

// trainingOptions are the fixture's options in training mode.
func trainingOptions(t testing.TB, datasets ...search.TrainingDataset) (search.Options, *countingAgent) {
	o, agent := options(t, ptr(0.001))
	o.Mode = search.ModeTraining
	o.Training = &search.TrainingOptions{ExecutionRef: "scripted:trainer", Datasets: datasets}
	return o, agent
}

// receiptMethod wraps a method, recording its training input and adding
// receipts to its output.
type receiptMethod struct {
	inner    search.Method
	receipts []search.TrainingReceipt
	got      *search.TrainingInput
}

func (m *receiptMethod) Identity() search.MethodIdentity { return m.inner.Identity() }

func (m *receiptMethod) Search(ctx context.Context, in search.MethodInput) (search.MethodOutput, error) {
	m.got = in.Training
	out, err := m.inner.Search(ctx, in)
	out.TrainingReceipts = append(out.TrainingReceipts, m.receipts...)
	return out, err
}

// TestTrainingModeShips (§3.9 training): pinned datasets reach the method
// verified and parsed, training has its own executor, the result records
// the mode and a receipt per dataset, and the training recipe is another
// identity than the search one.
func TestTrainingModeShips(t *testing.T) {
	ds := dataset("greetings.json", cleanExamples()...)
	o, _ := trainingOptions(t, ds)
	m := &receiptMethod{inner: o.Method, receipts: []search.TrainingReceipt{
		{ExecutionRef: "scripted:trainer", Examples: []string{search.ExampleDigest("hello t1", "HELLO T1")}},
	}}
	o.Method = m
	res, err := search.Improve(context.Background(), baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if res.Decision != search.Ship || len(res.Test) != 6 {
		t.Errorf("decision %s %v, %d test cases", res.Decision, res.Reasons, len(res.Test))
	}
	if m.got == nil || m.got.ExecutionRef != "scripted:trainer" || len(m.got.Datasets) != 1 ||
		m.got.Datasets[0].Digest != ds.SHA256 || len(m.got.Datasets[0].Examples) != 2 {
		t.Fatalf("the method got training input %+v", m.got)
	}
	p := res.Provenance
	if p.Mode != search.ModeTraining || p.Training == nil || p.Training.ExecutionRef != "scripted:trainer" || len(p.Training.Receipts) != 2 ||
		p.Training.Receipts[0].Dataset != ds.SHA256 || len(p.Training.Receipts[0].Examples) != 2 {
		t.Errorf("provenance %+v training %+v", p, p.Training)
	}
	search1, _ := options(t, ptr(0.001))
	a, err := search.RecipeDigest(baseProfile(), search1)
	if err != nil {
		t.Fatal(err)
	}
	b, err := search.RecipeDigest(baseProfile(), o)
	if err != nil {
		t.Fatal(err)
	}
	if a == b || b != p.RecipeDigest {
		t.Errorf("training recipe %s, search recipe %s, result %s", b, a, p.RecipeDigest)
	}
}

// TestTrainingModeRefusals (§3.9 training): each training rule refuses
// with its own typed error before the final measurement: bytes that are
// not the pinned ones, the measured executor reused for training, a
// held-out test case in a pinned dataset or in a method's receipt, and a
// receipt from another executor or an unpinned dataset.
func TestTrainingModeRefusals(t *testing.T) {
	ctx := context.Background()
	leaked := search.Example{Input: "hello x3", Expected: "HELLO X3"} // test case x3
	type check func(t *testing.T, err error)
	optionsAt := func(path string) check {
		return func(t *testing.T, err error) {
			var oe *search.OptionsError
			if !errors.As(err, &oe) || !strings.HasPrefix(oe.Path, path) {
				t.Fatalf("got %v, want an *OptionsError at %s", err, path)
			}
		}
	}
	tests := []struct {
		name     string
		set      func(o *search.Options, m *receiptMethod)
		check    check
		searched bool // the search ran (and so measured cases) before the refusal
	}{
		{"bytes not the pinned ones", func(o *search.Options, _ *receiptMethod) {
			ds := dataset("d.json", cleanExamples()...)
			ds.Bytes = append([]byte(nil), ds.Bytes...)
			ds.Bytes[len(ds.Bytes)-3] = ' ' // same shape, other bytes
			o.Training.Datasets = []search.TrainingDataset{ds}
		}, func(t *testing.T, err error) {
			var de *search.DatasetDigestError
			if !errors.As(err, &de) || de.Path != "/training/datasets/0" || de.Want == de.Got {
				t.Fatalf("got %v, want a *DatasetDigestError", err)
			}
		}, false},
		{"pin not a digest", func(o *search.Options, _ *receiptMethod) {
			o.Training.Datasets[0].SHA256 = "abc"
		}, optionsAt("/training/datasets/0/sha256"), false},
		{"malformed dataset", func(o *search.Options, _ *receiptMethod) {
			data := []byte(`{"examples":[{"input":1}]}`)
			o.Training.Datasets = []search.TrainingDataset{{Name: "bad.json", SHA256: canonjson.DigestBytes(data), Bytes: data}}
		}, optionsAt("/training/datasets/0/bytes/examples/0/input"), false},
		{"training on the measured executor", func(o *search.Options, _ *receiptMethod) {
			o.Training.ExecutionRef = o.ExecutionRef
		}, optionsAt("/training/executionRef"), false},
		{"no training executor", func(o *search.Options, _ *receiptMethod) {
			o.Training.ExecutionRef = ""
		}, optionsAt("/training/executionRef"), false},
		{"no datasets", func(o *search.Options, _ *receiptMethod) {
			o.Training.Datasets = nil
		}, optionsAt("/training/datasets"), false},
		{"training options without the mode", func(o *search.Options, _ *receiptMethod) {
			o.Mode = ""
		}, optionsAt("/training"), false},
		{"unknown mode", func(o *search.Options, _ *receiptMethod) {
			o.Mode = "fine-tune"
		}, optionsAt("/mode"), false},
		{"held-out case in a pinned dataset", func(o *search.Options, _ *receiptMethod) {
			o.Training.Datasets = []search.TrainingDataset{dataset("d.json", append(cleanExamples(), leaked)...)}
		}, func(t *testing.T, err error) {
			var he *search.HeldOutError
			if !errors.As(err, &he) || fmt.Sprint(he.CaseIDs) != "[x3]" || he.Dataset == "" {
				t.Fatalf("got %v, want a *HeldOutError for x3", err)
			}
		}, false},
		{"held-out case in the method's receipt", func(_ *search.Options, m *receiptMethod) {
			m.receipts = []search.TrainingReceipt{{ExecutionRef: "scripted:trainer",
				Examples: []string{search.ExampleDigest("hello t1", "HELLO T1"), leaked.Digest(), search.ExampleDigest("hello x1", "HELLO X1")}}}
		}, func(t *testing.T, err error) {
			var he *search.HeldOutError
			if !errors.As(err, &he) || fmt.Sprint(he.CaseIDs) != "[x1 x3]" {
				t.Fatalf("got %v, want a *HeldOutError for x1 and x3", err)
			}
		}, true},
		{"receipt from the measured executor", func(o *search.Options, m *receiptMethod) {
			m.receipts = []search.TrainingReceipt{{ExecutionRef: o.ExecutionRef, Examples: []string{}}}
		}, func(t *testing.T, err error) {
			var re *search.TrainingReceiptError
			if !errors.As(err, &re) || re.Path != "/trainingReceipts/0" {
				t.Fatalf("got %v, want a *TrainingReceiptError", err)
			}
		}, true},
		{"receipt from an unpinned dataset", func(_ *search.Options, m *receiptMethod) {
			m.receipts = []search.TrainingReceipt{{ExecutionRef: "scripted:trainer", Dataset: canonjson.DigestBytes([]byte("other")), Examples: []string{}}}
		}, func(t *testing.T, err error) {
			var re *search.TrainingReceiptError
			if !errors.As(err, &re) || !strings.Contains(re.Reason, "not pinned") {
				t.Fatalf("got %v, want a *TrainingReceiptError", err)
			}
		}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, _ := trainingOptions(t, dataset("d.json", cleanExamples()...))
			agent := &partitionAgent{inner: o.Agent}
			o.Agent = agent
			m := &receiptMethod{inner: o.Method}
			o.Method = m
			tt.set(&o, m)
			res, err := search.Improve(ctx, baseProfile(), o)
			tt.check(t, err)
			if agent.ran[search.Test] != 0 || len(res.Test) != 0 || res.Decision == search.Ship {
				t.Errorf("the final measurement ran: %d test runs, result %+v", agent.ran[search.Test], res.Test)
			}
			if searched := agent.ran[search.Train]+agent.ran[search.Selection] > 0; searched != tt.searched {
				t.Errorf("searched %v, want %v", searched, tt.searched)
			}
		})
	}
}

// TestParseTrainingDataset: the training dataset file is strict.
func TestParseTrainingDataset(t *testing.T) {
	tests := []struct {
		name, in string
		want     int    // examples; -1 refused
		path     string // the refusal's first issue path
	}{
		{"two examples", `{"examples":[{"input":"a","expected":"A"},{"input":"b"}]}`, 2, ""},
		{"unknown member", `{"examples":[{"input":"a","label":"A"}]}`, -1, "/examples/0"},
		{"no examples", `{"examples":[]}`, -1, "/examples"},
		{"duplicate member", `{"examples":[{"input":"a","input":"b"}]}`, -1, ""},
		{"not json", `examples`, -1, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := search.ParseTrainingDataset([]byte(tt.in))
			if tt.want >= 0 {
				if err != nil || len(got) != tt.want {
					t.Fatalf("got %v, %v", got, err)
				}
				return
			}
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("got %v, want a *schema.Error", err)
			}
			if tt.path != "" && se.Issues[0].Path != tt.path {
				t.Errorf("issue at %q, want %q", se.Issues[0].Path, tt.path)
			}
		})
	}
}

// FuzzParseTrainingDataset: any bytes decode to examples or a
// *schema.Error, never a panic.
func FuzzParseTrainingDataset(f *testing.F) {
	for _, s := range []string{`{"examples":[{"input":"a","expected":"A"}]}`, `{"examples":[{"input":"a","x":1}]}`,
		`{"examples":[]}`, `{"examples":[{"input":"\ud800"}]}`, `[]`, "\xff", `{"examples":[{"input":"a","input":"b"}]}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := search.ParseTrainingDataset(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(got) == 0 || len(got) > search.MaxTrainingExamples {
			t.Fatalf("accepted %d examples", len(got))
		}
	})
}
