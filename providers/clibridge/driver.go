package clibridge

import (
	"fmt"
	"path/filepath"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// driver is what the bridge knows about one harness CLI: how to find and
// isolate it, what of a profile it can apply, how to turn a profile and
// a turn into an argv and files (materialize), and how to read its
// stream (a normalizer). Adding a harness is adding a driver.
type driver interface {
	harness() harness.Type
	// executable is the name looked up in PATH when Options.Binary is
	// empty; npmPackage is the package that installs it.
	executable() string
	npmPackage() string
	// ownedEnv are the upper-case variable names the driver sets for the
	// harness process; callers may not set them.
	ownedEnv() []string
	// profileCaps is what of a profile the driver applies; the
	// provider's capability document declares exactly this.
	profileCaps() contract.ProfileCapabilities
	// check refuses, before any effect, what of p (beyond the capability
	// document's flags) the driver cannot apply.
	check(p *profile.Profile) []error
	// materialize turns one admitted turn into the process plan.
	materialize(t *turnSpec) (*plan, error)
	// normalizer returns a fresh stream normalizer for one turn.
	normalizer(t *turnSpec) normalizer
}

// driverFor returns the driver of h.
func driverFor(h harness.Type) (driver, error) {
	switch h {
	case harness.ClaudeCode:
		return claudeDriver{}, nil
	case harness.Codex:
		return codexDriver{}, nil
	case harness.OpenCode:
		return opencodeDriver{}, nil
	}
	return nil, fmt.Errorf("%w: %q (this bridge drives %s, %s and %s)", ErrHarnessUnsupported, h, harness.ClaudeCode, harness.Codex, harness.OpenCode)
}

// unsupported is the refusal of the profile feature at path.
func unsupported(path, reason string) error {
	return contract.Unsupported{Err: &profile.UnsupportedError{Path: path, Reason: reason}}
}

// checkCommon refuses, for driver d, what no harness process of the
// bridge can apply: another harness, seats, connections, confidential
// execution, a model provider other than vendor (the one API the harness
// speaks; vendor "" leaves the provider to the driver), a small model, token ceilings and an effort without a native
// control.
func checkCommon(d driver, vendor, api string, p *profile.Profile) []error {
	h := d.harness()
	var errs []error
	refuse := func(path, reason string) { errs = append(errs, unsupported(path, reason)) }
	if p.Harness != "" && p.Harness != h {
		refuse("/harness", fmt.Sprintf("this environment drives %s, not %s", h, p.Harness))
	}
	if len(p.Seats) > 0 {
		refuse("/seats", "the bridge runs one harness process with the configured key; it cannot select seats")
	}
	if len(p.Connections) > 0 {
		refuse("/connections", "the bridge cannot grant external connections")
	}
	if p.Confidential != nil {
		refuse("/confidential", "the bridge runs on this machine, not in a confidential environment")
	}
	if m := p.Model; m != nil {
		if m.Provider != nil && vendor != "" && *m.Provider != vendor {
			refuse("/model/provider", fmt.Sprintf("%s speaks %s only", h, api))
		}
		if m.Small != nil {
			refuse("/model/small", fmt.Sprintf("the bridge does not set %s's small model", h))
		}
		if m.MaxVisibleOutputTokens != nil || m.MaxReasoningTokens != nil || m.MaxTotalOutputTokens != nil {
			refuse("/model", fmt.Sprintf("the bridge cannot bound %s's output tokens", h))
		}
		if m.ReasoningEffort != "" {
			if _, ok := harness.NativeReasoningControl(h, m.ReasoningEffort); !ok {
				refuse("/model/reasoningEffort", fmt.Sprintf("%s has no native control for effort %q", h, m.ReasoningEffort))
			}
		}
	}
	return errs
}

// turnModel is the model a turn asks for: the turn's, else the
// profile's default, else the provider's (Options.Model; "" for the
// harness's own default).
func turnModel(t *turnSpec, p *profile.Profile) string {
	if t.model != "" {
		return t.model
	}
	if p != nil && p.Model != nil && p.Model.Default != nil {
		return *p.Model.Default
	}
	return t.fallbackModel
}

// nativeEffort is the native token of the profile's reasoning effort for
// harness h ("" when the profile asks for none).
func nativeEffort(h harness.Type, p *profile.Profile) (harness.ReasoningEffort, string, error) {
	if p.Model == nil || p.Model.ReasoningEffort == "" {
		return "", "", nil
	}
	native, ok := harness.NativeReasoningControl(h, p.Model.ReasoningEffort)
	if !ok {
		return "", "", fmt.Errorf("clibridge: effort %q: %w", p.Model.ReasoningEffort, contract.ErrUnsupported)
	}
	return p.Model.ReasoningEffort, native, nil
}

// dirs are one environment's directories, all absolute.
type dirs struct {
	// root holds the others and is removed by Destroy.
	root string
	// work is the harness's working directory (the workspace).
	work string
	// home is the harness's HOME; config its configuration directory.
	home, config string
	// tmp is the harness's TMPDIR.
	tmp string
	// bridge holds the files the bridge materializes (never in work).
	bridge string
}

// turnSpec is one admitted turn, as a driver sees it.
type turnSpec struct {
	// provider is the provider name native session observations carry.
	provider string
	// turn is the environment's turn number (from 1), for file names and
	// event ids.
	turn    int
	prompt  string
	profile *profile.Profile
	// model is the turn's model override ("" none); fallbackModel the
	// provider's default (Options.Model).
	model, fallbackModel string
	// timeout is the turn's own deadline (0 none).
	timeout time.Duration
	dirs    dirs
	baseURL string
	apiKey  string
}

// plan is what one turn runs: the argv after the binary, the files
// written before the process starts, the harness-specific environment
// (which may carry secrets) and the receipt of what was applied (which
// never does).
type plan struct {
	args    []string
	files   []planFile
	env     map[string]string
	receipt Receipt
}

// addFile adds a file to write before spawning and its receipt entry:
// the path relative to the environment and the digest of the content
// with the turn's secrets (the key and the endpoint) redacted, so that
// the receipt pins what was applied without carrying a digest of a
// secret.
func (pl *plan) addFile(t *turnSpec, path string, content []byte, purpose string) string {
	rel, _ := filepath.Rel(t.dirs.root, path)
	pl.files = append(pl.files, planFile{path: path, rel: rel, content: content})
	pl.receipt.Files = append(pl.receipt.Files, ReceiptFile{Path: rel, Digest: textDigest(string(redact(content, t.secrets()))), Purpose: purpose})
	return rel
}

// planFile is one file the bridge writes before spawning.
type planFile struct {
	// path is absolute; rel is what the receipt shows (relative to the
	// environment root).
	path, rel string
	content   []byte
}

// normalizer reads one turn's native stream. line is called for every
// stdout line, in order, and returns the events it maps to; end is
// called once when the process has exited and returns the turn's
// terminal event (and any final events before it).
type normalizer interface {
	line(b []byte) []contract.EnvironmentEvent
	end(x exit) []contract.EnvironmentEvent
	// outcome is what the stream established (native session, served
	// model, usage); valid after end.
	outcome() Outcome
}

// lastWorder is a normalizer that knows when its harness wrote its last
// word (its result line): from then on the harness has exitGrace to
// exit.
type lastWorder interface {
	said() bool
}

// aborter is a normalizer that can tell, from a line, that the turn
// cannot run as the profile declared (abortReason non-empty): the bridge
// then stops the process and the turn fails saying why.
type aborter interface {
	abortReason() string
}

// exit is how the harness process ended.
type exit struct {
	// aborted, when non-empty, says why the bridge stopped the process
	// (aborter): the turn failed.
	aborted string
	// cancelled: the caller cancelled the turn and the bridge killed the
	// process group.
	cancelled bool
	// timedOut, when non-zero, is the turn's own deadline, which elapsed:
	// the bridge killed the process group and the turn failed.
	timedOut time.Duration
	// lingered, when non-zero, is the grace the harness overstayed after
	// its last word: the bridge killed the process group.
	lingered time.Duration
	// code is the exit status (-1 when killed by a signal or not
	// started).
	code int
	// err is a failure to run or read the process, if any.
	err error
	// stderr is the tail of the process's standard error, redacted.
	stderr string
}
