package cli

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/kernel"
	"github.com/agentrt/agentrt/store"
)

// `agentrt run` says when the environment its run created was not
// confirmed destroyed (kernel.Result.TeardownUnconfirmed), in its
// summary and as teardownUnconfirmed in --json; a run whose teardown
// was confirmed shows neither.
func TestRunSummaryShowsUnconfirmedTeardown(t *testing.T) {
	why := "environment env-1 was not confirmed destroyed (the sandbox API answered 503); it may still exist: destroy it with its provider"
	for _, tc := range []struct {
		name     string
		teardown string
	}{{"confirmed", ""}, {"unconfirmed", why}} {
		t.Run(tc.name, func(t *testing.T) {
			r := &kernel.Result{RunID: "run-1", Status: store.StatusCompleted, Delivered: true, AuthoredDigest: "sha256:" + strings.Repeat("0", 64),
				EnvironmentID: "env-1", TeardownUnconfirmed: tc.teardown}
			var sb strings.Builder
			printResult(&sb, r, "the store")
			line := "  teardown  NOT confirmed: " + why + "\n"
			if got := strings.Contains(sb.String(), line); got != (tc.teardown != "") {
				t.Errorf("summary:\n%s\nshows the teardown line: %v, want %v", sb.String(), got, tc.teardown != "")
			}
			v, ok := resultValue(r).Get("teardownUnconfirmed")
			switch {
			case tc.teardown == "" && ok:
				t.Errorf("--json has teardownUnconfirmed %s for a confirmed teardown", canonjson.Marshal(v))
			case tc.teardown != "" && (!ok || v.Str() != why):
				t.Errorf("--json teardownUnconfirmed = %v (present %v), want %q", v, ok, why)
			}
		})
	}
}
