package contract

import (
	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/schema"
)

// Kind name of the native continuation result.
const KindNativeContinuationResult = "AgentNativeContextContinuationResult"

// NativeContinuationResult is a provider's durable outcome of one native
// same-session continuation. On success (acknowledgement accepted or
// replayed) it carries the turn's Result, which never includes a context
// transfer receipt, and ControlRef, the exact reference of the new run in
// the same retained session; a replay returns the original result and the
// exact current reference. On failure (conflict, boundary_mismatch,
// unverified, unknown_session, transport_failure) it carries only the
// acknowledgement, and nothing was dispatched; a durable transport failure
// is always retryable.
type NativeContinuationResult struct {
	Acknowledgement NativeContextContinuationAcknowledgement `json:"acknowledgement"`
	Result          *TurnResult                              `json:"result,omitzero"`
	ControlRef      *ExactRunControlRef                      `json:"controlRef,omitzero"`
}

// Succeeded reports whether the continuation was admitted (accepted or
// replayed) and carries its result and new run.
func (r *NativeContinuationResult) Succeeded() bool {
	s := r.Acknowledgement.Status
	return (s == ContinuationStatusAccepted || s == ContinuationStatusReplayed) && r.Result != nil && r.ControlRef != nil
}

var (
	// NativeContinuationResultSchema is the AgentNativeContextContinuationResult
	// shape: a success (acknowledgement accepted or replayed, result and
	// exact control ref) or a failure (acknowledgement only).
	//
	// As in the reference, the acknowledgement inside a result is the
	// strict acknowledgement combined with a status restriction in a way
	// that tolerates members the acknowledgement does not declare: they
	// are dropped from the accepted value instead of refused (and, being
	// unknown, they still skip the acknowledgement's own status rules).
	NativeContinuationResultSchema = schema.Union(
		schema.Object(
			schema.Req("acknowledgement", evAcknowledgementWithStatus(ContinuationStatusAccepted, ContinuationStatusReplayed)),
			schema.Req("result", TurnResultSchema),
			schema.Req("controlRef", ExactRunControlRefSchema),
		).Refine(func(c *schema.Context, v canonjson.Value) {
			result, _ := v.Get("result")
			if _, ok := result.Get("contextTransferReceipt"); ok {
				c.Custom("native continuation cannot return a context transfer receipt", "result", "contextTransferReceipt")
			}
		}),
		schema.Object(
			schema.Req("acknowledgement", evAcknowledgementWithStatus(ContinuationStatusConflict, ContinuationStatusBoundaryMismatch,
				ContinuationStatusUnverified, ContinuationStatusUnknownSession, ContinuationStatusTransportFailure)),
		).Refine(func(c *schema.Context, v canonjson.Value) {
			ack, _ := v.Get("acknowledgement")
			retryable, ok := ack.Get("retryable")
			if str(ack, "status") == ContinuationStatusTransportFailure && (!ok || retryable.Kind() != canonjson.Bool || !retryable.Bool()) {
				c.Custom("a durable native continuation transport failure must be retryable", "acknowledgement", "retryable")
			}
		}),
	)
)

// evAcknowledgementWithStatus checks a continuation acknowledgement whose
// status must also be one of statuses, the way the reference intersects
// the strict acknowledgement with a non-strict {status} object: every
// issue of either side is kept except "unknown member" issues, which only
// one side (the strict one) raises and the intersection therefore drops.
// The accepted value is the acknowledgement's (unknown members removed).
//
// A local facility: a general intersection node belongs in schema.
func evAcknowledgementWithStatus(statuses ...string) schema.Node {
	status := schema.Object(schema.Req("status", schema.Enum(statuses...))).Strip()
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		var inner schema.Context
		out := NativeContextContinuationAcknowledgementSchema.Check(&inner, v)
		for _, is := range inner.Issues() {
			if is.Code == schema.CodeUnrecognizedKeys {
				continue
			}
			rel, _ := canonjson.SplitPointer(is.Path)
			if evFatalCode(is.Code) {
				c.Fatal(is.Code, is.Message, rel...)
			} else {
				c.Check(is.Code, is.Message, rel...)
			}
		}
		status.Check(c, v)
		return out
	})
}

// evFatalCode reports whether an issue code is a shape problem (which stops
// the refinements of enclosing objects) rather than a failed check.
func evFatalCode(code string) bool {
	switch code {
	case schema.CodeInvalidType, schema.CodeUnrecognizedKeys, schema.CodeInvalidValue,
		schema.CodeInvalidUnion, schema.CodeInvalidKey, schema.CodeInvalidJSON:
		return true
	}
	return false
}

// ParseNativeContinuationResult decodes and validates one native
// continuation result.
func ParseNativeContinuationResult(data []byte) (*NativeContinuationResult, error) {
	return Parse[NativeContinuationResult](KindNativeContinuationResult, NativeContinuationResultSchema, data)
}

// NativeContinuationResultMatchesRequest is the cross-check a caller makes
// before trusting a continuation outcome: request and result both valid,
// the continuation admitted (accepted or replayed) with a result and a new
// run, the acknowledgement matching the request exactly (see
// NativeContextContinuationAcknowledgementMatches), the new run in the
// same provider, environment and session as the continued run (its run
// and execution ids are new), and the result's session, when stated,
// being that session.
func NativeContinuationResultMatchesRequest(req *NativeContextContinuationRequest, res *NativeContinuationResult) bool {
	if req == nil || res == nil {
		return false
	}
	if _, err := Validate(KindNativeContextContinuationRequest, NativeContextContinuationRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindNativeContinuationResult, NativeContinuationResultSchema, res); err != nil {
		return false
	}
	if !res.Succeeded() || !NativeContextContinuationAcknowledgementMatches(req, &res.Acknowledgement) {
		return false
	}
	current := res.ControlRef
	return current.Provider == req.Run.Provider &&
		current.EnvironmentID == req.Run.EnvironmentID &&
		current.SessionID == req.Run.SessionID &&
		(res.Result.SessionID == nil || *res.Result.SessionID == current.SessionID)
}

// NativeContinuationRefusalMatchesRequest reports whether res is the
// provider's definite refusal of exactly req: request and result both
// valid, the acknowledgement naming req's operation id and request digest
// with a refusal status (conflict, boundary_mismatch, unverified or
// unknown_session — the continuation admitted nothing) and no run. A
// transport_failure is no refusal: its outcome is unknown.
func NativeContinuationRefusalMatchesRequest(req *NativeContextContinuationRequest, res *NativeContinuationResult) bool {
	if req == nil || res == nil || res.ControlRef != nil || res.Result != nil {
		return false
	}
	if _, err := Validate(KindNativeContextContinuationRequest, NativeContextContinuationRequestSchema, req); err != nil {
		return false
	}
	if _, err := Validate(KindNativeContinuationResult, NativeContinuationResultSchema, res); err != nil {
		return false
	}
	ack := res.Acknowledgement
	if ack.OperationID != req.OperationID || ack.RequestDigest != req.RequestDigest {
		return false
	}
	switch ack.Status {
	case ContinuationStatusConflict, ContinuationStatusBoundaryMismatch, ContinuationStatusUnverified, ContinuationStatusUnknownSession:
		return true
	}
	return false
}
