package graph

import (
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// FuzzDecodeJournaledRow: whatever an edge record of a resumed run's
// journal holds, decoding it is a row or an error, never a panic, and a
// row it accepts journals back to the same row.
func FuzzDecodeJournaledRow(f *testing.F) {
	for _, s := range []string{
		`{"edge":"delegates:driver->coder","kind":"delegates","from":"driver","to":"coder","directive":"delegate/coder/v1","continuity":"fresh","outcome":"propagated","workerId":"g:s1","traversal":1,"charged":true}`,
		`{"edge":"analyzes:critic:coder->driver","kind":"analyzes","outcome":"unpropagated","reason":"cap","traversal":33}`,
		`{"edge":"x","traversal":-1}`, `{"edge":1}`, `{}`, `[]`, `null`, `"row"`, `{"charged":"yes"}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		jr, err := decodeJournaledRow(v)
		if err != nil {
			return
		}
		again, err := canonjson.ToValue(jr)
		if err != nil {
			t.Fatalf("an accepted row %+v does not journal: %v", jr, err)
		}
		back, err := decodeJournaledRow(again)
		if err != nil || !reflect.DeepEqual(back, jr) {
			t.Fatalf("row %+v journals back as %+v, %v", jr, back, err)
		}
	})
}
