package sidecar

import (
	"context"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// readFile answers a workspace read (workspace.read).
func (s *Server) readFile(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseReadFileRequest)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	rd, ok := ability[contract.WorkspaceReader](w, s.lookup(ctx, r.PathValue("id")), "workspace.read")
	if !ok {
		return
	}
	content, err := rd.ReadFile(ctx, req.Path, deref(req.SessionID))
	answer(w, &wire.ReadFileResult{Content: content}, err)
}

// writeFile answers a workspace write (workspace.write) with 204.
func (s *Server) writeFile(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseWriteFileRequest)
	if !ok {
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	wr, ok := ability[contract.WorkspaceWriter](w, s.lookup(ctx, r.PathValue("id")), "workspace.write")
	if !ok {
		return
	}
	if err := wr.WriteFile(ctx, req.Path, req.Content, deref(req.SessionID)); err != nil {
		writeError(w, providerError(err))
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// exec runs one command (workspace.exec) within execDeadline; the
// command ends with the request too (a client that went away).
func (s *Server) exec(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxBodyBytes, wire.ParseExecRequest)
	if !ok {
		return
	}
	lctx, lcancel := s.callContext(r)
	x, ok := ability[contract.CommandExecutor](w, s.lookup(lctx, r.PathValue("id")), "workspace.exec")
	lcancel()
	if !ok {
		return
	}
	opts := req.Options
	if opts == nil {
		opts = &contract.ExecRequest{}
	}
	ctx, cancel := context.WithTimeout(r.Context(), execDeadline(opts, s.opts.ExecTimeout))
	defer cancel()
	res, err := x.Exec(ctx, req.Command, opts)
	answer(w, res, err)
}

// execDeadline bounds one command: the server's limit, or the command's
// own timeout plus wire.ExecGraceMs when that is sooner.
func execDeadline(opts *contract.ExecRequest, limit time.Duration) time.Duration {
	if opts.TimeoutMs != nil {
		if d := time.Duration(*opts.TimeoutMs+wire.ExecGraceMs) * time.Millisecond; d > 0 && d < limit {
			return d
		}
	}
	return limit
}

// validateProfile answers a profile validation (profile.validation).
func (s *Server) validateProfile(w http.ResponseWriter, r *http.Request) {
	req, ok := readCall(s, w, r, s.opts.MaxProfileBodyBytes, wire.ParseProfileValidationRequest)
	if !ok {
		return
	}
	v, ok := s.p.(contract.ProfileValidator)
	if !ok {
		writeError(w, wire.ErrorDetail{Code: wire.CodeUnsupported, Message: "the provider does not offer profile.validation"})
		return
	}
	ctx, cancel := s.callContext(r)
	defer cancel()
	res, err := v.ValidateProfile(ctx, req.Profile)
	answer(w, res, err)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
