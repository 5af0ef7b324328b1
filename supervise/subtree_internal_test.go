package supervise

import (
	"strings"
	"testing"
)

// inSubtreeOf answers as the scan it replaced did: a node is in a
// subtree when it is its root or its id extends the root's with ":".
func TestInSubtreeOf(t *testing.T) {
	roots := map[NodeID]bool{"run1:s1": true, "run1:s7:s2": true}
	naive := func(id NodeID) bool {
		for r := range roots {
			if id == r || strings.HasPrefix(string(id), string(r)+":") {
				return true
			}
		}
		return false
	}
	for _, id := range []NodeID{"run1:s1", "run1:s1:s3", "run1:s1:s3:s4", "run1:s10", "run1:s10:s1", "run1", "run1:s7",
		"run1:s7:s2", "run1:s7:s2:s9", "run1:s7:s20", "", ":", "run1:s1:", "run1::s1", "x"} {
		if got, want := inSubtreeOf(id, roots), naive(id); got != want {
			t.Errorf("inSubtreeOf(%q) = %v, want %v", id, got, want)
		}
	}
	if inSubtreeOf("run1:s1", nil) {
		t.Error("inSubtreeOf of no roots is true")
	}
}
