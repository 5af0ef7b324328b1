package cli_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The commands the Examples of agentrt supervise, graph, steer and cancel
// --help show run as shown, copied literally, from a directory laid out as
// the repository's root (examples/profiles, examples/graph): each
// supervise and graph command exits 0; a steer or cancel of the then
// finished run is answered (exit 0 or 1, never a usage error). Not
// parallel: it changes the working directory and $AGENTRT_HOME.
func TestHelpExamplesRunAsShown(t *testing.T) {
	root := t.TempDir()
	for _, f := range []string{"profiles/delegation-manager.json", "profiles/note-writer.json", "graph/review.json"} {
		b, err := os.ReadFile(filepath.Join("..", "..", "examples", f))
		if err != nil {
			t.Fatal(err)
		}
		dst := filepath.Join(root, "examples", f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("AGENTRT_HOME", t.TempDir())
	t.Chdir(root)
	ran := 0
	for _, command := range []string{"supervise", "graph", "steer", "cancel"} {
		help, errOut, code := run(t, "", command, "--help")
		if code != 0 {
			t.Fatalf("%s --help: exit %d\n%s", command, code, errOut)
		}
		_, examples, ok := strings.Cut(help, "\nExamples:\n")
		if !ok {
			t.Errorf("agentrt %s --help shows no Examples", command)
			continue
		}
		examples, _, _ = strings.Cut(examples, "\n\n"+"Available Commands:")
		examples, _, _ = strings.Cut(examples, "\n\nFlags:")
		for line := range strings.SplitSeq(examples, "\n") {
			line = strings.TrimSpace(line)
			if !strings.HasPrefix(line, "agentrt ") {
				continue
			}
			args := shellWords(t, strings.TrimPrefix(line, "agentrt "))
			out, errOut, code := run(t, "", args...)
			ran++
			switch args[0] {
			case "supervise", "graph", "top":
				if code != 0 {
					t.Errorf("%s: exit %d, want 0\nstdout: %s\nstderr: %s", line, code, out, errOut)
				}
			default:
				if code != 0 && code != 1 || out == "" {
					t.Errorf("%s: exit %d, want the run's answer (0 or 1) on stdout\nstdout: %s\nstderr: %s", line, code, out, errOut)
				}
			}
		}
	}
	if ran < 10 {
		t.Errorf("ran %d example commands, want at least 10", ran)
	}
}

// shellWords splits s as /bin/sh would a command line of plain words and
// double-quoted strings (all the Examples use).
func shellWords(t *testing.T, s string) []string {
	t.Helper()
	var words []string
	var w strings.Builder
	in, quoted := false, false
	for _, r := range s {
		switch {
		case r == '"':
			quoted, in = !quoted, true
		case r == ' ' && !quoted:
			if in {
				words = append(words, w.String())
				w.Reset()
				in = false
			}
		default:
			w.WriteRune(r)
			in = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quote in %q", s)
	}
	if in {
		words = append(words, w.String())
	}
	return words
}
