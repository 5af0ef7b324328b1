package wire

import (
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Routes of context transfer (contextTransfer). Each is POST with a
// contract.ContextTransferRequest body of at most MaxProfileBodyBytes (its
// inputs may carry a whole profile), served only when the capability
// document declares contextTransfer; otherwise refused with
// CodeUnsupported.
const (
	// PathContextTransfer admits approved portable context into a fresh
	// session, answered with the provider's contract.ContextTransferResult.
	// The request's operation id binds its digest at the provider, so a
	// client re-sends it after a lost answer and is answered replayed
	// with the original session, never a second admission. The server
	// runs it to its end even when the client goes away.
	PathContextTransfer = "/v1/context-transfers"
	// PathContextTransferLookup recovers an earlier transfer's result
	// (ContextTransferLookup). It has no effect.
	PathContextTransferLookup = "/v1/context-transfers/lookup"
)

// ContextTransferLookup answers PathContextTransferLookup: the earlier
// transfer's result, absent when the provider knows none.
type ContextTransferLookup struct {
	Result *contract.ContextTransferResult `json:"result,omitzero"`
}

// KindContextTransferLookup names ContextTransferLookup, for errors.
const KindContextTransferLookup = "SidecarContextTransferLookup"

// ContextTransferLookupSchema is the strict ContextTransferLookup shape.
var ContextTransferLookupSchema = schema.Object(schema.Opt("result", contract.ContextTransferResultSchema))

// ParseContextTransferRequest decodes a context transfer body (at most
// MaxProfileBodyBytes).
func ParseContextTransferRequest(data []byte) (*contract.ContextTransferRequest, error) {
	return parseWithin[contract.ContextTransferRequest](contract.KindContextTransferRequest, contract.ContextTransferRequestSchema, data, MaxProfileBodyBytes)
}

// ParseContextTransferResult decodes a context transfer answer.
func ParseContextTransferResult(data []byte) (*contract.ContextTransferResult, error) {
	return parse[contract.ContextTransferResult](contract.KindContextTransferResult, contract.ContextTransferResultSchema, data)
}

// ParseContextTransferLookup decodes a lookup answer.
func ParseContextTransferLookup(data []byte) (*ContextTransferLookup, error) {
	return parse[ContextTransferLookup](KindContextTransferLookup, ContextTransferLookupSchema, data)
}
