package cli_test

import (
	"path/filepath"
	"strings"
	"testing"
)

// TestSuperviseDollarFlagsRefuseNonFinite: a dollar ceiling that is not a
// finite amount a ledger can hold (NaN, ±Inf, or more micro-dollars than
// 2^53-1) is a usage error (exit 2) naming the flag, before any run
// starts. Before, --budget-usd NaN ran the whole run with no dollar cap
// at all (NaN > 0 is false) and --budget-usd Inf was refused as "usd
// ceiling -9223372036854775808 is negative". §6 (a reservation is a
// validated quantity), behaviour 38.
func TestSuperviseDollarFlagsRefuseNonFinite(t *testing.T) {
	t.Parallel()
	manager := filepath.Join("..", "..", "examples", "profiles", "delegation-manager.json")
	cases := []struct {
		name, flag, value string
	}{
		{"budget NaN", "--budget-usd", "NaN"},
		{"budget +Inf", "--budget-usd", "Inf"},
		{"budget -Inf", "--budget-usd", "-Inf"},
		{"budget past 2^53 micro-dollars", "--budget-usd", "1e13"},
		{"worker NaN", "--worker-usd", "NaN"},
		{"worker +Inf", "--worker-usd", "+Inf"},
		{"worker past 2^53 micro-dollars", "--worker-usd", "1e300"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			out, errOut, code := run(t, "", "supervise", manager, "--task", "x", "--worker", noteWriter,
				tc.flag, tc.value, "--workspace", dir, "--db", filepath.Join(dir, "r.db"), "--json")
			if code != 2 || out != "" || !strings.Contains(errOut, tc.flag) {
				t.Errorf("%s %s: exit %d, stdout %d bytes, stderr %q; want a usage error (2) naming %s and no run",
					tc.flag, tc.value, code, len(out), errOut, tc.flag)
			}
		})
	}
}

// TestSuperviseNegativeMaxTurnsIsAUsageError: --max-turns -1 is refused
// before any run starts (exit 2, nothing on stdout). Before, the run
// started, journaled a run directory and ended no-winner driver-failed
// with error {name: "*errors.joinError" (now "Error"), message: "kernel: invalid
// options: MaxToolTurns: -1 is negative"} (exit 1). §3.6 maxTurns.
func TestSuperviseNegativeMaxTurnsIsAUsageError(t *testing.T) {
	t.Parallel()
	manager := filepath.Join("..", "..", "examples", "profiles", "delegation-manager.json")
	dir := t.TempDir()
	out, errOut, code := run(t, "", "supervise", manager, "--task", "x", "--worker", noteWriter,
		"--max-turns", "-1", "--workspace", dir, "--db", filepath.Join(dir, "r.db"), "--json")
	if code != 2 || out != "" || !strings.Contains(errOut, "--max-turns") {
		t.Errorf("--max-turns -1: exit %d, stdout %d bytes, stderr %q; want a usage error (2) naming --max-turns and no run", code, len(out), errOut)
	}
}

// TestExplicitZeroDollarCapIsAUsageError: --budget-usd 0 given on the
// command line is refused (exit 2, nothing on stdout) by supervise and
// mcp delegate alike. Before, the flag's zero value doubled as "no
// ceiling", so a run the caller capped at nothing ran uncapped. Leaving
// the flag out still means no dollar ceiling. §3.6 budget, behaviour 38.
func TestExplicitZeroDollarCapIsAUsageError(t *testing.T) {
	t.Parallel()
	manager := filepath.Join("..", "..", "examples", "profiles", "delegation-manager.json")
	for _, zero := range []string{"0", "-0", "0.0"} {
		for name, args := range map[string][]string{
			"supervise":    {"supervise", manager, "--task", "x", "--worker", noteWriter, "--json"},
			"mcp delegate": {"mcp", "delegate", "--manager", supManager, "--worker", noteWriter},
		} {
			t.Run(name+" "+zero, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				args := append(append([]string{}, args...), "--budget-usd", zero, "--db", filepath.Join(dir, "r.db"))
				if name == "supervise" {
					args = append(args, "--workspace", dir)
				}
				out, errOut, code := run(t, "", args...)
				if code != 2 || out != "" || !strings.Contains(errOut, "--budget-usd 0") || !strings.Contains(errOut, "leave the flag out") {
					t.Errorf("%s --budget-usd %s: exit %d, stdout %d bytes, stderr %q; want a usage error (2) naming the flag and both ways out",
						name, zero, code, len(out), errOut)
				}
			})
		}
	}
}
