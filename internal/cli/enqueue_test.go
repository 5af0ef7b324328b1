package cli_test

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/internal/cli"
)

// runWithin is run with a deadline: a command that follows something
// (runs events --follow) cannot hang the test.
func runWithin(t *testing.T, within time.Duration, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), within)
	defer cancel()
	var out, errb bytes.Buffer
	code = cli.Main(ctx, args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb})
	if ctx.Err() != nil {
		t.Fatalf("agentrt %s did not finish within %s:\n%s\n%s", strings.Join(args, " "), within, out.String(), errb.String())
	}
	return out.String(), errb.String(), code
}

// TestRunEnqueue is issue 14's `agentrt run --enqueue`: the run is
// submitted to the fleet on PostgreSQL and its id printed at once; a
// real `agentrt worker` process executes it; `agentrt runs events
// --follow` and `agentrt runs show` read it from the shared store (as any
// other machine would) until it ended.
func TestRunEnqueue(t *testing.T) {
	conn, schema := fleetDB(t)
	t.Setenv("AGENTRT_DATABASE_URL", "")
	db := []string{"--database", conn}
	enqueue := func(args ...string) (string, string, int) {
		return run(t, "", append(append([]string{"run", noteWriter, "--enqueue", "--river-schema", schema}, db...), args...)...)
	}

	// Before River's tables exist the submission is refused, saying what
	// to do, and the run it recorded does not wait for a job that is not
	// there.
	out, errOut, code := enqueue("--task", "too early", "--json")
	if code != 1 || !strings.Contains(errOut, "agentrt fleet migrate") {
		t.Fatalf("enqueue before migrating: exit %d, %s %s; want 1 naming agentrt fleet migrate", code, out, errOut)
	}
	if out, errOut, code := run(t, "", "runs", "list", "--status", "pending", "--database", conn); code != 0 || !strings.Contains(out, "no runs") {
		t.Errorf("runs left pending by a refused submission: %d %s %s", code, out, errOut)
	}
	if out, errOut, code := run(t, "", "fleet", "migrate", "--database", conn, "--river-schema", schema); code != 0 {
		t.Fatalf("fleet migrate: %d %s %s", code, out, errOut)
	}

	// Submitted with no worker running: the id comes back at once.
	start := time.Now()
	out, errOut, code = enqueue("--task", "write a note", "--json", "--idempotency-key", "note-1")
	if code != 0 {
		t.Fatalf("run --enqueue --json: %d %s %s", code, out, errOut)
	}
	v := decode(t, out)
	runID := member(v, "runId").Str()
	if !strings.HasPrefix(runID, "run") || member(v, "queue").Str() != "scripted" || member(v, "replayed").Bool() {
		t.Fatalf("run --enqueue --json printed %s", out)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("run --enqueue took %s with no worker running; it must not wait for the run", took)
	}
	// Retried with its key: the same run, nothing new; for people, the id
	// on stdout and how to follow it on stderr.
	out, errOut, code = enqueue("--task", "write a note", "--idempotency-key", "note-1")
	if code != 0 || strings.TrimSpace(out) != runID || !strings.Contains(errOut, "agentrt runs events "+runID+" --follow") || !strings.Contains(errOut, "already submitted") {
		t.Errorf("run --enqueue retried with its key: %d %q %s; want %s and a hint", code, out, errOut, runID)
	}
	if out, errOut, code := run(t, "", "runs", "show", runID, "--json", "--database", conn); code != 0 || member(decode(t, out), "status").Str() != "pending" {
		t.Errorf("runs show before a worker ran it: %d %s %s; want pending", code, out, errOut)
	}

	script := writeFile(t, "script.json", e2eScript)
	_, logs := startWorkerProcess(t, conn, schema, "w1", script)

	// Followed from the shared store until the run ended: the attempt's
	// events, in order, the text the worker's model said among them.
	out, errOut, code = runWithin(t, 2*time.Minute, "runs", "events", runID, "--follow", "--json", "--database", conn)
	if code != 0 {
		t.Fatalf("runs events --follow: %d %s %s\nworker:\n%s", code, out, errOut, logs)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	var text strings.Builder
	for i, line := range lines {
		e := decode(t, line)
		if got := member(e, "attempt").Str(); got != runID+".g1" || member(e, "sequence").Float() != float64(i+1) {
			t.Fatalf("event %d: attempt %q, sequence %v; want %s.g1, %d\n%s", i+1, got, member(e, "sequence"), runID, i+1, out)
		}
		data, _ := member(e, "event").Get("data")
		if d, ok := data.Get("delta"); ok {
			text.WriteString(d.Str())
		}
	}
	if typ := member(decode(t, lines[len(lines)-1]), "type").Str(); typ != "done" {
		t.Errorf("the last event followed is %s; want the turn's done", typ)
	}
	if !strings.Contains(text.String(), "one two three done") {
		t.Errorf("the followed events say %q; want the worker's model's text\n%s", text.String(), out)
	}

	out, errOut, code = run(t, "", "runs", "show", runID, "--json", "--database", conn)
	if code != 0 {
		t.Fatalf("runs show: %d %s", code, errOut)
	}
	v = decode(t, out)
	outcome, _ := member(v, "record").Get("outcome")
	if member(v, "status").Str() != "completed" || !member(outcome, "delivered").Bool() || !strings.Contains(member(outcome, "text").Str(), "done") {
		t.Errorf("runs show --json after the run: %s; want completed and delivered", out)
	}
	// For people, events are grouped by attempt.
	out, errOut, code = run(t, "", "runs", "events", runID, "--database", conn)
	if code != 0 || !strings.Contains(out, "attempt 1 (run "+runID+".g1)") {
		t.Errorf("runs events: %d %s %s; want the attempt named", code, out, errOut)
	}
	if _, errOut, code := run(t, "", "runs", "events", runID, "--after", "c0000000000000000001", "--database", conn); code != 2 || !strings.Contains(errOut, "attempt") {
		t.Errorf("runs events --after on a fleet run: %d %s; want a usage error naming the attempts", code, errOut)
	}
}

// TestRunEnqueueRefusesWhatDoesNotApply: --enqueue needs PostgreSQL, and
// the flags that say how to run here belong to the worker.
func TestRunEnqueueRefusesWhatDoesNotApply(t *testing.T) {
	t.Setenv("AGENTRT_DATABASE_URL", "")
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"no database", nil, "--database URL or $AGENTRT_DATABASE_URL"},
		{"a SQLite store", []string{"--db", "x.db"}, "--db does not apply to --enqueue"},
		{"retained", []string{"--database", "postgres://x@localhost/x", "--retain"}, "--retain does not apply to --enqueue"},
		{"the worker's script", []string{"--database", "postgres://x@localhost/x", "--script", "s.json"}, "--script does not apply"},
		{"an idempotency key without --enqueue", []string{"--idempotency-key", "k"}, "--idempotency-key applies to --enqueue only"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"run", noteWriter, "--task", "t"}, tt.args...)
			if tt.name != "an idempotency key without --enqueue" {
				args = append(args, "--enqueue")
			}
			out, errOut, code := run(t, "", args...)
			if code != 2 || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, %s %s; want 2 saying %q", code, out, errOut, tt.want)
			}
		})
	}
}
