package localproc

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/agentrt/agentrt/contract"
)

// exactFacet is the provider's contract.ExactProcessProvider.
type exactFacet struct{ p *Provider }

// Create implements contract.ExactProcessProvider. Refusals before any
// effect: an invalid input (*schema.Error), an egress mode other than
// blocked, an image that is not a registered local image, and any
// provider option (contract.ErrUnsupported); a key already used with
// another input (contract.ErrIdempotencyConflict), also after a restart,
// since the key and input digest are persisted with the environment.
func (f *exactFacet) Create(ctx context.Context, in *contract.CreateExactProcessInput) (contract.ExactProcessEnvironment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	digest, err := contract.CreateExactProcessInputDigest(in)
	if err != nil {
		return nil, err
	}
	if in.Egress.Mode != contract.EgressBlocked {
		return nil, fmt.Errorf("%w: egress mode %q is not enforced by localproc (only %q is)", contract.ErrUnsupported, in.Egress.Mode, contract.EgressBlocked)
	}
	if _, ok := f.p.images[in.Image]; !ok {
		return nil, fmt.Errorf("%w: %w: %q is not a registered local image (want %s<manifest digest> of a directory in Options.Images)", contract.ErrUnsupported, ErrImage, in.Image, ImageRefPrefix)
	}
	if len(in.ProviderOptions) > 0 {
		return nil, fmt.Errorf("%w: localproc takes no provider options", contract.ErrUnsupported)
	}
	env, _, err := f.p.keyed.Do(ctx, in, func(ctx context.Context, snap *contract.CreateExactProcessInput) (*environment, error) {
		return f.p.createKeyed(ctx, snap, digest)
	})
	if err != nil {
		return nil, err
	}
	return env, nil
}

// createKeyed runs under the keyed admission: a key persisted by an
// earlier create (of this or an earlier instance) replays or conflicts;
// otherwise a new environment is made.
func (p *Provider) createKeyed(ctx context.Context, in *contract.CreateExactProcessInput, digest string) (*environment, error) {
	ids, err := p.liveIDs()
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		env, err := p.load(id)
		if err != nil || env == nil {
			continue
		}
		if env.rec.Input.IdempotencyKey != in.IdempotencyKey {
			continue
		}
		if env.rec.Digest != digest {
			return nil, fmt.Errorf("%w (key %q, environment %s)", contract.ErrIdempotencyConflict, in.IdempotencyKey, id)
		}
		return env, nil
	}
	return p.createEnv(ctx, in, digest)
}

// createEnv makes a fresh environment: a staging directory receives the
// verified image copy as root/, an empty /tmp, the process directory and
// the record, and is then renamed into place, so a crash leaves either
// nothing or a whole environment.
func (p *Provider) createEnv(ctx context.Context, in *contract.CreateExactProcessInput, digest string) (*environment, error) {
	id, err := newEnvID()
	if err != nil {
		return nil, err
	}
	stage := filepath.Join(p.envsDir, ".stage-"+id)
	if err := os.Mkdir(stage, 0o700); err != nil {
		return nil, fmt.Errorf("localproc: %w", err)
	}
	ok := false
	defer func() {
		if !ok {
			os.RemoveAll(stage)
		}
	}()
	if in.ProvisionTimeoutMs != nil {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, time.Duration(*in.ProvisionTimeoutMs)*time.Millisecond)
		defer cancel()
	}
	root := filepath.Join(stage, "root")
	if err := materialize(p.images[in.Image], root, in.Image, p.uid, p.gid, in.Resources.DiskMB<<20); err != nil {
		return nil, err
	}
	tmp := filepath.Join(root, "tmp")
	if _, err := os.Lstat(tmp); errors.Is(err, os.ErrNotExist) {
		if err := os.Mkdir(tmp, 0o700); err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
		if err := os.Chown(tmp, p.uid, p.gid); err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
		if err := os.Chmod(tmp, 0o1777); err != nil {
			return nil, fmt.Errorf("localproc: %w", err)
		}
	}
	if err := os.Mkdir(filepath.Join(stage, "procs"), 0o700); err != nil {
		return nil, fmt.Errorf("localproc: %w", err)
	}
	now := time.Now().UnixMilli()
	rec := &envRecord{V: recordVersion, ID: id, Digest: digest, CreatedAtMs: now, ExpiresAtMs: now + in.MaxLifetimeMs, Input: *in}
	data, err := encodeRecord(rec)
	if err != nil {
		return nil, err
	}
	if err := writeFileAtomic(filepath.Join(stage, "env.json"), data); err != nil {
		return nil, err
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if err := os.Rename(stage, p.envDir(id)); err != nil {
		return nil, fmt.Errorf("localproc: %w", err)
	}
	ok = true
	env := newEnvironment(p, rec)
	p.mu.Lock()
	p.envs[id] = env
	p.mu.Unlock()
	env.armExpiry()
	return env, nil
}

// Get implements contract.ExactProcessProvider: the environment with id
// from this instance or recovered from Dir; (nil, nil) for an unknown,
// destroyed or expired id.
func (f *exactFacet) Get(ctx context.Context, id string) (contract.ExactProcessEnvironment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	env, err := f.p.load(id)
	if err != nil || env == nil {
		return nil, err
	}
	return env, nil
}

// List implements contract.ExactProcessProvider: every live environment
// in Dir whose persisted metadata the query selects, by id.
func (f *exactFacet) List(ctx context.Context, q *contract.ExactProcessEnvironmentQuery) ([]contract.ExactProcessEnvironment, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	ids, err := f.p.liveIDs()
	if err != nil {
		return nil, err
	}
	slices.Sort(ids)
	var out []contract.ExactProcessEnvironment
	for _, id := range ids {
		env, err := f.p.load(id)
		if err != nil {
			return nil, err
		}
		if env != nil && contract.ExactProcessQueryMatches(q, env.rec.Input.Metadata) {
			out = append(out, env)
		}
	}
	return out, nil
}
