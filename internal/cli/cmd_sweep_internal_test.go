package cli

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// Every subcommand agentrt help lists (and theirs, down the tree) keeps
// one contract: --help prints its help on stdout and exits 0; an unknown
// flag, and (for a command that needs arguments) no arguments, are usage
// errors: a message on stderr, nothing on stdout, exit 2.
func TestEveryCommandHelpAndUsageErrors(t *testing.T) {
	var paths [][]string
	var walk func(c *cobra.Command, path []string)
	walk = func(c *cobra.Command, path []string) {
		for _, sub := range c.Commands() {
			if sub.Hidden {
				continue
			}
			p := append(append([]string(nil), path...), sub.Name())
			paths = append(paths, p)
			walk(sub, p)
		}
	}
	walk(newRoot(IO{}, openProvider), nil)
	if len(paths) < 20 {
		t.Fatalf("found %d commands; the walk is broken", len(paths))
	}
	exec := func(args []string) (string, string, int) {
		var out, errb bytes.Buffer
		code := Main(context.Background(), args, IO{In: strings.NewReader(""), Out: &out, Err: &errb})
		return out.String(), errb.String(), code
	}
	for _, p := range paths {
		name := strings.Join(p, " ")
		t.Run(name, func(t *testing.T) {
			out, errOut, code := exec(append(append([]string(nil), p...), "--help"))
			if code != ExitOK || !strings.Contains(out, "Usage:") || errOut != "" {
				t.Errorf("--help: exit %d, stdout %d bytes, stderr %q; want exit 0, help on stdout", code, len(out), errOut)
			}
			out, errOut, code = exec(append(append([]string(nil), p...), "--no-such-flag"))
			if code != ExitUsage || out != "" || !strings.Contains(errOut, "unknown flag") {
				t.Errorf("unknown flag: exit %d, stdout %q, stderr %q; want exit 2, the error on stderr", code, out, errOut)
			}
			cmd, _, err := newRoot(IO{}, openProvider).Find(p)
			if err != nil {
				t.Fatal(err)
			}
			// A group (agentrt runs: its Use is its name alone) needs one
			// of its commands; another command needs arguments when its
			// Args refuses none.
			group := cmd.HasSubCommands() && strings.TrimSpace(cmd.Use) == cmd.Name()
			if !group && (cmd.Args == nil || cmd.Args(cmd, nil) == nil) {
				return // runs without arguments: not a usage error
			}
			out, errOut, code = exec(p)
			if code != ExitUsage || out != "" || !strings.Contains(errOut, "agentrt") {
				t.Errorf("no arguments: exit %d, stdout %q, stderr %q; want exit 2, the error on stderr", code, out, errOut)
			}
			if group {
				out, errOut, code = exec(append(append([]string(nil), p...), "no-such-command"))
				if code != ExitUsage || out != "" || !strings.Contains(errOut, "no-such-command") {
					t.Errorf("unknown command: exit %d, stdout %q, stderr %q; want exit 2, the error on stderr", code, out, errOut)
				}
			}
		})
	}
	// agentrt itself: help with --help, a usage error bare or with a
	// command it does not have.
	if out, errOut, code := exec([]string{"--help"}); code != ExitOK || !strings.Contains(out, "Usage:") || errOut != "" {
		t.Errorf("agentrt --help: exit %d, stderr %q", code, errOut)
	}
	if out, errOut, code := exec([]string{"help", "runs", "list"}); code != ExitOK || !strings.Contains(out, "agentrt runs list") || errOut != "" {
		t.Errorf("agentrt help runs list: exit %d, stderr %q", code, errOut)
	}
	for _, args := range [][]string{nil, {"no-such-command"}, {"--no-such-flag"}, {"help", "no-such-command"}, {"help", "runs", "no-such-command"}} {
		if out, errOut, code := exec(args); code != ExitUsage || out != "" || errOut == "" {
			t.Errorf("agentrt %v: exit %d, stdout %q, stderr %q; want exit 2, the error on stderr", args, code, out, errOut)
		}
	}
}
