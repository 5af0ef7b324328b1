package cli_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/store"
	"github.com/agentrt/agentrt/store/sqlite"
)

// slowScript streams two pieces of text with a pause between them.
const slowScript = `{"turns":[{"steps":[{"text":"first"},{"delayMs":1500},{"text":" second"}]}]}`

// readChunks sends what r yields, chunk by chunk, and closes the channel
// at its end (EOF, or EIO from a terminal whose other side closed).
func readChunks(r io.Reader) <-chan string {
	ch := make(chan string)
	go func() {
		defer close(ch)
		buf := make([]byte, 4096)
		for {
			n, err := r.Read(buf)
			if n > 0 {
				ch <- string(buf[:n])
			}
			if err != nil {
				return
			}
		}
	}()
	return ch
}

// Issue 18 "Done when": agentrt run with a slow scripted stream shows the
// first text on stdout while the run is still going, not all at the end.
func TestRunStreamsTextBeforeItEnds(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a child process and waits out a scripted pause")
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	script := writeFile(t, "slow.json", slowScript)
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	cmd := startChild(t, func(c *exec.Cmd) { c.Stdout = w }, "run", "--db", db, "--script", script, noteWriter, "--task", "Stream slowly.")
	w.Close() // the child holds the only write end: EOF once it exits
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	chunks := readChunks(r)

	var out strings.Builder
	deadline := time.After(30 * time.Second)
	for !strings.Contains(out.String(), "first") {
		select {
		case c, ok := <-chunks:
			if !ok {
				t.Fatalf("stdout ended without the first text: %q", out.String())
			}
			out.WriteString(c)
		case <-deadline:
			t.Fatalf("no text on stdout within 30s: %q", out.String())
		}
	}
	select {
	case err := <-exited:
		t.Fatalf("the first text reached stdout only once the run had ended (%v): %q", err, out.String())
	default:
	}
	if s := out.String(); strings.Contains(s, "second") || strings.Contains(s, "run run-") {
		t.Fatalf("stdout already holds the rest of the run when the first text arrives: %q", s)
	}

	for c := range chunks {
		out.WriteString(c)
	}
	select {
	case err = <-exited:
	case <-time.After(30 * time.Second):
		t.Fatal("the run did not end")
	}
	if err != nil {
		t.Fatalf("exit: %v\n%s", err, out.String())
	}
	if s := out.String(); !strings.HasPrefix(s, "first second\n\nrun run-") || !strings.Contains(s, "completed, delivered") {
		t.Errorf("stdout is not the streamed text, a blank line, then the summary:\n%s", s)
	}
}

// --json prints exactly what it printed before the run went live: the
// result, and nothing streamed, on stdout.
func TestRunJSONUnchanged(t *testing.T) {
	golden, err := os.ReadFile(filepath.Join("testdata", "run-json.golden"))
	if err != nil {
		t.Fatal(err)
	}
	script := writeFile(t, "two.json", `{"turns":[{"steps":[{"text":"first"},{"delayMs":50},{"text":" second"}]}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--json", "--db", db, "--script", script, noteWriter, "--task", "t")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	got := regexp.MustCompile(`"run-[0-9a-f]{16}"`).ReplaceAllString(out, `"RUN-ID"`)
	if got != string(golden) {
		t.Errorf("--json output changed:\n%s\nwant (testdata/run-json.golden):\n%s", got, golden)
	}
	if !strings.Contains(errOut, "first token after") {
		t.Errorf("--json shows no progress on stderr: %q", errOut)
	}
}

// --quiet prints the summary alone: no text streamed before it, nothing
// on stderr; with --json, the JSON alone. Exit codes stay as they were.
func TestRunQuiet(t *testing.T) {
	script := writeFile(t, "two.json", `{"turns":[{"repeat":true,"steps":[{"text":"first"},{"text":" second"}]}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--quiet", "--db", db, "--script", script, noteWriter, "--task", "t")
	if code != 0 || errOut != "" {
		t.Fatalf("exit %d, stderr %q", code, errOut)
	}
	if !strings.HasPrefix(out, "run run-") || !strings.Contains(out, "  result    first second\n") {
		t.Errorf("--quiet printed more or less than the summary:\n%s", out)
	}
	out, errOut, code = run(t, "", "run", "-q", "--json", "--db", db, "--script", script, noteWriter, "--task", "t", "--expect", "nope")
	if code != 1 || errOut != "" {
		t.Fatalf("an undelivered run: exit %d, stderr %q; want 1 and nothing", code, errOut)
	}
	if res := decode(t, out); member(res, "delivered").Bool() || member(res, "text").Str() != "first second" {
		t.Errorf("--quiet --json printed %s", out)
	}
}

// Off a terminal, stdout carries the text then the summary, and stderr
// one plain line per step of the run — never a carriage return.
func TestRunPlainProgress(t *testing.T) {
	script := writeFile(t, "tool.json", `{"turns":[{"steps":[{"delayMs":20},{"text":"first"},
		{"toolCall":{"id":"call-1","name":"search","arguments":{"q":"go"}}},{"text":" second"}]}]}`)
	db := filepath.Join(t.TempDir(), "runs.db")
	out, errOut, code := run(t, "", "run", "--db", db, "--script", script, noteWriter, "--task", "t")
	if code != 0 {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if !strings.HasPrefix(out, "first second\n\nrun run-") {
		t.Errorf("stdout is not the text, a blank line, then the summary:\n%s", out)
	}
	want := regexp.MustCompile(`^running \S+note-writer\.json with scripted…\n` +
		`first token after [0-9.]+m?s\n` +
		`tool search called\n$`)
	if !want.MatchString(errOut) {
		t.Errorf("stderr:\n%s\nwant the start, the time to the first token and the tool call, a line each", errOut)
	}
}

// screen plays terminal output onto a screen — carriage return, newline
// and backspace move the cursor, anything else overwrites the cell under
// it — and returns its lines, trailing blanks trimmed.
func screen(out string) []string {
	lines := [][]rune{nil}
	row, col := 0, 0
	for _, r := range out {
		switch r {
		case '\r':
			col = 0
		case '\n':
			row++
			if row == len(lines) {
				lines = append(lines, nil)
			}
		case '\b':
			col = max(col-1, 0)
		default:
			for len(lines[row]) <= col {
				lines[row] = append(lines[row], ' ')
			}
			lines[row][col] = r
			col++
		}
	}
	s := make([]string, len(lines))
	for i, l := range lines {
		s[i] = strings.TrimRight(string(l), " ")
	}
	return s
}

// runOnTerminal runs agentrt with the slow script, its stderr (and, with
// sharedScreen, its stdout) on a real pseudo-terminal, and returns what
// the terminal received and what a pipe on stdout received otherwise.
func runOnTerminal(t *testing.T, sharedScreen bool) (term, stdout string) {
	t.Helper()
	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	if err := pty.Setsize(ptmx, &pty.Winsize{Rows: 40, Cols: 200}); err != nil {
		t.Fatal(err)
	}
	db := filepath.Join(t.TempDir(), "runs.db")
	script := writeFile(t, "slow.json", slowScript)
	var out strings.Builder
	cmd := startChild(t, func(c *exec.Cmd) {
		c.Stderr = tty
		c.Stdout = &out
		if sharedScreen {
			c.Stdout = tty
		}
	}, "run", "--db", db, "--script", script, noteWriter, "--task", "Stream slowly.")
	tty.Close() // the child holds the terminal now: EIO once it exits
	var got strings.Builder
	for c := range readChunks(ptmx) {
		got.WriteString(c)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit: %v\nterminal:\n%q\nstdout:\n%s", err, got.String(), out.String())
	}
	return got.String(), out.String()
}

// On a terminal, stderr's progress is one line rewritten in place while
// the run waits, and gone when the summary comes.
func TestRunStatusLineOnTerminal(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process on a pseudo-terminal")
	}
	term, stdout := runOnTerminal(t, false)
	if strings.ContainsAny(term, "\n") {
		t.Errorf("the status line wrote whole lines:\n%q", term)
	}
	if n := strings.Count(term, "\rscripted · "); n < 3 {
		t.Errorf("the status line was drawn %d times in a 1.5s wait; want it rewritten as time passes:\n%q", n, term)
	}
	for _, want := range []string{" · waiting for the first token", " · first token after "} {
		if !strings.Contains(term, want) {
			t.Errorf("the status line never showed %q:\n%q", want, term)
		}
	}
	if s := screen(term); len(s) != 1 || s[0] != "" {
		t.Errorf("the status line was not cleared at the end; the terminal shows %q", s)
	}
	if !strings.HasPrefix(stdout, "first second\n\nrun run-") {
		t.Errorf("stdout:\n%s", stdout)
	}
}

// With stdout on the same terminal, the status line never lands inside
// the streamed text: the screen ends up showing the text whole, then the
// summary, and no trace of the status line.
func TestRunStatusLineSharesTheScreen(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process on a pseudo-terminal")
	}
	term, _ := runOnTerminal(t, true)
	s := screen(term)
	if len(s) < 4 || s[0] != "first second" || s[1] != "" || !strings.HasPrefix(s[2], "run run-") {
		t.Fatalf("the screen shows:\n%s\nwant the text, a blank line, then the summary", strings.Join(s, "\n"))
	}
	for _, line := range s {
		if strings.Contains(line, " · ") {
			t.Errorf("the status line is left on the screen: %q", line)
		}
	}
	if !strings.Contains(term, " · waiting for the first token") {
		t.Errorf("no status line was shown before the first token:\n%q", term)
	}
}

// runs events over a big run counts on stderr when stderr is a terminal
// and stdout is not; off a terminal it prints no count.
func TestRunsEventsProgress(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a child process on a pseudo-terminal")
	}
	const total = 4500
	db := filepath.Join(t.TempDir(), "runs.db")
	ctx := context.Background()
	s, err := sqlite.Open(ctx, db, sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.CreateRun(ctx, store.Run{ID: "big", Kind: "execute", Status: store.StatusRunning, LeaseUntil: time.Now().Add(time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	events := make([]store.NewEvent, total)
	for i := range events {
		events[i] = store.NewEvent{ID: fmt.Sprint("e", i), Type: "message.part.updated", Time: time.Now(),
			Body: canonjson.ObjectValue([]canonjson.Member{{Name: "delta", Value: canonjson.StringValue("x")}})}
	}
	if _, err := s.AppendEvents(ctx, r.Fence(), events); err != nil {
		t.Fatal(err)
	}
	s.Close()

	out, errOut, code := run(t, "", "runs", "events", "--db", db, "big")
	if code != 0 || strings.Count(out, "\n") != total || errOut != "" {
		t.Fatalf("off a terminal: exit %d, %d lines, stderr %q", code, strings.Count(out, "\n"), errOut)
	}

	ptmx, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer ptmx.Close()
	var stdout strings.Builder
	cmd := startChild(t, func(c *exec.Cmd) { c.Stdout, c.Stderr = &stdout, tty }, "runs", "events", "--db", db, "big")
	tty.Close()
	var term strings.Builder
	for c := range readChunks(ptmx) {
		term.WriteString(c)
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("exit %v: %q", err, term.String())
	}
	for _, want := range []string{"\r2000 events…", "\r4000 events…"} {
		if !strings.Contains(term.String(), want) {
			t.Errorf("stderr never showed %q:\n%q", want, term.String())
		}
	}
	if sc := screen(term.String()); len(sc) != 1 || sc[0] != "" {
		t.Errorf("the count was not cleared at the end; the terminal shows %q", sc)
	}
	if n := strings.Count(stdout.String(), "\n"); n != total {
		t.Errorf("stdout has %d events, want %d", n, total)
	}
}
