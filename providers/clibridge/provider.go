package clibridge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/profile"
)

// Provider runs a harness CLI as child processes behind the provider
// contract. It is safe for concurrent use; each environment runs one turn
// at a time.
type Provider struct {
	cfg   *config
	keyed contract.KeyedCreate[*envState]

	mu   sync.Mutex
	envs map[string]*envState
}

var (
	_ contract.Provider          = (*Provider)(nil)
	_ contract.ProfileValidator  = (*Provider)(nil)
	_ contract.EnvironmentGetter = (*Provider)(nil)
)

// New returns a provider driving opts.Harness. It refuses, before
// anything runs, a harness without a driver (ErrHarnessUnsupported), a
// binary that is not installed (*BinaryNotFoundError), a refused caller
// variable (*EnvRefusedError) and an invalid provider name.
func New(opts Options) (*Provider, error) {
	cfg, err := resolve(opts)
	if err != nil {
		return nil, err
	}
	return &Provider{cfg: cfg, envs: map[string]*envState{}}, nil
}

// Name implements contract.Provider.
func (p *Provider) Name() string { return p.cfg.name }

// Binary returns the absolute path of the harness executable.
func (p *Provider) Binary() string { return p.cfg.binary }

// Capabilities implements contract.Provider: the profile features the
// harness driver applies, live streaming and usage, profile validation,
// and nothing else — no detach, replay, session continuation, workspace
// access, branching, placement or observation, because the bridge does
// not implement them.
func (p *Provider) Capabilities(ctx context.Context) (*contract.Capabilities, error) {
	return &contract.Capabilities{
		Profile:   p.cfg.driver.profileCaps(),
		Streaming: contract.StreamingCapabilities{Live: true},
		Usage:     true,
	}, nil
}

// Create implements contract.Provider: a fresh environment directory
// holding the workspace, an isolated HOME and harness configuration
// directory, and a temporary directory. Nothing is spawned until a
// turn. With an idempotency key, the same input returns the same
// environment (replayed) and a changed one fails with
// contract.ErrIdempotencyConflict.
func (p *Provider) Create(ctx context.Context, in *contract.CreateInput) (contract.Environment, error) {
	if in == nil {
		in = &contract.CreateInput{}
	}
	env, err := p.checkCreate(in)
	if err != nil {
		return nil, err
	}
	st, creation, err := p.keyed.Do(ctx, in, func(ctx context.Context, in *contract.CreateInput) (*envState, error) {
		return p.provision(in, env)
	})
	if err != nil {
		return nil, err
	}
	return &Environment{st: st, creation: creation}, nil
}

// checkCreate refuses, before any effect, a create the bridge cannot
// honor, and returns the merged caller environment.
func (p *Provider) checkCreate(in *contract.CreateInput) (map[string]string, error) {
	refuse := func(field string) error {
		return fmt.Errorf("clibridge: create %s: %w", field, contract.ErrUnsupported)
	}
	switch {
	case in.RuntimeAttachments != nil:
		return nil, refuse("runtimeAttachments")
	case in.RequestedID != nil:
		return nil, refuse("requestedId")
	case in.Backend != nil && *in.Backend != string(p.cfg.driver.harness()):
		return nil, refuse("backend " + *in.Backend)
	case in.Workspace != nil:
		return nil, refuse("workspace")
	case in.Resources != nil:
		return nil, refuse("resources")
	case in.Secrets != nil:
		return nil, refuse("secrets")
	case in.Egress != nil:
		return nil, refuse("egress")
	case in.BillingOwner != nil:
		return nil, refuse("billingOwner")
	case in.Profile.Inline == nil && in.Profile.CatalogID != "":
		return nil, refuse("named profile (the bridge has no profile catalog)")
	}
	if err := p.checkProfile(in.Profile.Inline); err != nil {
		return nil, err
	}
	extra, err := checkCallerEnv(in.Env, p.cfg.driver)
	if err != nil {
		return nil, err
	}
	env := maps.Clone(p.cfg.env)
	maps.Copy(env, extra)
	return env, nil
}

// checkProfile refuses a profile that is not a valid AgentProfile (a Go
// value need not have come through profile.Parse), then what of it the
// harness driver cannot apply: the capability document's flags
// (contract.CheckProfileSupport), then the driver's own checks.
func (p *Provider) checkProfile(pr *profile.Profile) error {
	if pr == nil {
		return nil
	}
	if _, err := pr.Value(); err != nil {
		return fmt.Errorf("clibridge: the profile is not a valid AgentProfile: %w", err)
	}
	caps := p.cfg.driver.profileCaps()
	errs := []error{contract.CheckProfileSupport(&caps, pr)}
	errs = append(errs, p.cfg.driver.check(pr)...)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("clibridge: %w", err)
	}
	return nil
}

// provision makes the environment's directories.
func (p *Provider) provision(in *contract.CreateInput, env map[string]string) (*envState, error) {
	root, err := os.MkdirTemp(p.cfg.workRoot, "env-")
	if err != nil {
		return nil, fmt.Errorf("clibridge: creating the environment directory: %w", err)
	}
	d := dirs{root: root, work: filepath.Join(root, "work"), home: filepath.Join(root, "home"),
		tmp: filepath.Join(root, "tmp"), bridge: filepath.Join(root, "bridge")}
	d.config = filepath.Join(d.home, ".config", string(p.cfg.driver.harness()))
	for _, dir := range []string{d.work, d.config, d.tmp, d.bridge} {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			os.RemoveAll(root)
			return nil, fmt.Errorf("clibridge: creating the environment directory: %w", err)
		}
	}
	st := &envState{p: p, id: p.cfg.name + "-" + strings.TrimPrefix(filepath.Base(root), "env-"), dirs: d,
		env: env, profile: in.Profile.Inline, metadata: maps.Clone(in.Metadata)}
	if in.Name != nil {
		st.name = *in.Name
	}
	p.mu.Lock()
	p.envs[st.id] = st
	p.mu.Unlock()
	return st, nil
}

// PersistCreateKeys implements contract.CreateKeyPersister: keyed creates
// are also recorded in st, so a retry of a key after this process
// restarted is answered ErrKeyedEnvironmentGone (this provider's
// environments live in its process) rather than with a second
// environment under the key.
func (p *Provider) PersistCreateKeys(st contract.KeyRecordStore) error {
	return p.keyed.Persist(contract.DurableKeys[*envState]{Store: st, Scope: "clibridge/" + p.Name(),
		ID: func(e *envState) string { return e.id },
		Find: func(_ context.Context, id string) (*envState, bool, error) {
			p.mu.Lock()
			e := p.envs[id]
			p.mu.Unlock()
			return e, e != nil && !e.isDestroyed(), nil
		},
		// An environment handed to nobody (another process declared its
		// create in doubt first) does not live on.
		Undo: func(ctx context.Context, e *envState) error { return (&Environment{st: e}).Destroy(ctx) }})
}

// Get implements contract.EnvironmentGetter: a live environment by id
// (no creation verdict), or nil.
func (p *Provider) Get(ctx context.Context, id string) (contract.Environment, error) {
	p.mu.Lock()
	st := p.envs[id]
	p.mu.Unlock()
	if st == nil || st.isDestroyed() {
		return nil, nil
	}
	return &Environment{st: st}, nil
}

// ValidateProfile implements contract.ProfileValidator: an inline profile
// is valid when the harness driver can apply all of it; a catalog id is
// refused (the bridge has no catalog).
func (p *Provider) ValidateProfile(ctx context.Context, ref profile.Ref) (*contract.ProfileValidation, error) {
	issue := func(code, msg string) *contract.ProfileValidation {
		return &contract.ProfileValidation{Issues: []contract.ProfileValidationIssue{{Level: contract.ProfileIssueError, Code: code, Message: msg}}}
	}
	if ref.Inline == nil {
		return issue("named-profile-unsupported", "the bridge has no profile catalog; send the profile inline"), nil
	}
	if _, err := profile.Digest(ref.Inline); err != nil {
		return issue("invalid-profile", err.Error()), nil
	}
	if err := p.checkProfile(ref.Inline); err != nil {
		return issue("unsupported-profile", err.Error()), nil
	}
	return &contract.ProfileValidation{OK: true, Issues: []contract.ProfileValidationIssue{}}, nil
}
