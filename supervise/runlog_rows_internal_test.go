package supervise

import (
	"fmt"
	"testing"
)

// TestRecordRowsPageAcrossChunks: the in-memory journal that
// read_journal pages through keeps every record in order across the
// chunks it is stored in, and page's since, kinds and limit work across
// a chunk boundary.
func TestRecordRowsPageAcrossChunks(t *testing.T) {
	l := &runLog{}
	n := 2*rowChunk + rowChunk/2
	node := func(i int) NodeID { return NodeID(fmt.Sprintf("r:s%d", i)) }
	for i := range n {
		kind := KindSpawned
		if i%2 == 1 {
			kind = KindSettled
		}
		l.rows.add(Record{Kind: kind, Node: node(i)})
	}
	var got []Record
	for since, more := 0, true; more; {
		var page []Record
		page, since, more, _ = l.page(since, nil, 100, 0)
		got = append(got, page...)
	}
	if len(got) != n {
		t.Fatalf("paged %d records, want %d", len(got), n)
	}
	for i, r := range got {
		if r.Node != node(i) {
			t.Fatalf("record %d is %s, want %s", i, r.Node, node(i))
		}
	}
	// Three settlements from just before the first boundary on.
	page, next, more, _ := l.page(rowChunk-3, []string{KindSettled}, 3, 0)
	if len(page) != 3 || page[0].Node != node(rowChunk-3) || page[2].Node != node(rowChunk+1) || next != rowChunk+2 || !more {
		t.Fatalf("page from %d: %v, next %d, more %v", rowChunk-3, page, next, more)
	}
	if page, next, more, _ := l.page(n, nil, 10, 0); len(page) != 0 || next != n || more {
		t.Fatalf("page past the end: %v, next %d, more %v", page, next, more)
	}
}
