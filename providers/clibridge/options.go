package clibridge

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
)

// Options configures New. The zero value asks for claude-code found in
// PATH, with no model endpoint override and work directories under the
// system temporary directory.
type Options struct {
	// Harness selects the harness CLI; "" means harness.ClaudeCode. A
	// harness without a driver is refused (ErrHarnessUnsupported).
	Harness harness.Type
	// Name is the provider name; "" means "clibridge-" + the harness. It
	// must be a lower-case provider name (letters, digits, hyphens), since
	// native session observations carry it.
	Name string
	// Binary is the path of the harness executable; "" looks the
	// harness's executable name up in PATH. A binary that is not there is
	// refused with a *BinaryNotFoundError naming the npm package.
	Binary string
	// Env holds caller environment variables for every harness process.
	// Runtime process-control names (profile.
	// IsRuntimeProcessControlEnvironmentName) and the names the bridge
	// sets itself are refused (*EnvRefusedError).
	Env map[string]string
	// BaseURL is the model endpoint the harness calls (for claude-code,
	// ANTHROPIC_BASE_URL; for codex, the base_url of the model provider
	// the bridge configures, the API base including /v1; for opencode,
	// the OpenAI-compatible base URL, such as "http://host/v1", of a
	// provider the bridge defines); "" leaves the harness's default. It is
	// never logged and never appears in events or receipts.
	BaseURL string
	// APIKey is the model endpoint's key (for claude-code,
	// ANTHROPIC_API_KEY; for codex, OPENAI_API_KEY, the configured
	// provider's env_key; for opencode, the bridge provider's apiKey).
	// It is never logged and never appears in events or receipts.
	APIKey string
	// Model is the model a turn uses when neither the turn nor its
	// profile names one; "" leaves the harness's default. The opencode
	// driver with a BaseURL needs one (its provider's models are the ones
	// the bridge declares).
	Model string
	// WorkRoot is the directory environments are created under; "" means
	// a directory in os.TempDir.
	WorkRoot string
}

// Errors of New and of turn admission. Each refusal happens before any
// process is spawned.
var (
	// ErrBinaryNotFound is matched by a *BinaryNotFoundError.
	ErrBinaryNotFound = errors.New("clibridge: harness binary not found")
	// ErrHarnessUnsupported: the bridge has no driver for the harness.
	ErrHarnessUnsupported = errors.New("clibridge: no driver for this harness")
	// ErrEnvRefused is matched by an *EnvRefusedError.
	ErrEnvRefused = errors.New("clibridge: environment variable refused")
	// ErrInvalidName: the provider name is not a lower-case provider name.
	ErrInvalidName = errors.New("clibridge: invalid provider name")
)

// BinaryNotFoundError refuses a harness whose executable is not
// installed. It names the npm package that provides it.
type BinaryNotFoundError struct {
	// Harness is the harness asked for.
	Harness harness.Type
	// Binary is the path or executable name that was looked for.
	Binary string
	// Package is the npm package that installs the executable.
	Package string
	// Err is the lookup's error.
	Err error
}

// Error names the harness, what was looked for and the npm package.
func (e *BinaryNotFoundError) Error() string {
	return fmt.Sprintf("clibridge: the %s executable %q was not found (%v); install it with `npm install -g %s` or set Options.Binary",
		e.Harness, e.Binary, e.Err, e.Package)
}

// Is matches ErrBinaryNotFound.
func (e *BinaryNotFoundError) Is(target error) bool { return target == ErrBinaryNotFound }

// Unwrap returns the lookup's error.
func (e *BinaryNotFoundError) Unwrap() error { return e.Err }

// EnvRefusedError refuses one caller environment variable.
type EnvRefusedError struct {
	// Name is the refused variable's name (its value is never reported).
	Name string
	// Reason says why.
	Reason string
}

// Error names the variable (never its value) and the reason.
func (e *EnvRefusedError) Error() string {
	return fmt.Sprintf("clibridge: environment variable %q refused: %s", e.Name, e.Reason)
}

// Is matches ErrEnvRefused.
func (e *EnvRefusedError) Is(target error) bool { return target == ErrEnvRefused }

// config is the resolved, immutable configuration of one provider.
type config struct {
	name     string
	driver   driver
	binary   string
	env      map[string]string
	baseURL  string
	apiKey   string
	model    string
	workRoot string
	// hooks are test seams; all nil in production.
	hooks hooks
}

// hooks observe a turn's process, for tests: onSpawn receives the
// process group id right after the start, onLine every raw stdout line
// (before redaction), onExit how the process ended.
type hooks struct {
	onSpawn func(pgid int)
	onLine  func(line []byte)
	onExit  func(x exit)
	// exitGrace replaces the package's exitGrace when non-zero.
	exitGrace time.Duration
}

// resolve checks opts and resolves the binary and directories.
func resolve(opts Options) (*config, error) {
	h := opts.Harness
	if h == "" {
		h = harness.ClaudeCode
	}
	d, err := driverFor(h)
	if err != nil {
		return nil, err
	}
	name := opts.Name
	if name == "" {
		name = "clibridge-" + string(h)
	}
	// The name must be one a native session observation can carry.
	if _, err := contract.NewNativeSessionObserved(name, "probe"); err != nil {
		return nil, fmt.Errorf("%w: %q", ErrInvalidName, name)
	}
	bin, err := findBinary(d, opts.Binary)
	if err != nil {
		return nil, err
	}
	env, err := checkCallerEnv(opts.Env, d)
	if err != nil {
		return nil, err
	}
	root := opts.WorkRoot
	if root == "" {
		root = filepath.Join(os.TempDir(), "agentrt-clibridge")
	}
	if root, err = filepath.Abs(root); err != nil {
		return nil, fmt.Errorf("clibridge: work root: %w", err)
	}
	if err := os.MkdirAll(root, 0o700); err != nil {
		return nil, fmt.Errorf("clibridge: work root: %w", err)
	}
	return &config{name: name, driver: d, binary: bin, env: env, baseURL: opts.BaseURL, apiKey: opts.APIKey, model: opts.Model, workRoot: root}, nil
}

// findBinary resolves the harness executable: the given path, else the
// driver's executable name in PATH.
func findBinary(d driver, given string) (string, error) {
	want := given
	if want == "" {
		want = d.executable()
	}
	path, err := exec.LookPath(want)
	if err != nil {
		return "", &BinaryNotFoundError{Harness: d.harness(), Binary: want, Package: d.npmPackage(), Err: err}
	}
	if path, err = filepath.Abs(path); err != nil {
		return "", &BinaryNotFoundError{Harness: d.harness(), Binary: want, Package: d.npmPackage(), Err: err}
	}
	return path, nil
}

// checkCallerEnv refuses process-control names and the names the bridge
// sets itself, and returns a detached copy.
func checkCallerEnv(env map[string]string, d driver) (map[string]string, error) {
	out := make(map[string]string, len(env))
	for name, value := range env {
		switch {
		case name == "" || strings.ContainsAny(name, "=\x00"):
			return nil, &EnvRefusedError{Name: name, Reason: "not a valid variable name"}
		case strings.ContainsRune(value, 0):
			return nil, &EnvRefusedError{Name: name, Reason: "the value contains a NUL byte"}
		case profile.IsRuntimeProcessControlEnvironmentName(name):
			return nil, &EnvRefusedError{Name: name, Reason: "it controls the runtime process (loader, interpreter or proxy)"}
		case bridgeOwned(name, d):
			return nil, &EnvRefusedError{Name: name, Reason: "the bridge sets it for every harness process"}
		}
		out[name] = value
	}
	return out, nil
}

// bridgeOwned reports whether the bridge sets name itself.
func bridgeOwned(name string, d driver) bool {
	n := strings.ToUpper(name)
	switch n {
	case "PATH", "HOME", "TMPDIR", "XDG_CONFIG_HOME", "XDG_CACHE_HOME", "XDG_DATA_HOME", "XDG_STATE_HOME":
		return true
	}
	for _, owned := range d.ownedEnv() {
		if n == owned {
			return true
		}
	}
	return false
}
