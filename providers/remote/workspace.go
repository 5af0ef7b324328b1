package remote

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// readFile reads a workspace file through the server.
func (e *environment) readFile(ctx context.Context, path, sessionID string) (string, error) {
	body, err := wire.Marshal(wire.ReadFileRequest{Path: path, SessionID: optional(sessionID)})
	if err != nil {
		return "", fmt.Errorf("remote: the read request has no JSON form: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodPost, envPath(e.doc.ID)+"/workspace/read", body, true)
	if err != nil {
		return "", err
	}
	res, err := wire.ParseReadFileResult(out)
	if err != nil {
		return "", fmt.Errorf("remote: the server's read answer: %w", err)
	}
	return res.Content, nil
}

// writeFile writes a workspace file through the server. Writing the same
// content again is harmless, so a lost answer is retried.
func (e *environment) writeFile(ctx context.Context, path, content, sessionID string) error {
	body, err := wire.Marshal(wire.WriteFileRequest{Path: path, Content: content, SessionID: optional(sessionID)})
	if err != nil {
		return fmt.Errorf("remote: the write request has no JSON form: %w", err)
	}
	if len(body) > wire.MaxBodyBytes {
		return fmt.Errorf("remote: the write request is larger than %d bytes", wire.MaxBodyBytes)
	}
	ctx, cancel := context.WithTimeout(ctx, e.p.opts.CallTimeout)
	defer cancel()
	_, _, err = e.p.call(ctx, http.MethodPost, envPath(e.doc.ID)+"/workspace/write", body, true)
	return err
}

// exec runs one command through the server. It is sent once (the
// command may have run when an answer is lost) and bounded by
// Options.ExecTimeout, or by the command's own timeout plus
// wire.ExecGraceMs when that is sooner.
func (e *environment) exec(ctx context.Context, command string, req *contract.ExecRequest) (*contract.ExecResult, error) {
	body, err := wire.Marshal(wire.ExecRequest{Command: command, Options: req})
	if err != nil {
		return nil, fmt.Errorf("remote: the exec request has no JSON form: %w", err)
	}
	limit := e.p.opts.ExecTimeout
	if req != nil && req.TimeoutMs != nil {
		if d := time.Duration(*req.TimeoutMs+wire.ExecGraceMs) * time.Millisecond; d > 0 && d < limit {
			limit = d
		}
	}
	ctx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	out, _, err := e.p.call(ctx, http.MethodPost, envPath(e.doc.ID)+"/workspace/exec", body, false)
	if err != nil {
		return nil, err
	}
	res, err := wire.ParseExecResult(out)
	if err != nil {
		return nil, fmt.Errorf("remote: the server's exec result: %w", err)
	}
	return res, nil
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
