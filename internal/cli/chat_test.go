package cli_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"iter"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/creack/pty"
	"github.com/google/go-cmp/cmp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/journal/conversation"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/providers/scripted"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// threeTurns answers "one", "two" and "three" in order, each with usage;
// every answer echoes the prompt it was sent.
const threeTurns = `{"turns":[
 {"match":"/one$/","steps":[{"text":"first: {{prompt}}"},{"usage":{"inputTokens":5,"outputTokens":2},"mode":"delta"}]},
 {"match":"/two$/","steps":[{"text":"second: {{prompt}}"},{"usage":{"inputTokens":7,"outputTokens":3},"mode":"delta"}]},
 {"match":"/three$/","steps":[{"text":"third: {{prompt}}"},{"usage":{"inputTokens":9,"outputTokens":4},"mode":"delta"}]}]}`

// echo answers every prompt with the prompt.
const echo = `{"turns":[{"repeat":true,"steps":[{"text":"echo: {{prompt}}"}]}]}`

// decodeLines decodes NDJSON output, one value per line.
func decodeLines(t *testing.T, out string) []canonjson.Value {
	t.Helper()
	var vs []canonjson.Value
	for line := range strings.Lines(out) {
		if strings.TrimSpace(line) == "" {
			continue
		}
		if strings.Count(line, "\n") != 1 || !strings.HasSuffix(line, "}\n") {
			t.Fatalf("not one JSON object per line: %q", line)
		}
		vs = append(vs, decode(t, line))
	}
	return vs
}

// loadSession reads a session back from a chat's journal file.
func loadSession(t *testing.T, path, id string) *conversation.Entry {
	t.Helper()
	ctx := context.Background()
	j, err := conversation.OpenFile(ctx, path, conversation.FileOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e, err := j.LoadRun(ctx, id)
	if err != nil || e == nil {
		t.Fatalf("session %s: %v, %v", id, e, err)
	}
	return e
}

// turnShape is what a test compares of a journal turn.
type turnShape struct {
	Index               int
	Speaker, TurnID     string
	SessionID, Text     string
	Attempts            int
	TokensIn, TokensOut *int64
}

func shapes(e *conversation.Entry) []turnShape {
	var out []turnShape
	for _, tr := range e.Turns {
		s := turnShape{Index: tr.Index, Speaker: tr.Speaker, TurnID: tr.TurnID, SessionID: tr.SessionID, Text: tr.Text, Attempts: tr.Attempts}
		if tr.Usage != nil {
			s.TokensIn, s.TokensOut = tr.Usage.TokensIn, tr.Usage.TokensOut
		}
		out = append(out, s)
	}
	return out
}

func i64(v int64) *int64 { return &v }

// Issue 15 item 3 (RES-04, NSO-02): three turns of one session run in one
// environment — one create, three recorded runs naming it, each with its
// events and ledger — and the journal holds the six turns with
// deterministic ids, the provider session they continued and their usage
// (unknown stays unknown).
func TestChatThreeTurnsInOneEnvironment(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	script := writeFile(t, "three.json", threeTurns)
	out, errOut, code := run(t, "one\n\ntwo\nthree\n", "chat", "--json", "--db", db, "--script", script, noteWriter)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 3 {
		t.Fatalf("%d answers, want 3:\n%s", len(lines), out)
	}
	id := member(lines[0], "session").Str()
	var envs, modes, texts, runIDs []string
	for _, l := range lines {
		envs = append(envs, member(l, "environmentId").Str())
		modes = append(modes, member(l, "continuation").Str())
		texts = append(texts, member(l, "text").Str())
		runIDs = append(runIDs, member(l, "runId").Str())
	}
	if envs[0] == "" || !cmp.Equal(envs, []string{envs[0], envs[0], envs[0]}) {
		t.Errorf("environments %v, want one", envs)
	}
	// The scripted provider continues a session it is named: after the
	// first turn only the new turn is sent.
	if diff := cmp.Diff([]string{"first", "native", "native"}, modes); diff != "" {
		t.Errorf("continuation (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff([]string{"first: one", "second: two", "third: three"}, texts); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	want := []string{id + ".t1.assistant.a1", id + ".t3.assistant.a1", id + ".t5.assistant.a1"}
	if diff := cmp.Diff(want, runIDs); diff != "" {
		t.Errorf("run ids (-want +got):\n%s", diff)
	}
	if !strings.Contains(errOut, "session "+id+" (new session)") || !strings.Contains(errOut, "--session "+id) {
		t.Errorf("stderr does not name the session and how to continue it:\n%s", errOut)
	}

	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	for _, rid := range runIDs {
		r, err := s.GetRun(ctx, rid)
		if err != nil || r.Status != store.StatusCompleted || r.Kind != "chat" {
			t.Fatalf("run %s: %v %q, %v", rid, r.Status, r.Kind, err)
		}
		if env, _ := r.Doc.Get("environmentId"); env.Str() != envs[0] {
			t.Errorf("run %s names environment %q, want %q", rid, env.Str(), envs[0])
		}
		if events, err := s.Events(ctx, rid, "", 0); err != nil || len(events) == 0 {
			t.Errorf("run %s has no events: %v", rid, err)
		}
		if entries, err := s.Ledger(ctx, rid); err != nil || len(entries) == 0 {
			t.Errorf("run %s has no ledger entry: %v", rid, err)
		}
	}

	e := loadSession(t, db+".conversations.jsonl", id)
	wantTurns := []turnShape{
		{0, "user", id + ".t0.user", "", "one", 1, nil, nil},
		{1, "assistant", id + ".t1.assistant", id, "first: one", 1, i64(5), i64(2)},
		{2, "user", id + ".t2.user", "", "two", 1, nil, nil},
		{3, "assistant", id + ".t3.assistant", id, "second: two", 1, i64(7), i64(3)},
		{4, "user", id + ".t4.user", "", "three", 1, nil, nil},
		{5, "assistant", id + ".t5.assistant", id, "third: three", 1, i64(9), i64(4)},
	}
	if diff := cmp.Diff(wantTurns, shapes(e)); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
	if e.Halt != nil {
		t.Errorf("Ctrl-D halted the session (%v): it could not be continued", e.Halt)
	}
}

// Issue 15 item 3: the human output is the answers, streamed; progress
// and the session's id go to stderr.
func TestChatHuman(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "hello\n", "chat", "--db", db, noteWriter)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	if out != "Done: hello\n\n" {
		t.Errorf("stdout %q, want the answer alone", out)
	}
	for _, want := range []string{"(new session)", "turn 1: run chat-", "completed", "usage input unknown"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
}

// Issue 15 item 3: --json prints exactly one object per answer, with
// these members in this order; unknown usage is null, never 0.
func TestChatJSONShape(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "hi\n", "chat", "--json", "--db", db, noteWriter)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 1 {
		t.Fatalf("%d lines, want 1:\n%s", len(lines), out)
	}
	var names []string
	for _, m := range lines[0].Members() {
		names = append(names, m.Name)
	}
	want := []string{"session", "turn", "turnId", "runId", "attempt", "continuation", "status", "text", "usage",
		"servedModel", "environmentId", "nativeSessionId", "recorded"}
	if diff := cmp.Diff(want, names); diff != "" {
		t.Errorf("members (-want +got):\n%s", diff)
	}
	l := lines[0]
	got := map[string]string{}
	for _, n := range []string{"turn", "attempt", "continuation", "status", "text", "servedModel", "nativeSessionId", "recorded"} {
		got[n] = string(canonjson.Marshal(member(l, n)))
	}
	got["inputTokens"] = string(canonjson.Marshal(member(member(l, "usage"), "inputTokens")))
	wantVals := map[string]string{"turn": "1", "attempt": "1", "continuation": `"first"`, "status": `"completed"`, "text": `"Done: hi"`,
		"servedModel": `"scripted/note-writer"`, "recorded": "true", "inputTokens": "null",
		// The scripted provider runs the turn in the session the chat
		// names and observes it as its native session (NSO-02).
		"nativeSessionId": string(canonjson.Marshal(member(l, "session")))}
	if diff := cmp.Diff(wantVals, got); diff != "" {
		t.Errorf("values (-want +got):\n%s", diff)
	}
}

// Issue 15 item 3 (RES-04): a session continues after its process exited,
// at its first unrecorded turn, in a new environment; the earlier turns
// are re-sent as context, and stderr says so.
func TestChatSessionContinues(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	script := writeFile(t, "echo.json", echo)
	out, errOut, code := run(t, "one\ntwo\n", "chat", "--json", "--db", db, "--script", script, noteWriter)
	if code != 0 {
		t.Fatalf("first process: exit %d\n%s%s", code, out, errOut)
	}
	first := decodeLines(t, out)
	id := member(first[0], "session").Str()

	out, errOut, code = run(t, "three\n", "chat", "--json", "--db", db, "--script", script, "--session", id, noteWriter)
	if code != 0 {
		t.Fatalf("second process: exit %d\n%s%s", code, out, errOut)
	}
	second := decodeLines(t, out)
	if len(second) != 1 {
		t.Fatalf("%d answers, want 1:\n%s", len(second), out)
	}
	l := second[0]
	if got := member(l, "turn").Float(); got != 5 {
		t.Errorf("continued at turn %v, want 5", got)
	}
	if got := member(l, "continuation").Str(); got != "resent" {
		t.Errorf("continuation %q, want resent", got)
	}
	text := member(l, "text").Str()
	for _, want := range []string{"user: one", "assistant: echo: one", "user: two", "assistant: echo: two", "three"} {
		if !strings.Contains(text, want) {
			t.Errorf("the continued turn was not sent %q:\n%s", want, text)
		}
	}
	for _, want := range []string{"continuing at turn 4", "re-sending the 4 recorded turns as context"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	e := loadSession(t, db+".conversations.jsonl", id)
	if len(e.Turns) != 6 || e.Turns[4].Text != "three" || e.Turns[5].TurnID != id+".t5.assistant" {
		t.Errorf("journal after continuing: %+v", shapes(e))
	}
}

// Issue 15 item 3: a session continues only under the profile its
// answers ran (as agentrt runs resume refuses another): --session with
// another profile is refused before any turn, saying what to do, and the
// journal is unchanged; with the same profile it continues.
func TestChatSessionUnderAnotherProfileIsRefused(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	out, errOut, code := run(t, "one\n", "chat", "--json", "--db", db, noteWriter)
	if code != 0 {
		t.Fatalf("first process: exit %d\n%s%s", code, out, errOut)
	}
	id := member(decodeLines(t, out)[0], "session").Str()
	other := filepath.Join("..", "..", "examples", "profiles", "claude-worker.json")
	out, errOut, code = run(t, "two\n", "chat", "--json", "--db", db, "--session", id, other)
	if code != cli.ExitUsage {
		t.Fatalf("another profile: exit %d, want %d\n%s%s", code, cli.ExitUsage, out, errOut)
	}
	for _, want := range []string{"was answered with another profile", "continue it with the profile it was answered with", "leave out --session"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	if e := loadSession(t, db+".conversations.jsonl", id); len(e.Turns) != 2 {
		t.Errorf("journal after the refusal: %+v; want the first exchange only", shapes(e))
	}
	if out, errOut, code := run(t, "two\n", "chat", "--json", "--db", db, "--session", id, noteWriter); code != 0 {
		t.Fatalf("the same profile: exit %d\n%s%s", code, out, errOut)
	}
}

// Issue 15 item 3: an unknown session is refused, saying what to do.
func TestChatUnknownSession(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "hi\n", "chat", "--db", db, "--session", "chat-nope", noteWriter)
	if code != cli.ExitFailed {
		t.Fatalf("exit %d, want %d\n%s%s", code, cli.ExitFailed, out, errOut)
	}
	for _, want := range []string{`no session "chat-nope"`, "leave out --session to start a new one", db + ".conversations.jsonl"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	if out != "" {
		t.Errorf("stdout %q, want nothing", out)
	}
	if _, _, code := run(t, "", "chat", "--db", db, "-"); code != cli.ExitUsage {
		t.Errorf("PROFILE -: exit %d, want %d", code, cli.ExitUsage)
	}
}

// chatProcess is agentrt chat running in a child process.
type chatProcess struct {
	cmd    *exec.Cmd
	stdin  io.WriteCloser
	lines  chan string
	stderr *syncBuffer
}

// syncBuffer is a bytes.Buffer safe to write from the child's copier
// while a test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// chatChild starts the agentrt command in a child process with piped
// stdin and stdout.
func chatChild(t *testing.T, args ...string) *chatProcess {
	t.Helper()
	p := &chatProcess{lines: make(chan string, 16), stderr: &syncBuffer{}}
	var stdout io.ReadCloser
	p.cmd = startChild(t, func(cmd *exec.Cmd) {
		var err error
		if p.stdin, err = cmd.StdinPipe(); err != nil {
			t.Fatal(err)
		}
		if stdout, err = cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
		cmd.Stderr = p.stderr
	}, args...)
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p
}

// send writes one user turn.
func (p *chatProcess) send(t *testing.T, line string) {
	t.Helper()
	if _, err := io.WriteString(p.stdin, line+"\n"); err != nil {
		t.Fatal(err)
	}
}

// next waits (30s at most) for the next line of output, as JSON.
func (p *chatProcess) next(t *testing.T) canonjson.Value {
	t.Helper()
	select {
	case l, ok := <-p.lines:
		if !ok {
			t.Fatalf("the chat ended early; stderr:\n%s", p.stderr.String())
		}
		return decode(t, l)
	case <-time.After(30 * time.Second):
		t.Fatalf("no answer within 30s; stderr:\n%s", p.stderr.String())
	}
	return canonjson.Value{}
}

// Issue 15 item 3 (RES-04): a chat process killed with SIGKILL in the
// middle of an answer leaves its turns recorded; --session then answers
// the unanswered turn first, as a second attempt, and goes on.
func TestChatResumesAfterSIGKILL(t *testing.T) {
	if testing.Short() {
		t.Skip("starts and kills a child process")
	}
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	slow := writeFile(t, "slow.json", `{"turns":[
 {"match":"/one$/","steps":[{"text":"first"}]},
 {"match":"/two$/","steps":[{"text":"half of it"},{"delayMs":60000},{"text":" never said"}]}]}`)
	child := chatChild(t, "chat", "--json", "--db", db, "--lease", "1s", "--script", slow, noteWriter)
	child.send(t, "one")
	id := member(child.next(t), "session").Str()
	child.send(t, "two")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	killed, _ := awaitEvent(t, s, "half of it")
	if want := id + ".t3.assistant.a1"; killed != want {
		t.Fatalf("the slow answer is run %s, want %s", killed, want)
	}
	if err := child.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	child.cmd.Wait()

	script := writeFile(t, "echo.json", echo)
	out, errOut, code := run(t, "three\n", "chat", "--json", "--db", db, "--script", script, "--session", id, noteWriter)
	if code != 0 {
		t.Fatalf("resumed: exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 2 {
		t.Fatalf("%d answers, want 2 (the unanswered turn, then the new one):\n%s", len(lines), out)
	}
	type answer struct {
		Turn    float64
		RunID   string
		Attempt float64
	}
	var got []answer
	for _, l := range lines {
		got = append(got, answer{member(l, "turn").Float(), member(l, "runId").Str(), member(l, "attempt").Float()})
	}
	want := []answer{{3, id + ".t3.assistant.a2", 2}, {5, id + ".t5.assistant.a1", 1}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("answers (-want +got):\n%s", diff)
	}
	if !strings.Contains(errOut, `turn 2 ("two") was never answered`) {
		t.Errorf("stderr does not say the unanswered turn is answered first:\n%s", errOut)
	}
	e := loadSession(t, db+".conversations.jsonl", id)
	if len(e.Turns) != 6 || e.Turns[3].Attempts != 2 || !strings.HasSuffix(e.Turns[3].Text, "two") {
		t.Errorf("journal after resuming: %+v", shapes(e))
	}
	// The killed attempt keeps its record: interrupted once its lease
	// lapsed, with what it streamed.
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := s.GetRun(ctx, killed)
		if err == nil && r.Status == store.StatusInterrupted {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the killed attempt reads %v, %v; want interrupted", r.Status, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Issue 15 item 3: SIGINT (Ctrl-C) cancels the answer being written; its
// run is recorded cancelled, and, with input that is not a terminal, the
// session ends saying how to answer the turn again.
func TestChatInterruptCancelsTheTurn(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process")
	}
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	slow := writeFile(t, "slow.json", `{"turns":[{"steps":[{"text":"thinking"},{"delayMs":60000},{"text":" never said"}]}]}`)
	child := chatChild(t, "chat", "--json", "--db", db, "--script", slow, noteWriter)
	child.send(t, "one")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runID, _ := awaitEvent(t, s, "thinking")
	if err := child.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	l := child.next(t)
	if got := member(l, "status").Str(); got != "cancelled" {
		t.Errorf("status %q, want cancelled", got)
	}
	if member(l, "recorded").Bool() {
		t.Error("a cancelled answer was recorded in the journal")
	}
	child.stdin.Close()
	if err := child.cmd.Wait(); err == nil {
		t.Error("exit 0 with a turn unanswered")
	}
	if r, err := s.GetRun(ctx, runID); err != nil || r.Status != store.StatusCancelled {
		t.Errorf("run %s: %v, %v; want cancelled", runID, r.Status, err)
	}
	if !strings.Contains(child.stderr.String(), "--session") {
		t.Errorf("stderr does not say how to answer the turn again:\n%s", child.stderr.String())
	}
}

// Issue 15 item 3: on a terminal, a cancelled answer leaves its turn
// waiting: a new message is refused (the journal takes no turn before
// it), an empty line answers the turn again as a second attempt, and
// Ctrl-D ends the session with every turn answered.
func TestChatRetriesOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process on a pseudo-terminal")
	}
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	script := writeFile(t, "slow-once.json", `{"turns":[
 {"steps":[{"text":"thinking"},{"delayMs":60000},{"text":" never said"}]},
 {"repeat":true,"steps":[{"text":"echo: {{prompt}}"}]}]}`)
	p := &chatProcess{lines: make(chan string, 16), stderr: &syncBuffer{}}
	var stdout io.ReadCloser
	p.cmd = startChild(t, func(cmd *exec.Cmd) {
		cmd.Stdin, cmd.Stderr = tty, tty
		if stdout, err = cmd.StdoutPipe(); err != nil {
			t.Fatal(err)
		}
	}, "chat", "--json", "--db", db, "--script", script, noteWriter)
	tty.Close()
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	var screen syncBuffer
	go func() {
		for c := range readChunks(ptmx) {
			screen.Write([]byte(c))
		}
	}()
	p.stderr = &screen
	awaitScreen := func(text string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for !strings.Contains(screen.String(), text) {
			if time.Now().After(deadline) {
				t.Fatalf("the terminal never showed %q:\n%q", text, screen.String())
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	awaitScreen("you> ")
	io.WriteString(ptmx, "one\n")
	awaitScreen("first token after")
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	if l := p.next(t); member(l, "status").Str() != "cancelled" || member(l, "recorded").Bool() {
		t.Fatalf("interrupted answer: %s", canonjson.Marshal(l))
	}
	awaitScreen("press Enter to try it again")
	io.WriteString(ptmx, "something else\n")
	awaitScreen("still not answered")
	io.WriteString(ptmx, "\n")
	l := p.next(t)
	got := []string{member(l, "status").Str(), member(l, "text").Str(), string(canonjson.Marshal(member(l, "attempt"))), string(canonjson.Marshal(member(l, "recorded")))}
	if diff := cmp.Diff([]string{"completed", "echo: one", "2", "true"}, got); diff != "" {
		t.Errorf("retried answer (-want +got):\n%s", diff)
	}
	io.WriteString(ptmx, "\x04")
	if err := p.cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\nterminal:\n%q", err, screen.String())
	}
	id := member(l, "session").Str()
	if e := loadSession(t, db+".conversations.jsonl", id); len(e.Turns) != 2 {
		t.Errorf("journal: %+v, want the turn and its answer", shapes(e))
	}
}

// Issue 15 item 3: with a PostgreSQL run store the conversation journal
// is in the same database, so another process (another machine) sharing
// it continues the session; the password never reaches the output.
func TestChatOnPostgres(t *testing.T) {
	db := pgtest.Schema(t)
	script := writeFile(t, "echo.json", echo)
	out, errOut, code := run(t, "one\n", "chat", "--json", "--database", db, "--script", script, noteWriter)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out, errOut)
	}
	id := member(decodeLines(t, out)[0], "session").Str()
	out, errOut2, code := run(t, "two\n", "chat", "--json", "--database", db, "--script", script, "--session", id, noteWriter)
	if code != 0 {
		t.Fatalf("continuing: exit %d\n%s%s", code, out, errOut2)
	}
	if strings.Contains(out+errOut+errOut2, "agentrt:agentrt@") {
		t.Errorf("the password reached the output:\n%s%s%s", out, errOut, errOut2)
	}
	ctx := context.Background()
	j, err := conversation.OpenPostgres(ctx, db, conversation.SQLOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer j.Close()
	e, err := j.LoadRun(ctx, id)
	if err != nil || e == nil || len(e.Turns) != 4 {
		t.Fatalf("session %s in PostgreSQL: %+v, %v", id, e, err)
	}
	if got := e.Turns[3].TurnID; got != id+".t3.assistant" {
		t.Errorf("last turn id %q", got)
	}
}

// startBinary starts the built agentrt with piped stdin and stdout.
func startBinary(t *testing.T, exe string, args ...string) *chatProcess {
	t.Helper()
	p := &chatProcess{lines: make(chan string, 16), stderr: &syncBuffer{}}
	p.cmd = exec.Command(exe, args...)
	var err error
	if p.stdin, err = p.cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	p.cmd.Stderr = p.stderr
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { p.cmd.Process.Kill(); p.cmd.Wait() })
	go func() {
		defer close(p.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.lines <- sc.Text()
		}
	}()
	return p
}

// Issue 15 item 3 with the real agentrt binary: SIGINT (Ctrl-C) cancels
// the answer being written — the process is not killed by it, even though
// its main cancels its context on SIGINT — and a session killed with
// SIGKILL mid-answer continues with --session at its unanswered turn.
func TestChatBuiltBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds agentrt and runs it")
	}
	t.Parallel()
	exe := buildAgentrt(t)
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()

	// 1. On a terminal, Ctrl-C mid-answer cancels the answer and the
	// session goes on: an empty line answers the turn again, Ctrl-D ends
	// the session with exit 0.
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	slowOnce := writeFile(t, "slow-once.json", `{"turns":[
 {"steps":[{"text":"hmm"},{"delayMs":60000}]},
 {"repeat":true,"steps":[{"text":"answer {{prompt}}"}]}]}`)
	a := &chatProcess{lines: make(chan string, 16), stderr: &syncBuffer{}}
	a.cmd = exec.Command(exe, "chat", "--json", "--db", db, "--script", slowOnce, noteWriter)
	a.cmd.Stdin, a.cmd.Stderr = tty, tty
	stdout, err := a.cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := a.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.cmd.Process.Kill(); a.cmd.Wait() })
	tty.Close()
	go func() {
		defer close(a.lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			a.lines <- sc.Text()
		}
	}()
	go func() {
		for c := range readChunks(ptmx) {
			a.stderr.Write([]byte(c))
		}
	}()
	io.WriteString(ptmx, "one\n")
	first, _ := awaitEvent(t, s, "hmm")
	if err := a.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	l := a.next(t)
	id := member(l, "session").Str()
	if got := member(l, "status").Str(); got != "cancelled" {
		t.Errorf("after SIGINT the answer is %q, want cancelled", got)
	}
	io.WriteString(ptmx, "\n")
	if l := a.next(t); member(l, "runId").Str() != id+".t1.assistant.a2" || member(l, "status").Str() != "completed" {
		t.Errorf("the answer tried again: %s\n%q", canonjson.Marshal(l), a.stderr.String())
	}
	io.WriteString(ptmx, "\x04")
	if err := a.cmd.Wait(); err != nil {
		t.Errorf("exit after Ctrl-D: %v, want 0 (SIGINT must not have ended the session)\n%q", err, a.stderr.String())
	}
	if r, err := s.GetRun(ctx, first); err != nil || r.Status != store.StatusCancelled {
		t.Errorf("run %s: %v, %v; want cancelled", first, r.Status, err)
	}

	// 2. --session takes "two", whose answer is killed with SIGKILL.
	slowTwo := writeFile(t, "slow-two.json", `{"turns":[{"match":"/two$/","steps":[{"text":"half"},{"delayMs":60000}]}]}`)
	b := startBinary(t, exe, "chat", "--json", "--db", db, "--lease", "1s", "--script", slowTwo, "--session", id, noteWriter)
	b.send(t, "two")
	if killed, _ := awaitEvent(t, s, "half"); killed != id+".t3.assistant.a1" {
		t.Fatalf("the slow answer is run %s", killed)
	}
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	b.cmd.Wait()

	// 3. The next process answers "two" (attempt 2) and ends cleanly.
	script := writeFile(t, "echo.json", echo)
	out, errOut, code := run(t, "", "chat", "--json", "--db", db, "--script", script, "--session", id, noteWriter)
	if code != 0 {
		t.Fatalf("resuming: exit %d\n%s%s", code, out, errOut)
	}
	lines := decodeLines(t, out)
	if len(lines) != 1 || member(lines[0], "runId").Str() != id+".t3.assistant.a2" {
		t.Fatalf("resumed answers:\n%s", out)
	}
	e := loadSession(t, db+".conversations.jsonl", id)
	var got []string
	for _, tr := range e.Turns {
		got = append(got, fmt.Sprintf("%s %d", tr.TurnID, tr.Attempts))
	}
	want := []string{id + ".t0.user 1", id + ".t1.assistant 2", id + ".t2.user 1", id + ".t3.assistant 2"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("journal (-want +got):\n%s", diff)
	}
}

// nativeProvider reports, at the start of every turn, the native session
// of its environment, as the CLI bridges do once their harness names it.
type nativeProvider struct{ contract.Provider }

func (p nativeProvider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	env, err := p.Provider.Create(ctx, in)
	if err != nil {
		return nil, err
	}
	return nativeEnv{env}, nil
}

type nativeEnv struct{ contract.Environment }

func (e nativeEnv) Stream(ctx context.Context, in *contract.TurnInput) iter.Seq2[contract.EnvironmentEvent, error] {
	return func(yield func(contract.EnvironmentEvent, error) bool) {
		id := "native-" + e.ID()
		ev := contract.EnvironmentEvent{Type: contract.EventTypeNativeSessionObserved, Data: map[string]canonjson.Value{
			"provider": canonjson.StringValue("scripted"), "nativeSessionId": canonjson.StringValue(id)}}
		if !yield(ev, nil) {
			return
		}
		for ev, err := range e.Environment.Stream(ctx, in) {
			if !yield(ev, err) {
				return
			}
		}
	}
}

// Issue 15 item 3 (NSO-02, NSO-03): the native session a provider reports
// is bound to every answer — its run record, its journal turn, its --json
// line — and never appears among the run's events.
func TestChatBindsTheNativeSession(t *testing.T) {
	db := filepath.Join(t.TempDir(), "runs.db")
	open := func(string, string, string, string) (contract.Provider, error) {
		return nativeProvider{scripted.New(scripted.DefaultScript(), scripted.Options{})}, nil
	}
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := cli.MainWith(ctx, []string{"chat", "--json", "--db", db, noteWriter}, cli.IO{In: strings.NewReader("one\ntwo\n"), Out: &out, Err: &errb}, open)
	if code != 0 {
		t.Fatalf("exit %d\n%s%s", code, out.String(), errb.String())
	}
	lines := decodeLines(t, out.String())
	if len(lines) != 2 {
		t.Fatalf("%d answers, want 2", len(lines))
	}
	native := "native-" + member(lines[0], "environmentId").Str()
	s, err := sqlite.Open(ctx, db, sqlite.Options{MustExist: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	var got []string
	for _, l := range lines {
		got = append(got, member(l, "nativeSessionId").Str())
		rr, err := kernel.ReadRun(ctx, s, member(l, "runId").Str())
		if err != nil || rr.Exact == nil {
			t.Fatalf("run %s: %v", member(l, "runId").Str(), err)
		}
		got = append(got, rr.Exact.NativeSessionID)
		events, err := s.Events(ctx, rr.Run.ID, "", 0)
		if err != nil {
			t.Fatal(err)
		}
		if hasText(events, native) {
			t.Errorf("run %s recorded the private native session event", rr.Run.ID)
		}
	}
	e := loadSession(t, db+".conversations.jsonl", member(lines[0], "session").Str())
	got = append(got, e.Turns[1].SessionID, e.Turns[3].SessionID)
	if diff := cmp.Diff(slices.Repeat([]string{native}, 6), got); diff != "" {
		t.Errorf("native session of the lines, records and journal turns (-want +got):\n%s", diff)
	}
}
