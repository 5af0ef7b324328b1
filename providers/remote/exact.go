package remote

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// exactProcess is the server's exact-process facet (wire.RouteExact*).
func (p *Provider) exactProcess() contract.ExactProcessProvider { return exactFacet{p} }

// exactFacet carries contract.ExactProcessProvider over the wire.
type exactFacet struct{ p *Provider }

func exactEnvPath(id string) string {
	return strings.Replace(wire.RouteExactEnvironment, "{id}", url.PathEscape(id), 1)
}

func exactProcPath(id string, pid int64) string {
	return exactEnvPath(id) + "/processes/" + strconv.FormatInt(pid, 10)
}

// Create asks the server for an exact environment. The input's
// idempotency key makes a re-send after a lost answer a replay (EXP-11),
// so it is retried; it is bounded by Options.CreateTimeout.
func (f exactFacet) Create(ctx context.Context, in *contract.CreateExactProcessInput) (contract.ExactProcessEnvironment, error) {
	if in == nil {
		return nil, errors.New("remote: nil exact create input")
	}
	body, err := wire.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("remote: the exact create input has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.p.opts.CreateTimeout)
	defer cancel()
	out, _, err := f.p.call(ctx, http.MethodPost, wire.PathExactEnvironments, body, true)
	if err != nil {
		return nil, err
	}
	doc, err := wire.ParseExactEnvironment(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's exact environment: %w", err)
	}
	return &exactEnv{p: f.p, doc: *doc}, nil
}

// Get recovers an exact environment by id; nil when the server knows
// none.
func (f exactFacet) Get(ctx context.Context, id string) (contract.ExactProcessEnvironment, error) {
	ctx, cancel := context.WithTimeout(ctx, f.p.opts.CallTimeout)
	defer cancel()
	out, _, err := f.p.call(ctx, http.MethodGet, exactEnvPath(id), nil, true)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	doc, err := wire.ParseExactEnvironment(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's exact environment: %w", err)
	}
	return &exactEnv{p: f.p, doc: *doc}, nil
}

// List returns every live exact environment the query selects.
func (f exactFacet) List(ctx context.Context, q *contract.ExactProcessEnvironmentQuery) ([]contract.ExactProcessEnvironment, error) {
	if q == nil {
		q = &contract.ExactProcessEnvironmentQuery{}
	}
	body, err := wire.Marshal(q)
	if err != nil {
		return nil, fmt.Errorf("remote: the exact query has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, f.p.opts.CallTimeout)
	defer cancel()
	out, _, err := f.p.call(ctx, http.MethodPost, wire.PathExactEnvironmentList, body, true)
	if err != nil {
		return nil, err
	}
	list, err := wire.ParseExactEnvironmentList(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's exact environment list: %w", err)
	}
	envs := make([]contract.ExactProcessEnvironment, 0, len(list.Environments))
	for _, doc := range list.Environments {
		envs = append(envs, &exactEnv{p: f.p, doc: doc})
	}
	return envs, nil
}

// exactEnv is one exact environment on the server.
type exactEnv struct {
	p   *Provider
	doc wire.ExactEnvironment
}

// ID is the environment's id.
func (e *exactEnv) ID() string { return e.doc.ID }

// Provider is the served provider's name.
func (e *exactEnv) Provider() string { return e.doc.Provider }

// Metadata is a copy of the environment's metadata.
func (e *exactEnv) Metadata() map[string]canonjson.Value { return maps.Clone(e.doc.Metadata) }

// Processes is the environment's process manager.
func (e *exactEnv) Processes() contract.ExactProcessManager { return exactManager{e} }

// WriteFile writes data exactly; a re-send writes the same bytes, so it
// is retried.
func (e *exactEnv) WriteFile(ctx context.Context, absPath string, data []byte, mode fs.FileMode) error {
	posix, err := contract.PosixFileMode(mode)
	if err != nil {
		return err
	}
	if len(data) > wire.MaxExactChunkBytes {
		return fmt.Errorf("remote: the file is %d bytes, more than the %d one exact write carries", len(data), wire.MaxExactChunkBytes)
	}
	body, err := wire.Marshal(wire.ExactFileWrite{Path: absPath, Data: base64.StdEncoding.EncodeToString(data), Mode: int64(posix)})
	if err != nil {
		return fmt.Errorf("remote: the exact write has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	_, _, err = e.p.call(ctx, http.MethodPost, strings.Replace(wire.RouteExactFileWrite, "{id}", url.PathEscape(e.doc.ID), 1), body, true)
	return err
}

// ReadFile reads a file's exact bytes, refusing one over maxBytes with
// an error matching contract.ErrFileTooLarge.
func (e *exactEnv) ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error) {
	if maxBytes < 0 || maxBytes > wire.MaxExactChunkBytes {
		return nil, fmt.Errorf("remote: maxBytes %d is outside 0..%d, what one exact read carries", maxBytes, wire.MaxExactChunkBytes)
	}
	body, err := wire.Marshal(wire.ExactFileRead{Path: path, MaxBytes: maxBytes})
	if err != nil {
		return nil, fmt.Errorf("remote: the exact read has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodPost, strings.Replace(wire.RouteExactFileRead, "{id}", url.PathEscape(e.doc.ID), 1), body, true)
	if err != nil {
		return nil, err
	}
	res, err := wire.ParseExactFileData(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's exact file: %w", err)
	}
	data, err := base64.StdEncoding.DecodeString(res.Data)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's exact file is not base64: %w", err)
	}
	if int64(len(data)) > maxBytes {
		return nil, &contract.FileTooLargeError{Path: path, Size: int64(len(data)), MaxBytes: maxBytes}
	}
	return data, nil
}

// Destroy destroys the environment; one the server no longer knows is
// already destroyed, so a re-send succeeds.
func (e *exactEnv) Destroy(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	_, _, err := e.p.call(ctx, http.MethodDelete, exactEnvPath(e.doc.ID), nil, true)
	if errors.Is(err, wire.ErrNotFound) {
		return nil
	}
	return err
}

// exactManager is an exact environment's process manager.
type exactManager struct{ e *exactEnv }

// List returns the status of every process the environment started.
func (m exactManager) List(ctx context.Context) ([]contract.ExactProcessStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, m.e.p.opts.CallTimeout)
	defer cancel()
	out, _, err := m.e.p.call(ctx, http.MethodGet, exactEnvPath(m.e.doc.ID)+"/processes", nil, true)
	if err != nil {
		return nil, err
	}
	list, err := wire.ParseExactProcessList(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's process list: %w", err)
	}
	return list.Processes, nil
}

// Get recovers a process by pid; nil when the environment has none.
func (m exactManager) Get(ctx context.Context, pid int64) (contract.ExactProcess, error) {
	if _, err := m.status(ctx, pid); err != nil {
		if errors.Is(err, wire.ErrNotFound) {
			return nil, nil
		}
		return nil, err
	}
	return &exactProc{e: m.e, pid: pid}, nil
}

func (m exactManager) status(ctx context.Context, pid int64) (*contract.ExactProcessStatus, error) {
	ctx, cancel := context.WithTimeout(ctx, m.e.p.opts.CallTimeout)
	defer cancel()
	out, _, err := m.e.p.call(ctx, http.MethodGet, exactProcPath(m.e.doc.ID, pid), nil, true)
	if err != nil {
		return nil, err
	}
	st, err := wire.ParseExactProcessStatus(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's process status: %w", err)
	}
	return st, nil
}

// Spawn starts one process under a fresh operation id, re-sent after a
// lost answer: the server starts one process per operation id, so a
// retry is answered with the process the first attempt started.
func (m exactManager) Spawn(ctx context.Context, launch *contract.ExactProcessLaunch) (contract.ExactProcess, error) {
	if launch == nil {
		return nil, errors.New("remote: nil exact launch")
	}
	body, err := wire.Marshal(wire.ExactSpawnCall{OperationID: "spawn-" + randomID(), Launch: *launch})
	if err != nil {
		return nil, fmt.Errorf("remote: the exact launch has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, m.e.p.opts.CreateTimeout)
	defer cancel()
	out, _, err := m.e.p.call(ctx, http.MethodPost, exactEnvPath(m.e.doc.ID)+"/processes", body, true)
	if err != nil {
		return nil, err
	}
	st, err := wire.ParseExactProcessStatus(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's spawned process: %w", err)
	}
	return &exactProc{e: m.e, pid: st.PID}, nil
}

// exactProc is one process of an exact environment on the server.
type exactProc struct {
	e   *exactEnv
	pid int64
}

// PID is the process id.
func (p *exactProc) PID() int64 { return p.pid }

// Status is the process's current status.
func (p *exactProc) Status(ctx context.Context) (*contract.ExactProcessStatus, error) {
	return exactManager{p.e}.status(ctx, p.pid)
}

// Wait asks the server until the process terminated; each ask is
// bounded by the server's wait, ctx ends the whole wait.
func (p *exactProc) Wait(ctx context.Context) (*contract.ProcessTermination, error) {
	for {
		out, _, err := p.e.p.call(ctx, http.MethodPost, exactProcPath(p.e.doc.ID, p.pid)+"/wait", nil, true)
		if err != nil {
			return nil, err
		}
		res, err := wire.ParseExactWaitResult(out)
		if err != nil {
			return nil, fmt.Errorf("remote: the server's wait answer: %w", err)
		}
		if res.Termination != nil {
			return res.Termination, nil
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
	}
}

// Kill force-stops the process tree; killing an ended process succeeds,
// so a re-send is harmless.
func (p *exactProc) Kill(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, p.e.p.opts.CallTimeout)
	defer cancel()
	_, _, err := p.e.p.call(ctx, http.MethodPost, exactProcPath(p.e.doc.ID, p.pid)+"/kill", nil, true)
	return err
}

// Stdout yields standard output from its start.
func (p *exactProc) Stdout(ctx context.Context) iter.Seq2[[]byte, error] {
	return p.output(ctx, wire.StreamStdout)
}

// Stderr yields standard error from its start.
func (p *exactProc) Stderr(ctx context.Context) iter.Seq2[[]byte, error] {
	return p.output(ctx, wire.StreamStderr)
}

// output reads one stream by byte offset: after a dropped connection the
// next ask resumes where the last answer ended, so no byte is lost or
// repeated.
func (p *exactProc) output(ctx context.Context, stream string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var offset int64
		for {
			path := exactProcPath(p.e.doc.ID, p.pid) + "/output/" + stream + "?offset=" + strconv.FormatInt(offset, 10)
			out, _, err := p.e.p.call(ctx, http.MethodGet, path, nil, true)
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			if err != nil {
				yield(nil, err)
				return
			}
			chunk, err := wire.ParseExactOutputChunk(out)
			if err == nil && chunk.Offset != offset {
				err = fmt.Errorf("the server answered offset %d, not %d", chunk.Offset, offset)
			}
			var data []byte
			if err == nil {
				data, err = base64.StdEncoding.DecodeString(chunk.Data)
			}
			if err != nil {
				yield(nil, fmt.Errorf("remote: the server's %s: %w", stream, err))
				return
			}
			offset += int64(len(data))
			if len(data) > 0 && !yield(data, nil) {
				return
			}
			if chunk.End {
				return
			}
		}
	}
}
