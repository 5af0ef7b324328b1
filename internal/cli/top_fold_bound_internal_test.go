package cli

import (
	"fmt"
	"testing"

	"github.com/agentrt/agentrt/supervise"
)

// TestSuperviseFoldKeepsNoRecordsOnceRooted: once the run-started record
// fixed the run's root, top folds each record and keeps none of them (it
// keeps the records before it only to fold them again then), so a long
// run's follow holds its workers and a bounded tail, not its journal.
func TestSuperviseFoldKeepsNoRecordsOnceRooted(t *testing.T) {
	tests := []struct {
		name   string
		before int // records before the run-started one
	}{
		{name: "run-started first", before: 0},
		{name: "spawns before run-started", before: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newSuperviseFold()
			spawn := func(i int) supervise.Record {
				return supervise.Record{Kind: supervise.KindSpawned, Node: supervise.NodeID(fmt.Sprintf("run1:s%d", i+1)), Parent: "run1", Profile: "writer"}
			}
			for i := range tt.before {
				f.apply(spawn(i))
			}
			f.apply(supervise.Record{Kind: supervise.KindRunStarted, RunID: "run1", Task: "t"})
			for i := tt.before; i < tt.before+1000; i++ {
				f.apply(spawn(i))
			}
			if len(f.recs) != 0 {
				t.Errorf("the fold keeps %d records once the root is known, want 0", len(f.recs))
			}
			if len(f.workers) != tt.before+1000 {
				t.Errorf("the fold holds %d workers, want %d", len(f.workers), tt.before+1000)
			}
		})
	}
}
