package sidecar

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io/fs"
	"net/http"
	"strconv"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// outputBatch is how long an output read goes on collecting chunks after
// its first one, so buffered output travels in few answers.
const outputBatch = 20 * time.Millisecond

// routeExact registers the exact-process routes (wire.RouteExact*).
func (s *Server) routeExact() {
	s.handle(http.MethodPost, wire.PathExactEnvironments, s.exactCreate)
	s.handle(http.MethodPost, wire.PathExactEnvironmentList, s.exactList)
	s.handle(http.MethodGet, wire.RouteExactEnvironment, s.exactGet)
	s.handle(http.MethodDelete, wire.RouteExactEnvironment, s.exactDestroy)
	s.handle(http.MethodPost, wire.RouteExactFileWrite, s.exactWrite)
	s.handle(http.MethodPost, wire.RouteExactFileRead, s.exactRead)
	s.handle(http.MethodGet, wire.RouteExactProcesses, s.exactProcesses)
	s.handle(http.MethodPost, wire.RouteExactProcesses, s.exactSpawn)
	s.handle(http.MethodGet, wire.RouteExactProcess, s.exactStatus)
	s.handle(http.MethodPost, wire.RouteExactProcessWait, s.exactWait)
	s.handle(http.MethodPost, wire.RouteExactProcessKill, s.exactKill)
	s.handle(http.MethodGet, wire.RouteExactProcessOutput, s.exactOutput)
}

// exactFacet is the served provider's exact-process facet; when it offers
// none the request is answered unsupported and ok is false.
func (s *Server) exactFacet(w http.ResponseWriter) (contract.ExactProcessProvider, bool) {
	if h, ok := s.p.(contract.ExactProcessHost); ok {
		if f := h.ExactProcess(); f != nil {
			return f, true
		}
	}
	writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the provider does not offer exactProcess"})
	return nil, false
}

// exactEnv recovers the request's exact environment through the
// provider (so a restarted server finds it); an unknown one is
// answered not_found.
func (s *Server) exactEnv(ctx context.Context, w http.ResponseWriter, r *http.Request) (contract.ExactProcessEnvironment, bool) {
	f, ok := s.exactFacet(w)
	if !ok {
		return nil, false
	}
	env, err := f.Get(ctx, r.PathValue("id"))
	if err != nil {
		writeError(w, providerError(err))
		return nil, false
	}
	if env == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such exact environment"})
		return nil, false
	}
	return env, true
}

// exactProc recovers the request's process; an unknown environment or
// pid is answered not_found.
func (s *Server) exactProc(ctx context.Context, w http.ResponseWriter, r *http.Request) (contract.ExactProcess, bool) {
	pid, err := strconv.ParseInt(r.PathValue("pid"), 10, 64)
	if err != nil || pid < 0 {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such process: the pid is not a non-negative integer"})
		return nil, false
	}
	env, ok := s.exactEnv(ctx, w, r)
	if !ok {
		return nil, false
	}
	proc, err := env.Processes().Get(ctx, pid)
	if err != nil {
		writeError(w, providerError(err))
		return nil, false
	}
	if proc == nil {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such process"})
		return nil, false
	}
	return proc, true
}

func describeExact(env contract.ExactProcessEnvironment) wire.ExactEnvironment {
	md := env.Metadata()
	if md == nil {
		md = map[string]canonjson.Value{}
	}
	return wire.ExactEnvironment{ID: env.ID(), Provider: env.Provider(), Metadata: md}
}

// exactCreate creates an exact environment. It runs on the server's
// context, bounded by CreateTimeout, so a client that lost the answer
// re-sends the same keyed input and the provider replays it (EXP-11).
func (s *Server) exactCreate(w http.ResponseWriter, r *http.Request) {
	in, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseCreateExactProcessInput)
	if !ok {
		return
	}
	f, ok := s.exactFacet(w)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CreateTimeout)
	defer cancel()
	env, err := f.Create(ctx, in)
	if err == nil && env == nil {
		err = errNoAnswer
	}
	if err == nil && s.opts.Store != nil {
		// Spawn records are keyed by the environment's incarnation, not
		// its id alone (a provider may reuse an id): record which one
		// this is before anyone spawns in it. A failure is answered, so
		// the client retries and the provider replays the create.
		var digest string
		if digest, err = contract.CreateExactProcessInputDigest(in); err == nil {
			err = s.recordCreation(ctx, env, in.IdempotencyKey, digest)
		}
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, describeExact(env))
}

// exactList lists the exact environments a query selects.
func (s *Server) exactList(w http.ResponseWriter, r *http.Request) {
	q, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseExactProcessEnvironmentQuery)
	if !ok {
		return
	}
	f, ok := s.exactFacet(w)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	envs, err := f.List(ctx, q)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	out := wire.ExactEnvironmentList{Environments: make([]wire.ExactEnvironment, 0, len(envs))}
	for _, env := range envs {
		out.Environments = append(out.Environments, describeExact(env))
	}
	writeJSON(w, http.StatusOK, out)
}

// exactGet describes one exact environment.
func (s *Server) exactGet(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	if env, ok := s.exactEnv(ctx, w, r); ok {
		writeJSON(w, http.StatusOK, describeExact(env))
	}
}

// exactDestroy destroys an exact environment on the server's context, so
// it completes even when the client goes away.
func (s *Server) exactDestroy(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(s.base, s.opts.CallTimeout)
	defer cancel()
	env, ok := s.exactEnv(ctx, w, r)
	if !ok {
		return
	}
	if err := env.Destroy(ctx); err != nil {
		writeError(w, providerError(err))
		return
	}
	s.dropCursorsOf(env.ID())
	if s.opts.Store != nil {
		// Its spawn records can never be replayed again: a new
		// environment under the id is a new incarnation. A failure here
		// leaves them to the retention sweep.
		if err := s.expireExact(ctx, env.ID()); err != nil {
			s.opts.Logger.WarnContext(ctx, "expiring a destroyed exact environment's spawn records", "environment", env.ID(), "err", err)
		}
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// exactWrite writes a file's exact bytes; a re-send writes the same.
func (s *Server) exactWrite(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseExactFileWrite)
	if !ok {
		return
	}
	data, err := base64.StdEncoding.DecodeString(req.Data)
	if err != nil { // the schema checked it; kept for safety
		writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: "data is not base64"})
		return
	}
	mode := fs.FileMode(req.Mode & 0o777)
	for bit, m := range map[int64]fs.FileMode{0o4000: fs.ModeSetuid, 0o2000: fs.ModeSetgid, 0o1000: fs.ModeSticky} {
		if req.Mode&bit != 0 {
			mode |= m
		}
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CallTimeout)
	defer cancel()
	env, ok := s.exactEnv(ctx, w, r)
	if !ok {
		return
	}
	if err := env.WriteFile(ctx, req.Path, data, mode); err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// exactRead reads a file's exact bytes within maxBytes.
func (s *Server) exactRead(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseExactFileRead)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	env, ok := s.exactEnv(ctx, w, r)
	if !ok {
		return
	}
	data, err := env.ReadFile(ctx, req.Path, req.MaxBytes)
	if err == nil && int64(len(data)) > req.MaxBytes {
		err = &contract.FileTooLargeError{Path: req.Path, Size: int64(len(data)), MaxBytes: req.MaxBytes}
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, wire.ExactFileData{Data: base64.StdEncoding.EncodeToString(data)})
}

// exactProcesses lists an environment's processes.
func (s *Server) exactProcesses(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	env, ok := s.exactEnv(ctx, w, r)
	if !ok {
		return
	}
	list, err := env.Processes().List(ctx)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	if list == nil {
		list = []contract.ExactProcessStatus{}
	}
	writeJSON(w, http.StatusOK, wire.ExactProcessList{Processes: list})
}

// exactSpawn starts one process per environment and operation id: a
// re-sent spawn (its answer lost) is answered with the process it
// started, never a second one; another launch under a used id is an
// idempotency conflict. It runs on the server's context.
func (s *Server) exactSpawn(w http.ResponseWriter, r *http.Request) {
	call, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseExactSpawnCall)
	if !ok {
		return
	}
	ctx, cancel := context.WithTimeout(s.base, s.opts.CreateTimeout)
	defer cancel()
	env, ok := s.exactEnv(ctx, w, r)
	if !ok {
		return
	}
	id := r.PathValue("id")
	digest, err := contract.DigestOf(struct {
		EnvironmentID string                      `json:"environmentId"`
		Launch        contract.ExactProcessLaunch `json:"launch"`
	}{id, call.Launch})
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	// Without a store an incarnation lives as long as the process: the
	// environment id names it.
	incarnation := id
	if s.opts.Store != nil {
		if incarnation, err = s.incarnation(ctx, id); err != nil {
			writeError(w, providerError(err))
			return
		}
	}
	pid, _, err := s.spawns.Do(ctx, incarnation+"\x00"+call.OperationID, digest, func(ctx context.Context) (int64, error) {
		return s.durableSpawn(ctx, env, incarnation, call, digest)
	})
	if err != nil {
		writeError(w, spawnError(err))
		return
	}
	proc, err := env.Processes().Get(ctx, pid)
	if err == nil && proc == nil {
		err = fmt.Errorf("%w: the process it started, pid %d, is not known to the provider (it ended with the server that started it); no second process is started", errSpawnInDoubt, pid)
	}
	if err != nil {
		writeError(w, spawnError(err))
		return
	}
	st, err := proc.Status(ctx)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// errSpawnInDoubt: the spawn of an operation id started earlier and what
// became of its process cannot be told.
var errSpawnInDoubt = errors.New("an earlier spawn with this operation id started and its process cannot be told")

// spawnError is a spawn's error on the wire: in doubt is its own final
// code, anything else as providerError maps it.
func spawnError(err error) wire.ErrorDetail {
	if errors.Is(err, errSpawnInDoubt) {
		return wire.ErrorDetail{Code: wire.CodeSpawnInDoubt, Message: err.Error()}
	}
	return providerError(err)
}

// durableSpawn starts call's process once per environment incarnation
// and operation id: through the store when there is one (runOnce), so a
// spawn re-sent to a restarted server is answered with the pid the
// first one started (or in doubt when that one died before recording
// it), never with a second process — and a spawn in a new environment
// that reuses an old one's id runs fresh.
func (s *Server) durableSpawn(ctx context.Context, env contract.ExactProcessEnvironment, incarnation string, call *wire.ExactSpawnCall, digest string) (int64, error) {
	spawn := func(ctx context.Context) (contract.ExactProcess, error) {
		proc, err := env.Processes().Spawn(ctx, &call.Launch)
		if err == nil && proc == nil {
			err = errNoAnswer
		}
		return proc, err
	}
	if s.opts.Store == nil {
		proc, err := spawn(ctx)
		if err != nil {
			return 0, err
		}
		return proc.PID(), nil
	}
	key := spawnKey(incarnation, call.OperationID)
	var started contract.ExactProcess
	rec, _, err := runOnce(ctx, s.opts.Store, s.opts.CallTimeout, kindSpawn, key, digest, func(ctx context.Context) (outcomeRecord, error) {
		proc, err := spawn(ctx)
		if err != nil {
			return outcomeRecord{}, err
		}
		started = proc
		return outcomeRecord{Process: &spawnedProcess{PID: proc.PID()}}, nil
	}, func(outcomeRecord) {
		kctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.CreateTimeout)
		defer cancel()
		_ = started.Kill(kctx)
	})
	switch {
	case errors.Is(err, errDigestConflict):
		return 0, fmt.Errorf("%w (operation id %q)", contract.ErrIdempotencyConflict, call.OperationID)
	case errors.Is(err, errOutcomeUnknown):
		return 0, fmt.Errorf("%w: it has no recorded pid (its server stopped mid-spawn); no second process is started", errSpawnInDoubt)
	case err != nil:
		return 0, err
	case rec.Process == nil:
		return 0, fmt.Errorf("the recorded outcome of spawn %q is no process", call.OperationID)
	}
	return rec.Process.PID, nil
}

// exactStatus answers one process's status.
func (s *Server) exactStatus(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	proc, ok := s.exactProc(ctx, w, r)
	if !ok {
		return
	}
	st, err := proc.Status(ctx)
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, st)
}

// exactWait waits for a process's termination for at most pollWait;
// past it the answer has no termination and the client asks again.
func (s *Server) exactWait(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := s.callContext(r)
	defer cancel()
	wait, ok := s.pollWait(w, r)
	if !ok {
		return
	}
	proc, ok := s.exactProc(ctx, w, r)
	if !ok {
		return
	}
	wctx, wcancel := context.WithTimeout(r.Context(), wait)
	defer wcancel()
	term, err := proc.Wait(wctx)
	switch {
	case err != nil && wctx.Err() != nil && r.Context().Err() == nil:
		writeJSON(w, http.StatusOK, wire.ExactWaitResult{})
	case err != nil:
		writeError(w, providerError(err))
	default:
		writeJSON(w, http.StatusOK, wire.ExactWaitResult{Termination: term})
	}
}

// pollWait is how long one exact long poll waits: ResultWait, or the
// client's shorter wire.QueryWaitMs. A malformed one is answered
// invalid_request.
func (s *Server) pollWait(w http.ResponseWriter, r *http.Request) (time.Duration, bool) {
	raw := r.URL.Query().Get(wire.QueryWaitMs)
	if raw == "" {
		return s.opts.ResultWait, true
	}
	ms, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || ms < 0 || ms > wire.MaxResultWaitMs {
		p := "/" + wire.QueryWaitMs
		writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: fmt.Sprintf("the %s query parameter must be an integer in 0..%d", wire.QueryWaitMs, wire.MaxResultWaitMs), Path: &p})
		return 0, false
	}
	return min(s.opts.ResultWait, time.Duration(ms)*time.Millisecond), true
}

// exactKill force-stops a process tree on the server's context; killing
// one that ended succeeds, so a re-send is harmless.
func (s *Server) exactKill(w http.ResponseWriter, r *http.Request) {
	ctx, cancel := context.WithTimeout(s.base, s.opts.CallTimeout)
	defer cancel()
	proc, ok := s.exactProc(ctx, w, r)
	if !ok {
		return
	}
	if err := proc.Kill(ctx); err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, struct{}{})
}

// exactOutput answers one stream's bytes from the query's offset on:
// what is there (at most wire.MaxExactChunkBytes), else what arrives
// within pollWait (ResultWait or the client's shorter wait). end is true only when the stream ended with the
// answer's bytes. A resumed read neither loses nor repeats a byte, and
// costs what it returns: the stream's cursor (outputCursor) continues
// where the last read ended, instead of replaying the stream from its
// start up to the offset.
func (s *Server) exactOutput(w http.ResponseWriter, r *http.Request) {
	stream := r.PathValue("stream")
	if stream != wire.StreamStdout && stream != wire.StreamStderr {
		writeError(w, wire.ErrorDetail{Code: wire.CodeNotFound, Message: "no such stream: want stdout or stderr"})
		return
	}
	offset, err := strconv.ParseInt(r.URL.Query().Get("offset"), 10, 64)
	if err != nil || offset < 0 {
		p := "/offset"
		writeError(w, wire.ErrorDetail{Code: wire.CodeInvalidRequest, Message: "the offset query parameter must be a non-negative integer", Path: &p})
		return
	}
	wait, ok := s.pollWait(w, r)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	proc, ok := s.exactProc(ctx, w, r)
	if !ok {
		return
	}
	open := proc.Stdout
	if stream == wire.StreamStderr {
		open = proc.Stderr
	}
	// Waiting for another read of the stream to release its cursor and
	// for bytes share the one wait.
	end := time.Now().Add(wait)
	wctx, wcancel := context.WithDeadline(r.Context(), end)
	defer wcancel()
	chunk := wire.ExactOutputChunk{Offset: offset}
	if c := s.cursorAt(wctx, cursorKey{env: r.PathValue("id"), pid: proc.PID(), stream: stream}, offset, open); c != nil {
		chunk, err = c.read(r.Context(), offset, max(time.Until(end), 0))
		<-c.lock
		if err != nil {
			s.dropCursor(c)
		}
		switch {
		case errors.Is(err, errCursorGone):
			chunk = wire.ExactOutputChunk{Offset: offset} // nothing yet: the client asks again
		case err != nil:
			writeError(w, providerError(err))
			return
		}
	}
	if r.Context().Err() != nil {
		return // the client went away
	}
	writeJSON(w, http.StatusOK, chunk)
}
