package coordmcp

import (
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/supervise"
)

// The re-entry note stays within MaxReentryNoteBytes even when every
// listed worker carries texts at supervise's clip (MaxReentryText):
// the workers that do not fit are counted as left out — the earlier
// settled ones, the later live and in-doubt ones — so every count adds
// up to the lists' totals.
func TestReentryNoteByteBound(t *testing.T) {
	manager, err := profile.Parse([]byte(`{"name": "m", "harness": "opencode", "tools": {"agent_runtime_coordination_spawn_worker": true,
		"agent_runtime_coordination_observe_agent": true, "agent_runtime_coordination_read_journal": true}}`))
	if err != nil {
		t.Fatal(err)
	}
	b, err := NewHarnessBrain(manager, scripted.New(nil, scripted.Options{}), HarnessOptions{Relay: []string{"/opt/agentrt"}})
	if err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("é", supervise.MaxReentryText/2) // at the clip, two bytes a rune
	workers := func(from int, st supervise.State) []supervise.ReentryWorker {
		ws := make([]supervise.ReentryWorker, supervise.MaxReentryWorkers)
		for i := range ws {
			ws[i] = supervise.ReentryWorker{ID: supervise.ChildID("run1", from+i), Label: long, Profile: long, Key: long, State: st,
				Verdict: long, Reason: long, OutRef: "sha256:" + strings.Repeat("0", 64)}
		}
		return ws
	}
	st := supervise.ReentryState{Resumed: true, JournalRows: 5000, PriorRows: 4990,
		Settled: workers(100, supervise.StateFailed), SettledOmitted: 80,
		Live: workers(200, supervise.StateRunning), LiveOmitted: 3,
		InDoubt: workers(300, supervise.StateRunning), InDoubtOmitted: 4,
		WaitingEvents: 7}
	for i := range supervise.MaxReentryQuestions {
		st.OpenQuestions = append(st.OpenQuestions, supervise.ReentryQuestion{ID: "q" + strconv.Itoa(i), From: "run1:s200", Urgency: supervise.UrgencyBlocksStep,
			Question: strings.Repeat(`"`, supervise.MaxReentryText)}) // each byte quoted as two
	}
	st.OpenQuestionsOmitted = 2
	note := b.reentryNote("run1", st)
	if len(note) > MaxReentryNoteBytes {
		t.Errorf("the note is %d bytes, over %d", len(note), MaxReentryNoteBytes)
	}
	for _, tc := range []struct {
		title string
		total int
	}{{"Workers settled", 100}, {"Workers running", 23}, {"Workers in doubt", 24}, {"Questions waiting for your answer", 12}} {
		m := regexp.MustCompile(regexp.QuoteMeta(tc.title) + ` \((\d+)[;)][^\n]*?(?:; and (\d+) (?:earlier|later) ones left out|all (\d+) left out)?\.\n`).FindStringSubmatch(note)
		if m == nil {
			t.Errorf("no %q line in:\n%s", tc.title, note)
			continue
		}
		total, _ := strconv.Atoi(m[1])
		left, _ := strconv.Atoi(m[2] + m[3])
		if total != tc.total || left == 0 || (m[3] != "" && tc.title != "Questions waiting for your answer") {
			t.Errorf("%s: total %d, %d left out; want %d with some, not all, left out", tc.title, total, left, tc.total)
		}
	}
	// The settled list keeps the most recent: its last worker is there.
	if !strings.Contains(note, string(supervise.ChildID("run1", 119))) {
		t.Errorf("the most recent settled worker run1:s119 is not listed:\n%s", note)
	}
	for _, want := range []string{"Journal: 5000 rows, 4990 of them", "read_journal with sinceRow 0", "Events waiting for you in await_event: 7.", "observe_agent"} {
		if !strings.Contains(note, want) {
			t.Errorf("the note lacks %q", want)
		}
	}
	t.Logf("%d bytes", len(note))
}
