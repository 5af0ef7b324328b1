package cli_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/cli"
	"github.com/agentrt/agentrt/providers/scripted"
)

// ENV-10 across a restart at the CLI: agentrt run --retain keeps the
// provider's keyed create in the run store. A start whose create answer
// was lost is retried with the same --key by a process whose provider
// restarted (its keys and environments gone): the key's record in the
// run store refuses it, naming the environment that no longer exists,
// rather than make a second environment under the key. Retried against
// the provider that still holds the environment, the key replays it:
// one environment, and the run completes. On SQLite and PostgreSQL.
func TestRunRetainKeyedCreateSurvivesRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range retainStores() {
		t.Run(tc.name, func(t *testing.T) {
			db := tc.store(t)
			prof := writeFile(t, "seated.json", seatedWriter)
			p := subscriptionProvider()
			client := func() *scripted.Provider { return p.Reconnect() }
			lost := func(string, string, string, string) (contract.Provider, error) { return createLost{client()}, nil }
			out, errOut, code := runWith(t, lost, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-restart"}, db...)...)
			if code != cli.ExitFailed {
				t.Fatalf("run --retain whose create answer was lost: exit %d\n%s%s", code, out, errOut)
			}
			restarted := subscriptionProvider() // the provider lost its environments
			gone := func(string, string, string, string) (contract.Provider, error) { return restarted, nil }
			out, errOut, code = runWith(t, gone, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-restart"}, db...)...)
			if code != cli.ExitFailed || !strings.Contains(errOut, "no longer exists") || restarted.Creates() != 0 {
				t.Fatalf("run --retain again on a restarted provider: exit %d, %d creates\n%s%s", code, restarted.Creates(), out, errOut)
			}
			open := func(string, string, string, string) (contract.Provider, error) { return client(), nil }
			out, errOut, code = runWith(t, open, append([]string{"run", prof, "--task", "Write it.", "--retain", "--key", "k-restart"}, db...)...)
			if code != 0 || !strings.Contains(out, "completed") {
				t.Fatalf("run --retain again: exit %d\n%s%s", code, out, errOut)
			}
			if p.Creates() != 1 {
				t.Errorf("%d environments; the retry must replay the key's one", p.Creates())
			}
		})
	}
}
