package cli

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// A resumed run's progress says what it replays from the journal and
// what it could not: the resume line counts the journaled workers and
// how many settled (replayed, not run again), a worker whose outcome
// could not be recovered is named in doubt with why, and a settlement
// recovered from a journaled execution says so rather than reading as
// work this process ran.
func TestResumedProgressSaysWhatIsReplayed(t *testing.T) {
	journaled := []supervise.Record{
		{Kind: supervise.KindRunStarted, RunID: "k"},
		{Kind: supervise.KindSpawned, Node: "k:s1", Profile: "coder"},
		{Kind: supervise.KindSpawned, Node: "k:s2", Profile: "reviewer"},
		{Kind: supervise.KindSettled, Node: "k:s1", State: supervise.StateDone, Delivered: true},
	}
	tests := []struct {
		name string
		got  string
		want string
	}{
		{"resume line", resumeLine("k", journaled), "resuming k: 4 journaled records, 2 workers spawned, 1 settled (replayed, not run again)"},
		{"resume line, nothing spawned", resumeLine("k", journaled[:1]), "resuming k: 1 journaled records, 0 workers spawned, 0 settled (replayed, not run again)"},
		{"recovery failed", progressLine(supervise.Record{Kind: supervise.KindRecoveryFailed, Node: "k:s2", Reason: "its kernel run is running"}),
			"in doubt k:s2: its kernel run is running"},
		{"recovered settlement", progressLine(supervise.Record{Kind: supervise.KindSettled, Node: "k:s2", State: supervise.StateDone, Delivered: true, Recovered: true}),
			"settled k:s2 done, delivered, recovered from its journaled execution"},
	}
	for _, tt := range tests {
		if diff := cmp.Diff(tt.want, tt.got); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tt.name, diff)
		}
	}
}
