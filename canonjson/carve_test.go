package canonjson_test

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
)

// TestDecodeSharesChunks shows that the arrays and objects of one
// document take their items and members from shared chunks: a hundred
// small objects in an array cost a handful of allocations, not one each.
func TestDecodeSharesChunks(t *testing.T) {
	doc := []byte("[" + strings.Repeat(`{"a":[1],"b":{"c":true}},`, 99) + `{"a":[1],"b":{"c":true}}]`)
	allocs := testing.AllocsPerRun(20, func() {
		if _, err := canonjson.Decode(doc); err != nil {
			t.Fatal(err)
		}
	})
	// 300 objects and arrays; the chunks grow by half, so about ten of
	// each kind, plus the copy of the text and the outer array.
	t.Logf("%v allocations", allocs)
	if allocs > 30 {
		t.Errorf("decoding 300 nested values took %v allocations, want at most 30", allocs)
	}
}

// TestCarvedSlicesStayApart checks that values carved from one chunk
// cannot reach each other: each slice's capacity ends where it ends, so
// appending to one copies it and leaves its neighbours alone.
func TestCarvedSlicesStayApart(t *testing.T) {
	v, err := canonjson.Decode([]byte(`[{"a":1},{"b":2},[3],[4]]`))
	if err != nil {
		t.Fatal(err)
	}
	items := v.Items()
	for i, it := range items {
		var n int
		switch it.Kind() {
		case canonjson.Object:
			n = len(it.Members())
			if c := cap(it.Members()); c != n {
				t.Errorf("item %d: members len %d cap %d", i, n, c)
			}
			_ = append(it.Members(), canonjson.Member{Name: "x", Value: canonjson.NullValue()})
		case canonjson.Array:
			n = len(it.Items())
			if c := cap(it.Items()); c != n {
				t.Errorf("item %d: items len %d cap %d", i, n, c)
			}
			_ = append(it.Items(), canonjson.NullValue())
		}
	}
	if diff := cmp.Diff(`[{"a":1},{"b":2},[3],[4]]`, string(canonjson.Marshal(v))); diff != "" {
		t.Errorf("siblings changed (-want +got):\n%s", diff)
	}
}
