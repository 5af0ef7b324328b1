package sidecar

import (
	"net/http"

	"github.com/agentrt/agentrt/contract/wire"
)

// readCall reads a request body of at most limit bytes and decodes it
// strictly with parse (a wire.ParseXxx) into its wire type. A body that
// is too large, unreadable or not the wire type is answered — its code,
// and for a decoding refusal the JSON pointer of what is wrong — and ok
// is false.
func readCall[Req any](s *Server, w http.ResponseWriter, r *http.Request, limit int64, parse func([]byte) (*Req, error)) (req *Req, ok bool) {
	body, ok := s.readBodyWithin(w, r, limit)
	if !ok {
		return nil, false
	}
	req, err := parse(body)
	if err != nil {
		writeError(w, wire.FromSchemaError(err))
		return nil, false
	}
	return req, true
}

// answer writes a provider call's outcome: res as 200, or err as
// providerError maps it; a nil res without an error is errNoAnswer.
func answer[Res any](w http.ResponseWriter, res *Res, err error) {
	if err == nil && res == nil {
		err = errNoAnswer
	}
	if err != nil {
		writeError(w, providerError(err))
		return
	}
	writeJSON(w, http.StatusOK, res)
}
