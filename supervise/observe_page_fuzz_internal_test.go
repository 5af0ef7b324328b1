package supervise

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/tools"
)

// FuzzObservePage drives observe_agent's page arguments (outputPath,
// offset, limit) over a settled result: they are refused only with a
// *tools.ArgumentsError at /outputPath, /offset or /limit, never a
// panic; an accepted page is valid UTF-8, within its limit (or one
// character), and the pages from offset 0 joined in nextOffset order
// are the value exactly.
func FuzzObservePage(f *testing.F) {
	f.Add("", int64(0), int64(0))
	f.Add("/text", int64(3), int64(1))
	f.Add("/output/items/1", int64(0), int64(2))
	f.Add("/output/n~1ote", int64(-1), int64(5))
	f.Add("/te~2xt", int64(0), int64(16001))
	f.Add("text", int64(1<<40), int64(-3))
	f.Add("/output", int64(7), int64(4))
	out, err := canonjson.Decode([]byte(`{"items": ["a", "ü", "𝄞"], "n/ote": "` + strings.Repeat("é✓", 40) + `", "x": null}`))
	if err != nil {
		f.Fatal(err)
	}
	result := resultValue(strings.Repeat("héllo ✓ 𝄞 ", 30), out)
	f.Fuzz(func(t *testing.T, path string, offset, limit int64) {
		a := ObserveArgs{WorkerID: "w", OutputPath: path, Offset: offset, Limit: limit}
		p, err := checkObserveArgs(a)
		var whole string
		if err == nil {
			whole, err = valueAt(result, p.path)
		}
		if err == nil {
			var o Observation
			err = pageOf(&o, whole, p)
			if err == nil {
				if !utf8.ValidString(o.Output) || int64(len(o.Output)) > max(p.limit, 4) || o.OutputBytes == nil {
					t.Fatalf("page %+v for %+v", o, p)
				}
				// The whole value, read from its start.
				var joined strings.Builder
				p.offset = 0
				for range *o.OutputBytes + 2 {
					var pg Observation
					if err := pageOf(&pg, whole, p); err != nil {
						t.Fatalf("page at %d: %v", p.offset, err)
					}
					joined.WriteString(pg.Output)
					if pg.NextOffset == nil {
						break
					}
					if *pg.NextOffset <= p.offset {
						t.Fatalf("nextOffset %d does not advance from %d", *pg.NextOffset, p.offset)
					}
					p.offset = *pg.NextOffset
				}
				if joined.String() != whole || int64(len(whole)) != *o.OutputBytes {
					t.Fatalf("pages joined are %d bytes, the value %d (outputBytes %d)", joined.Len(), len(whole), *o.OutputBytes)
				}
				return
			}
		}
		var ae *tools.ArgumentsError
		if !errors.As(err, &ae) {
			t.Fatalf("%+v: %v is no ArgumentsError", a, err)
		}
		switch ae.Path {
		case "/outputPath", "/offset", "/limit":
		default:
			t.Fatalf("%+v: refused at %q", a, ae.Path)
		}
	})
}
