package supervise

import (
	"context"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// FuzzTraceToolArgs: whatever arguments an analyst's model sends, every
// trace tool answers with a result, a refusal result, or an argument
// error — never a panic — and a search never returns more than its
// bound of matches.
func FuzzTraceToolArgs(f *testing.F) {
	for _, seed := range []string{
		`{}`, `{"traceId":"r:s1"}`, `{"traceId":"r:s1","maxChars":-5}`, `{"traceId":"r:s1","from":0,"to":99}`,
		`{"pattern":"DONE"}`, `{"pattern":"(","traceId":"r:s1"}`, `{"pattern":"a*","limit":1000}`,
		`{"traceId":"r:s1","span":3,"pattern":"."}`, `{"filters":{"state":"done","hasErrors":false},"offset":3,"limit":0}`,
		`{"traceId":"r:s1","from":-1,"to":2}`, `{"pattern":"` + strings.Repeat("x", 300) + `"}`,
	} {
		f.Add([]byte(seed))
	}
	ds := &traceDataset{analysed: "r:s1", traces: []analystTrace{{id: "r:s1", label: "a", profile: "writer", state: StateDone,
		spans: []TraceSpan{{Index: 0, Kind: SpanTask, Text: "write alpha"}, {Index: 1, Kind: SpanTurn, Text: strings.Repeat("alpha: DONE ", 500)},
			{Index: 2, Kind: SpanOutput, Text: "alpha: DONE"}, {Index: 3, Kind: SpanSettlement, Text: "done"}}}}}
	f.Fuzz(func(t *testing.T, data []byte) {
		args, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		b := &analystBudget{maxModelCalls: 1, maxToolCalls: 1 << 30}
		tools, err := traceTools(ToolGroupAll, ds, b)
		if err != nil {
			t.Fatal(err)
		}
		for _, tool := range tools {
			out, err := tool.Run(context.Background(), args)
			if err != nil {
				continue // arguments the tool's schema refuses
			}
			if m, ok := canonjson.Resolve(out, "/matches"); ok && m.Len() > maxMatches {
				t.Fatalf("%s returned %d matches, over %d", tool.Name, m.Len(), maxMatches)
			}
			if v, ok := canonjson.Resolve(out, "/spans"); ok && v.Len() > len(ds.traces[0].spans) {
				t.Fatalf("%s returned %d spans of %d", tool.Name, v.Len(), len(ds.traces[0].spans))
			}
		}
	})
}
