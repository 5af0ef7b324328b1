package cli_test

import (
	"bufio"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/internal/pgtest"
	"github.com/agentrt/agentrt/providers/remote"
)

// FD-08, RES-05, RES-06: the process that started a retained run is
// killed with SIGKILL mid-run; the run, owned by a provider in another
// process (agentrt serve), goes on, and a third process re-attaches by the
// record id through the shared run store, receiving the remaining events
// and the result under the identity the starter printed.
//
// The provider is agentrt serve (scripted) reached through
// providers/remote, which must declare retainedControl. On SQLite and
// PostgreSQL run stores.
func TestRetainedRunSurvivesSIGKILLOfItsStarter(t *testing.T) {
	for _, tc := range []struct {
		name  string
		store func(t *testing.T) []string
	}{
		{"sqlite", func(t *testing.T) []string { return []string{"--db", filepath.Join(t.TempDir(), "agentrt.db")} }},
		{"postgres", func(t *testing.T) []string { return []string{"--database", pgtest.Schema(t)} }},
	} {
		t.Run(tc.name, func(t *testing.T) { retainedSurvivesSIGKILL(t, tc.store(t)) })
	}
}

func retainedSurvivesSIGKILL(t *testing.T, db []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	script := writeFile(t, "slow.json", `{"turns":[{"repeat":true,"steps":[{"text":"first part "},{"delayMs":1500},{"text":"second part"}]}]}`)
	url := startServe(t, "--provider", "scripted", "--script", script)
	t.Setenv("AGENTRT_SERVE_TOKEN", serveToken)
	p, err := remote.New(remote.Options{BaseURL: url, Token: serveToken})
	if err != nil {
		t.Fatal(err)
	}
	caps, err := p.Capabilities(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if caps.RetainedControl == nil {
		t.Fatal("agentrt serve (scripted) through providers/remote does not declare retainedControl")
	}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	starter := startChild(t, func(c *exec.Cmd) { c.Stdout = w }, append([]string{"run", noteWriter, "--task", "Work long.", "--retain", "--json",
		"--provider", "remote", "--base-url", url}, db...)...)
	w.Close()
	lines := bufio.NewScanner(r)
	var ref canonjson.Value
	var cursor string
	var sequence int64
	for lines.Scan() {
		v := decode(t, lines.Text())
		if c, ok := v.Get("controlRef"); ok {
			ref = c
			continue
		}
		if strings.Contains(string(canonjson.Marshal(v)), "first part") {
			cursor, sequence = member(v, "cursor").Str(), int64(member(v, "sequence").Float())
			break
		}
	}
	if !ref.IsValid() || cursor == "" {
		t.Fatalf("the starter printed no control ref or no first event (%v)", lines.Err())
	}
	if err := starter.Process.Kill(); err != nil { // SIGKILL
		t.Fatal(err)
	}
	_ = starter.Wait()
	r.Close()

	record := member(ref, "record").Str()
	out, errOut, code := run(t, "", append([]string{"runs", "attach", record, "--provider", "remote", "--base-url", url, "--json",
		"--after-cursor", cursor, "--after-sequence", strconv.FormatInt(sequence, 10)}, db...)...)
	if code != 0 {
		t.Fatalf("runs attach after the kill: exit %d\n%s%s", code, out, errOut)
	}
	got := jsonLines(t, out)
	result := got[len(got)-1]
	if !member(result, "success").Bool() || !strings.Contains(member(result, "text").Str(), "second part") {
		t.Fatalf("result after the kill: %s", canonjson.Marshal(result))
	}
	if first := member(got[0], "sequence").Float(); len(got) < 2 || int64(first) != sequence+1 {
		t.Fatalf("attach resumed at sequence %v, want %d", first, sequence+1)
	}
	out, _, code = run(t, "", append([]string{"runs", "recover", record, "--provider", "remote", "--base-url", url, "--json"}, db...)...)
	if code != 0 || !canonjson.Equal(member(decode(t, out), "controlRef"), ref) {
		t.Fatalf("the identity changed across the kill: exit %d\n%s\nwant %s", code, out, canonjson.Marshal(ref))
	}
}
