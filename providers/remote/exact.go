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
	"time"

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
	doc, err := roundTrip(ctx, f.p, exchange{method: http.MethodPost, path: wire.PathExactEnvironments,
		body: in, what: "the exact create input", answer: "exact environment",
		timeout: f.p.opts.CreateTimeout, retry: true}, wire.ParseExactEnvironment)
	if err != nil {
		return nil, err
	}
	return &exactEnv{p: f.p, doc: *doc}, nil
}

// Get recovers an exact environment by id; nil when the server knows
// none.
func (f exactFacet) Get(ctx context.Context, id string) (contract.ExactProcessEnvironment, error) {
	doc, err := roundTrip(ctx, f.p, exchange{method: http.MethodGet, path: exactEnvPath(id),
		answer: "exact environment", timeout: f.p.opts.CallTimeout, retry: true}, wire.ParseExactEnvironment)
	if errors.Is(err, wire.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return &exactEnv{p: f.p, doc: *doc}, nil
}

// List returns every live exact environment the query selects.
func (f exactFacet) List(ctx context.Context, q *contract.ExactProcessEnvironmentQuery) ([]contract.ExactProcessEnvironment, error) {
	if q == nil {
		q = &contract.ExactProcessEnvironmentQuery{}
	}
	list, err := roundTrip(ctx, f.p, exchange{method: http.MethodPost, path: wire.PathExactEnvironmentList,
		body: q, what: "the exact query", answer: "exact environment list",
		timeout: f.p.opts.CallTimeout, retry: true}, wire.ParseExactEnvironmentList)
	if err != nil {
		return nil, err
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
	_, err = roundTrip[any](ctx, e.p, exchange{method: http.MethodPost, path: strings.Replace(wire.RouteExactFileWrite, "{id}", url.PathEscape(e.doc.ID), 1),
		body: wire.ExactFileWrite{Path: absPath, Data: base64.StdEncoding.EncodeToString(data), Mode: int64(posix)}, what: "the exact write",
		timeout: e.p.opts.CallTimeout, retry: true}, nil)
	return err
}

// ReadFile reads a file's exact bytes, refusing one over maxBytes with
// an error matching contract.ErrFileTooLarge.
func (e *exactEnv) ReadFile(ctx context.Context, path string, maxBytes int64) ([]byte, error) {
	if maxBytes < 0 || maxBytes > wire.MaxExactChunkBytes {
		return nil, fmt.Errorf("remote: maxBytes %d is outside 0..%d, what one exact read carries", maxBytes, wire.MaxExactChunkBytes)
	}
	res, err := roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: strings.Replace(wire.RouteExactFileRead, "{id}", url.PathEscape(e.doc.ID), 1),
		body: wire.ExactFileRead{Path: path, MaxBytes: maxBytes}, what: "the exact read", answer: "exact file",
		timeout: e.p.opts.CallTimeout, retry: true}, wire.ParseExactFileData)
	if err != nil {
		return nil, err
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
	_, err := roundTrip[any](ctx, e.p, exchange{method: http.MethodDelete, path: exactEnvPath(e.doc.ID),
		timeout: e.p.opts.CallTimeout, retry: true}, nil)
	if errors.Is(err, wire.ErrNotFound) {
		return nil
	}
	return err
}

// exactManager is an exact environment's process manager.
type exactManager struct{ e *exactEnv }

// List returns the status of every process the environment started.
func (m exactManager) List(ctx context.Context) ([]contract.ExactProcessStatus, error) {
	list, err := roundTrip(ctx, m.e.p, exchange{method: http.MethodGet, path: exactEnvPath(m.e.doc.ID) + "/processes",
		answer: "process list", timeout: m.e.p.opts.CallTimeout, retry: true}, wire.ParseExactProcessList)
	if err != nil {
		return nil, err
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
	return roundTrip(ctx, m.e.p, exchange{method: http.MethodGet, path: exactProcPath(m.e.doc.ID, pid),
		answer: "process status", timeout: m.e.p.opts.CallTimeout, retry: true}, wire.ParseExactProcessStatus)
}

// Spawn starts one process under a fresh operation id, re-sent after a
// lost answer: the server starts one process per operation id, so a
// retry is answered with the process the first attempt started.
func (m exactManager) Spawn(ctx context.Context, launch *contract.ExactProcessLaunch) (contract.ExactProcess, error) {
	if launch == nil {
		return nil, errors.New("remote: nil exact launch")
	}
	st, err := roundTrip(ctx, m.e.p, exchange{method: http.MethodPost, path: exactEnvPath(m.e.doc.ID) + "/processes",
		body: wire.ExactSpawnCall{OperationID: "spawn-" + randomID(), Launch: *launch}, what: "the exact launch", answer: "spawned process",
		timeout: m.e.p.opts.CreateTimeout, retry: true}, wire.ParseExactProcessStatus)
	if err != nil {
		return nil, err
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

// Wait asks the server until the process terminated; each ask asks the
// server to wait at most a half CallTimeout (wire.QueryWaitMs) and is
// bounded by CallTimeout, so a server that stops answering ends the wait
// with a *TimeoutError; ctx ends the whole wait.
func (p *exactProc) Wait(ctx context.Context) (*contract.ProcessTermination, error) {
	path := exactProcPath(p.e.doc.ID, p.pid) + "/wait?" + wire.QueryWaitMs + "=" + strconv.FormatInt(p.e.p.longPoll(), 10)
	pace := p.e.p.pacer()
	for {
		asked := time.Now()
		res, err := roundTrip(ctx, p.e.p, exchange{method: http.MethodPost, path: path,
			answer: "wait answer", timeout: p.e.p.opts.CallTimeout, retry: true}, wire.ParseExactWaitResult)
		if err != nil {
			return nil, err
		}
		if res.Termination != nil {
			return res.Termination, nil
		}
		if err := pace.pause(ctx, asked); err != nil {
			return nil, err
		}
	}
}

// Kill force-stops the process tree; killing an ended process succeeds,
// so a re-send is harmless.
func (p *exactProc) Kill(ctx context.Context) error {
	_, err := roundTrip[any](ctx, p.e.p, exchange{method: http.MethodPost, path: exactProcPath(p.e.doc.ID, p.pid) + "/kill",
		timeout: p.e.p.opts.CallTimeout, retry: true}, nil)
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
// repeated. Each ask is a long poll bounded as Wait's.
func (p *exactProc) output(ctx context.Context, stream string) iter.Seq2[[]byte, error] {
	return func(yield func([]byte, error) bool) {
		var offset int64
		wait := "&" + wire.QueryWaitMs + "=" + strconv.FormatInt(p.e.p.longPoll(), 10)
		pace := p.e.p.pacer()
		for {
			path := exactProcPath(p.e.doc.ID, p.pid) + "/output/" + stream + "?offset=" + strconv.FormatInt(offset, 10) + wait
			asked := time.Now()
			chunk, err := roundTrip(ctx, p.e.p, exchange{method: http.MethodGet, path: path,
				answer: stream, timeout: p.e.p.opts.CallTimeout, retry: true}, wire.ParseExactOutputChunk)
			if err == nil && ctx.Err() != nil {
				err = ctx.Err()
			}
			if err != nil {
				yield(nil, err)
				return
			}
			if chunk.Offset != offset {
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
			if len(data) == 0 {
				if err := pace.pause(ctx, asked); err != nil {
					yield(nil, err)
					return
				}
			}
		}
	}
}
