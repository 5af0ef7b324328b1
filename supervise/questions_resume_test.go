package supervise_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/supervise"
)

// A resumed run lists the questions its earlier process asked — answered
// as decided, or expired when their asker ended undecided — and numbers
// its own after them: a question id never repeats in the coordination
// log across processes (RES-03 for the evidence of §3.6 "Questions").
func TestResumedRunKeepsQuestionIDsAndLists(t *testing.T) {
	dir := t.TempDir()
	run := askingRunOn(t, dir)
	// The first process: q1 answered, q2 left undecided when it ended.
	run(false, answerQ1LeaveQ2(t))
	var listed []supervise.Question
	var answered map[string]any
	run(true, func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the roof"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		listed = c.ListQuestions().Questions
		answered = tool(t, ctx, c, supervise.VerbAnswerQuestion, map[string]any{"questionId": "q3", "answer": "blue"})
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"settled"}, "timeoutMs": 60000})
		return supervise.BrainReport{}, nil
	})
	if diff := cmp.Diff([][2]string{{"q1", "answered"}, {"q2", "expired"}, {"q3", "open"}}, questionStatuses(listed)); diff != "" {
		t.Errorf("questions of the resumed run (-want +got):\n%s", diff)
	}
	if answered["delivered"] != true {
		t.Errorf("answer_question q3: %v", answered)
	}
	checkQuestionIDsOnce(t, dir)
}

// A question's record can be lost with its process while a later one's
// was written (their appends race: the event goes out before the record
// is written, and a nested manager escalates it at once — seen under
// -race in TestHX14EscalatedQuestionAcrossKill). The resumed run numbers
// its questions after the highest id journaled, not after the count of
// records: a question id never repeats in the coordination log (§3.6
// "Questions"; RES-03).
func TestResumedRunNumbersQuestionsAfterAGap(t *testing.T) {
	dir := t.TempDir()
	run := askingRunOn(t, dir)
	run(false, answerQ1LeaveQ2(t))
	// q1's records were lost; q2's was written.
	path := filepath.Join(dir, supervise.CoordinationLogFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var kept [][]byte
	for _, line := range bytes.SplitAfter(data, []byte("\n")) {
		var r supervise.CoordRecord
		if json.Unmarshal(line, &r) == nil && r.QuestionID == "q1" {
			continue
		}
		kept = append(kept, line)
	}
	if err := os.WriteFile(path, bytes.Join(kept, nil), 0o600); err != nil {
		t.Fatal(err)
	}
	var listed []supervise.Question
	run(true, func(ctx context.Context, c *supervise.Coordinator, _ string) (supervise.BrainReport, error) {
		tool(t, ctx, c, supervise.VerbSpawnWorker, spawnArgs("paint the roof"))
		tool(t, ctx, c, supervise.VerbAwaitEvent, map[string]any{"kinds": []string{"question"}, "timeoutMs": 60000})
		listed = c.ListQuestions().Questions
		return supervise.BrainReport{}, nil
	})
	if diff := cmp.Diff([][2]string{{"q2", "expired"}, {"q3", "open"}}, questionStatuses(listed)); diff != "" {
		t.Errorf("questions of the resumed run (-want +got):\n%s", diff)
	}
	checkQuestionIDsOnce(t, dir)
}
