package graph

import (
	"reflect"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
)

// FuzzDecodeGraphTopology: whatever the topology record (KindGraph) of
// a resumed run's journal holds, decoding it is a topology or an error,
// never a panic; a topology it accepts journals back to the same
// topology, and matches itself (a resume with the very graph it names
// is not refused).
func FuzzDecodeGraphTopology(f *testing.F) {
	for _, s := range []string{
		`{"nodes":[{"id":"driver","profile":"sha256:` + zeros + `"},{"id":"coder","profile":"sha256:` + zeros + `"}],"edges":[{"edge":"delegates:driver->coder","directive":"delegate/coder/v1","text":"sha256:` + zeros + `","maxTraversals":4,"continuity":"fresh"}]}`,
		`{"nodes":[],"edges":[]}`,
		`{"nodes":[{"id":"a","profile":"p1"},{"id":"a","profile":"p2"}],"edges":[]}`,
		`{"nodes":null,"edges":null}`, `{"nodes":[{"id":1}]}`, `{"edges":[{"maxTraversals":-1}]}`, `{"edges":[{"maxTraversals":1e300}]}`,
		`{}`, `[]`, `null`, `"graph"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		if err != nil {
			return
		}
		topo, err := decodeTopology(v)
		if err != nil {
			return
		}
		if m := topo.change(topo); m != nil {
			t.Fatalf("an accepted topology %+v does not match itself: %v", topo, m)
		}
		again, err := canonjson.ToValue(topo)
		if err != nil {
			t.Fatalf("an accepted topology %+v does not journal: %v", topo, err)
		}
		back, err := decodeTopology(again)
		if err != nil || !reflect.DeepEqual(back, topo) {
			t.Fatalf("topology %+v journals back as %+v, %v", topo, back, err)
		}
	})
}

const zeros = "0000000000000000000000000000000000000000000000000000000000000000"
