package remote

import (
	"context"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/contract/wire"
)

// readFile reads a workspace file through the server.
func (e *environment) readFile(ctx context.Context, path, sessionID string) (string, error) {
	res, err := roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/workspace/read",
		body: wire.ReadFileRequest{Path: path, SessionID: optional(sessionID)}, what: "the read request", answer: "read answer",
		timeout: e.p.opts.CallTimeout, retry: true}, wire.ParseReadFileResult)
	if err != nil {
		return "", err
	}
	return res.Content, nil
}

// writeFile writes a workspace file through the server. Writing the same
// content again is harmless, so a lost answer is retried.
func (e *environment) writeFile(ctx context.Context, path, content, sessionID string) error {
	_, err := roundTrip[any](ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/workspace/write",
		body: wire.WriteFileRequest{Path: path, Content: content, SessionID: optional(sessionID)}, what: "the write request",
		max: wire.MaxBodyBytes, timeout: e.p.opts.CallTimeout, retry: true}, nil)
	return err
}

// exec runs one command through the server. It is sent once (the
// command may have run when an answer is lost) and bounded by
// Options.ExecTimeout, or by the command's own timeout plus
// wire.ExecGraceMs when that is sooner.
func (e *environment) exec(ctx context.Context, command string, req *contract.ExecRequest) (*contract.ExecResult, error) {
	limit := e.p.opts.ExecTimeout
	if req != nil && req.TimeoutMs != nil {
		if d := time.Duration(*req.TimeoutMs+wire.ExecGraceMs) * time.Millisecond; d > 0 && d < limit {
			limit = d
		}
	}
	return roundTrip(ctx, e.p, exchange{method: http.MethodPost, path: envPath(e.doc.ID) + "/workspace/exec",
		body: wire.ExecRequest{Command: command, Options: req}, what: "the exec request", answer: "exec result",
		timeout: limit}, wire.ParseExecResult)
}

func optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
