package cli

import (
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"
)

// checkText refuses operator text (an argument or flag value named what)
// that is not UTF-8: it is written into JSON requests, journals and run
// records, which hold Unicode text only, so it is a usage error when the
// command line is parsed — never a failure deep inside after work
// started, nor a conflict with a request its replacement characters
// wrote.
func checkText(what, v string) error {
	if !utf8.ValidString(v) {
		return usage("%s %s is not valid UTF-8: give it as UTF-8 text (check the terminal's or script's encoding)", what, quoteShort(v))
	}
	return nil
}

// quoteShort quotes v (Go syntax: bad bytes and controls escaped), its
// first 64 bytes only when it is longer.
func quoteShort(v string) string {
	const limit = 64
	if len(v) <= limit {
		return fmt.Sprintf("%q", v)
	}
	return fmt.Sprintf("%q… (%d bytes)", v[:limit], len(v))
}

// checkPath refuses a path (named what) that is not UTF-8: it is shown
// and recorded as text.
func checkPath(what, v string) error {
	if !utf8.ValidString(v) {
		return usage("%s %s is not valid UTF-8: name a directory whose path is UTF-8 (rename it, or reach it through a UTF-8 symlink)", what, quoteShort(v))
	}
	return nil
}

// checkTexts is checkText over pairs of (what, value).
func checkTexts(pairs ...string) error {
	for i := 0; i+1 < len(pairs); i += 2 {
		if err := checkText(pairs[i], pairs[i+1]); err != nil {
			return err
		}
	}
	return nil
}

// checkRef refuses a worker reference (a worker id, a label or a profile
// name) named what that is not UTF-8 or holds a control character (C0,
// DEL or C1): no worker is named so, and the reference is written into
// requests and file names.
func checkRef(what, v string) error {
	return checkName(what, v, "name the worker by its id, label or profile name")
}

// checkName refuses a name (named what) that is not UTF-8 or holds a
// control character, saying hint.
func checkName(what, v, hint string) error {
	if err := checkText(what, v); err != nil {
		return err
	}
	if i := strings.IndexFunc(v, unicode.IsControl); i >= 0 {
		r, _ := utf8.DecodeRuneInString(v[i:])
		return usage("%s %q holds the control character %U at byte %d: %s", what, v, r, i, hint)
	}
	return nil
}

// checkRunID refuses a run id (named what) that could not name the run's
// directory under the workspace (supervise.RunDirFor): one that is not
// UTF-8, holds a control character, or is not one plain path element
// ("/" or "\", ".", "..").
func checkRunID(what, v string) error {
	if err := checkName(what, v, "a run id names the run's directory; use letters, digits, '.', '_' and '-'"); err != nil {
		return err
	}
	if v == "." || v == ".." || strings.ContainsAny(v, `/\`) {
		return usage("%s %q is not a single directory name: a run id names the run's directory under the workspace, so it holds no '/' or '\\' and is not '.' or '..'", what, v)
	}
	return nil
}

// checkOperatorRun checks the text agentrt supervise and agentrt graph
// journal before anything runs: --task and --expect (checkText; a given
// --expect that is empty passes everything and is refused), and a given
// --run-id (checkRunID; given empty, checkGivenNotEmpty).
func checkOperatorRun(cmd *cobra.Command, task, expect, runID string) error {
	if err := checkTexts("--task", task, "--expect", expect); err != nil {
		return err
	}
	if err := checkGivenNotEmpty(cmd, "run-id"); err != nil {
		return err
	}
	if cmd.Flags().Changed("expect") && expect == "" {
		// Every result contains the empty text: the check would pass
		// whatever a worker returned (--check-cmd "" is refused alike).
		return usage("--expect is empty, and every result contains the empty text: give the text a delivered result must contain, or leave the flag out (a result is then delivered when it is not empty)")
	}
	if runID != "" {
		return checkRunID("--run-id", runID)
	}
	return nil
}

// checkGivenNotEmpty refuses each flag of names given with an empty
// value (--run-id=): the user typed a value, and an empty one names
// nothing (it is not the flag's default, such as "generate one").
func checkGivenNotEmpty(cmd *cobra.Command, names ...string) error {
	for _, name := range names {
		if f := cmd.Flags().Lookup(name); f != nil && cmd.Flags().Changed(name) && f.Value.String() == "" {
			return usage("--%s is empty: give a value, or leave the flag out (%s)", name, f.Usage)
		}
	}
	return nil
}

// checkKey refuses an idempotency key (named what) that is not UTF-8 or
// holds a control character (a NUL no store keeps).
func checkKey(what, v string) error {
	return checkName(what, v, "an idempotency key is text you choose to name the request; use printable characters")
}

// runArg refuses a RUN argument (a run id in the store) that is not
// UTF-8 (checkText), as the command line is parsed.
func runArg(_ *cobra.Command, args []string) error {
	if len(args) > 0 {
		return checkText("RUN", args[0])
	}
	return nil
}
