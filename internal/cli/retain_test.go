package cli_test

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/providers/scripted"
)

// sharedProvider is one scripted provider every invocation reaches (each
// through its own client), as processes reach a provider outside them.
func sharedProvider(pause time.Duration) func(string, string, string, string) (contract.Provider, error) {
	first, second, ms := "first part", "second part", pause.Milliseconds()
	p := scripted.New(&scripted.Script{Turns: []scripted.Turn{{Repeat: true, Steps: []scripted.Step{
		{Text: &first}, {DelayMS: &ms}, {Text: &second}}}}}, scripted.Options{})
	return func(string, string, string, string) (contract.Provider, error) { return p.Reconnect(), nil }
}

func runWith(t *testing.T, open func(string, string, string, string) (contract.Provider, error), args ...string) (string, string, int) {
	t.Helper()
	var out, errb bytes.Buffer
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	code := cli.MainWith(ctx, args, cli.IO{In: strings.NewReader(""), Out: &out, Err: &errb}, open)
	return out.String(), errb.String(), code
}

// jsonLines decodes NDJSON output.
func jsonLines(t *testing.T, s string) []canonjson.Value {
	t.Helper()
	var out []canonjson.Value
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		out = append(out, decode(t, line))
	}
	return out
}

// FD-08: agentrt run --retain prints the control ref first; agentrt runs
// attach RUN re-attaches from another invocation (its own store handle and
// provider client) and streams the events and the result; attach resumes
// after a cursor; runs recover reports recovered. On SQLite and
// PostgreSQL.
func TestRunRetainAttachRecover(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"sqlite", func(t *testing.T) []string { return []string{"--db", filepath.Join(t.TempDir(), "agentrt.db")} }},
		{"postgres", func(t *testing.T) []string { return []string{"--database", pgtest.Schema(t)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.store(t)
			open := sharedProvider(200 * time.Millisecond)
			out, errOut, code := runWith(t, open, append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--detach", "--json"}, db...)...)
			if code != 0 {
				t.Fatalf("run --retain: exit %d %s%s", code, out, errOut)
			}
			ref := member(decode(t, strings.TrimSpace(out)), "controlRef")
			record := member(ref, "record").Str()
			if !strings.HasPrefix(record, "retained-") || member(member(ref, "run"), "executionId").Str() == "" {
				t.Fatalf("control ref %s", canonjson.Marshal(ref))
			}

			out, errOut, code = runWith(t, open, append([]string{"runs", "attach", record, "--json"}, db...)...)
			if code != 0 {
				t.Fatalf("runs attach: exit %d %s%s", code, out, errOut)
			}
			lines := jsonLines(t, out)
			result := lines[len(lines)-1]
			if !member(result, "success").Bool() || member(result, "status").Str() != "completed" || !strings.Contains(member(result, "text").Str(), "second part") {
				t.Fatalf("attach result %s", canonjson.Marshal(result))
			}
			events := lines[:len(lines)-1]
			if len(events) < 2 {
				t.Fatalf("attach printed %d events", len(events))
			}
			firstCursor := member(events[0], "cursor").Str()

			out, errOut, code = runWith(t, open, append([]string{"runs", "attach", record, "--after-cursor", firstCursor, "--after-sequence", "1"}, db...)...)
			if code != 0 || strings.Contains(out, "   1  ") || !strings.Contains(out, "   2  ") || !strings.Contains(out, "completed") {
				t.Fatalf("attach after the first event: exit %d\n%s%s", code, out, errOut)
			}
			out, _, code = runWith(t, open, append([]string{"runs", "attach", record, "--after-cursor", "not-the-anchor", "--after-sequence", "1"}, db...)...)
			if code != cli.ExitFailed {
				t.Fatalf("attach after a changed anchor: exit %d\n%s", code, out)
			}

			out, errOut, code = runWith(t, open, append([]string{"runs", "recover", record, "--json"}, db...)...)
			if code != 0 {
				t.Fatalf("runs recover: exit %d %s%s", code, out, errOut)
			}
			rec := decode(t, out)
			if member(rec, "outcome").Str() != "recovered" || member(rec, "via").Str() != "reattached" {
				t.Fatalf("recover %s", out)
			}

			out, _, code = runWith(t, open, append([]string{"runs", "show", record}, db...)...)
			if code != 0 || !strings.Contains(out, "kind      retained") || !strings.Contains(out, "next      agentrt runs attach "+record) {
				t.Fatalf("runs show: exit %d\n%s", code, out)
			}
			out, _, code = runWith(t, open, append([]string{"runs", "list"}, db...)...)
			if code != 0 || !strings.Contains(out, "retained on scripted, turn turn-1, dispatched") {
				t.Fatalf("runs list: exit %d\n%s", code, out)
			}

			// Without --detach, run --retain prints the control ref and then
			// follows the run to its result.
			out, errOut, code = runWith(t, open, append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--key", "k-follow"}, db...)...)
			if code != 0 || !strings.HasPrefix(out, "retained run retained-") || !strings.Contains(out, "agentrt runs attach") || !strings.Contains(out, "second part") {
				t.Fatalf("run --retain: exit %d\n%s%s", code, out, errOut)
			}
		})
	}
}

// A provider that lived in a process that died no longer holds the run:
// attach fails, recover reports not_found (nothing left to clean up).
func TestAttachAfterTheProviderIsGone(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agentrt.db")
	out, errOut, code := runWith(t, sharedProvider(0), "run", noteWriter, "--task", "t", "--retain", "--detach", "--json", "--db", db)
	if code != 0 {
		t.Fatalf("run --retain: exit %d %s%s", code, out, errOut)
	}
	record := member(member(decode(t, strings.TrimSpace(out)), "controlRef"), "record").Str()
	// cli.Main opens a new in-process scripted provider: another process.
	out, errOut, code = run(t, "", "runs", "attach", record, "--db", db)
	if code != cli.ExitFailed || !strings.Contains(errOut, "no longer") {
		t.Fatalf("attach: exit %d %s%s", code, out, errOut)
	}
	out, _, code = run(t, "", "runs", "recover", record, "--db", db)
	if code != cli.ExitFailed || !strings.Contains(out, "not_found") {
		t.Fatalf("recover: exit %d %s", code, out)
	}
	if _, errOut, code := run(t, "", "runs", "attach", "retained-none", "--db", db); code != cli.ExitFailed || !strings.Contains(errOut, "no retained run") {
		t.Fatalf("attach of no run: exit %d %s", code, errOut)
	}
}

// The retained flags are refused where they do not apply.
func TestRetainFlagUsage(t *testing.T) {
	db := filepath.Join(t.TempDir(), "agentrt.db")
	for _, args := range [][]string{
		{"--detach"}, {"--key", "k"}, {"--retain", "--expect", "x"}, {"--retain", "--stage", "1"},
	} {
		if _, errOut, code := run(t, "", append([]string{"run", noteWriter, "--task", "t", "--db", db}, args...)...); code != cli.ExitUsage {
			t.Errorf("%v: exit %d %s, want %d", args, code, errOut, cli.ExitUsage)
		}
	}
}

// agentrt runs cancel on a retained run asks its provider under an
// operation id: accepted and waited for, then replayed with the same id
// and reason, and a conflict under the same id with another reason. The
// record stays readable (the kernel's cancel request is not written into
// it).
func TestRunsCancelRetained(t *testing.T) {
	db := []string{"--db", filepath.Join(t.TempDir(), "agentrt.db")}
	open := sharedProvider(time.Minute)
	out, errOut, code := runWith(t, open, append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--detach", "--json"}, db...)...)
	if code != 0 {
		t.Fatalf("run --retain: exit %d %s%s", code, out, errOut)
	}
	record := member(member(decode(t, strings.TrimSpace(out)), "controlRef"), "record").Str()
	cancel := append([]string{"runs", "cancel", record, "--operation-id", "op-1", "--reason", "stop", "--json"}, db...)
	out, errOut, code = runWith(t, open, cancel...)
	if v := decode(t, out); code != 0 || member(v, "outcome").Str() != "accepted" || member(v, "status").Str() != "cancelled" {
		t.Fatalf("cancel: exit %d\n%s%s", code, out, errOut)
	}
	out, _, code = runWith(t, open, cancel...)
	if v := decode(t, out); code != 0 || member(v, "outcome").Str() != "replayed" {
		t.Fatalf("cancel again: exit %d\n%s", code, out)
	}
	out, _, code = runWith(t, open, append([]string{"runs", "cancel", record, "--operation-id", "op-1", "--reason", "other"}, db...)...)
	if code != cli.ExitFailed || !strings.Contains(out, "cancel conflict") {
		t.Fatalf("conflicting cancel: exit %d\n%s", code, out)
	}
	out, _, code = runWith(t, open, append([]string{"runs", "show", record}, db...)...)
	if code != 0 || !strings.Contains(out, "status    cancelled") {
		t.Fatalf("runs show after the cancel: exit %d\n%s", code, out)
	}
}
