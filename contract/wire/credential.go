package wire

import (
	"encoding/base64"
	"fmt"
	"math"
	"net/http"
	"time"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/harness"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// HeaderCredentialRequest carries a seat stage's credential request
// (contract.CredentialRequest) on POST /v1/environments and on POST
// /v1/environments/{id}/turns. It is a header, not a body member, on
// purpose: the request is never part of a create's or a turn's input, so
// it takes no part in their digests, idempotency or replay, and the
// server hands it to its provider's account owner without storing,
// logging or echoing it. A resumed turn (the same turn id again) ignores
// it: the turn's credential was bound when it started.
//
// The value is the request's canonical JSON (CredentialRequest),
// base64url-encoded without padding, at most MaxCredentialHeaderBytes.
// The runtime never sends a credential this way — only which stage asks
// and its account selector; the provider's account owner binds the
// credential (RG-10).
const HeaderCredentialRequest = "Agentrt-Credential-Request"

// MaxCredentialHeaderBytes bounds the HeaderCredentialRequest value.
const MaxCredentialHeaderBytes = 4 << 10

// KindCredentialRequest names the header's decoded value, for errors.
const KindCredentialRequest = "SidecarCredentialRequest"

// CredentialRequest is the JSON form of a contract.CredentialRequest.
type CredentialRequest struct {
	Stage    int                  `json:"stage"`
	Occasion string               `json:"occasion"`
	Harness  harness.Type         `json:"harness"`
	Provider string               `json:"provider"`
	Model    string               `json:"model"`
	Selector profile.SeatSelector `json:"selector"`
}

// CredentialRequestSchema is the strict CredentialRequest shape: a seat
// stage's identity (profile.SeatStageSchema), its index and the occasion.
var CredentialRequestSchema = profile.SeatStageSchema.Extend(
	schema.Req("stage", schema.Number(schema.Int, schema.NonNegative, schema.Max(math.MaxInt32))),
	schema.Req("occasion", schema.Enum(contract.CredentialOnCreate, contract.CredentialOnTurn)),
)

// EncodeCredentialRequest is the HeaderCredentialRequest value of r
// ("" for nil: no header).
func EncodeCredentialRequest(r *contract.CredentialRequest) (string, error) {
	if r == nil {
		return "", nil
	}
	w := CredentialRequest{Stage: r.Stage, Occasion: r.Occasion, Harness: r.Harness, Provider: r.Provider, Model: r.Model, Selector: r.Selector}
	v, err := canonjson.ToValue(w)
	if err != nil {
		return "", fmt.Errorf("wire: the credential request has no JSON form: %w", err)
	}
	if _, err := schema.Run(KindCredentialRequest, CredentialRequestSchema, v); err != nil {
		return "", err
	}
	out := base64.RawURLEncoding.EncodeToString(canonjson.Marshal(v))
	if len(out) > MaxCredentialHeaderBytes {
		return "", &schema.Error{Kind: KindCredentialRequest, Issues: []schema.Issue{{Code: schema.CodeTooBig,
			Message: fmt.Sprintf("the encoded request is larger than %d bytes", MaxCredentialHeaderBytes)}}}
	}
	return out, nil
}

// SetCredentialRequest sets h's HeaderCredentialRequest to r's encoding
// (and removes it for nil).
func SetCredentialRequest(h http.Header, r *contract.CredentialRequest) error {
	v, err := EncodeCredentialRequest(r)
	if err != nil {
		return err
	}
	if v == "" {
		h.Del(HeaderCredentialRequest)
		return nil
	}
	h.Set(HeaderCredentialRequest, v)
	return nil
}

// ParseCredentialRequest decodes a HeaderCredentialRequest value
// strictly: over MaxCredentialHeaderBytes, not base64url, not JSON or not
// the CredentialRequest shape is a *schema.Error whose issues carry
// JSON-pointer paths into the decoded request. "" is no request (nil,
// nil).
func ParseCredentialRequest(value string) (*contract.CredentialRequest, error) {
	if value == "" {
		return nil, nil
	}
	refuse := func(code, msg string) error {
		return &schema.Error{Kind: KindCredentialRequest, Issues: []schema.Issue{{Code: code, Message: msg}}}
	}
	if len(value) > MaxCredentialHeaderBytes {
		return nil, refuse(schema.CodeTooBig, fmt.Sprintf("the header is larger than %d bytes", MaxCredentialHeaderBytes))
	}
	data, err := base64.RawURLEncoding.DecodeString(value)
	if err != nil {
		return nil, refuse(schema.CodeInvalidType, "the header is not unpadded base64url: "+err.Error())
	}
	w, err := contract.Parse[CredentialRequest](KindCredentialRequest, CredentialRequestSchema, data)
	if err != nil {
		return nil, err
	}
	return &contract.CredentialRequest{Stage: w.Stage, Harness: w.Harness, Provider: w.Provider, Model: w.Model, Selector: w.Selector, Occasion: w.Occasion}, nil
}

// CredentialRequestFrom reads r's HeaderCredentialRequest (nil when
// absent). More than one value is refused: a request names one stage.
func CredentialRequestFrom(r *http.Request) (*contract.CredentialRequest, error) {
	vs := r.Header.Values(HeaderCredentialRequest)
	if len(vs) > 1 {
		return nil, &schema.Error{Kind: KindCredentialRequest, Issues: []schema.Issue{{Code: schema.CodeInvalidType,
			Message: fmt.Sprintf("the header is sent %d times; a request names one stage", len(vs))}}}
	}
	if len(vs) == 0 {
		return nil, nil
	}
	return ParseCredentialRequest(vs[0])
}

// QuotaDetail is what a quota_refused error adds: the refusing provider,
// the refused stage when it knows it, and when the quota may allow the
// stage again.
//
// Run is the exact run a refusal broke off part way
// (contract.QuotaRefusalError.Run), absent when nothing was admitted.
type QuotaDetail struct {
	Provider     string                       `json:"provider"`
	Stage        *int                         `json:"stage,omitzero"`
	RetryAfterMs *int64                       `json:"retryAfterMs,omitzero"`
	Message      *string                      `json:"message,omitzero"`
	Run          *contract.ExactRunControlRef `json:"run,omitzero"`
}

var quotaDetailSchema = schema.Object(
	schema.Req("provider", contract.BoundedIdentifier),
	schema.Opt("stage", schema.Number(schema.Int, schema.NonNegative, schema.Max(math.MaxInt32))),
	schema.Opt("retryAfterMs", schema.Number(schema.Int, schema.NonNegative, schema.Max(canonjson.MaxSafeInteger))),
	schema.Opt("message", contract.BoundedString),
	schema.Opt("run", contract.ExactRunControlRefSchema),
)

// QuotaError is the wire detail of a provider's typed quota refusal.
func QuotaError(q *contract.QuotaRefusalError) ErrorDetail {
	d := QuotaDetail{Provider: q.Provider}
	if q.Stage >= 0 {
		k := q.Stage
		d.Stage = &k
	}
	if q.RetryAfter != nil {
		ms := max(q.RetryAfter.Milliseconds(), 0)
		d.RetryAfterMs = &ms
	}
	if q.Message != "" {
		m := q.Message
		d.Message = &m
	}
	if q.Run != nil {
		run := *q.Run
		d.Run = &run
	}
	return ErrorDetail{Code: CodeQuotaRefused, Message: q.Error(), Quota: &d}
}

// quotaRefusal is the contract error a quota_refused answer stands for.
func (e *Error) quotaRefusal() *contract.QuotaRefusalError {
	q := &contract.QuotaRefusalError{Stage: -1}
	if d := e.Quota; d != nil {
		q.Provider = d.Provider
		if d.Stage != nil {
			q.Stage = *d.Stage
		}
		if d.RetryAfterMs != nil {
			ra := time.Duration(*d.RetryAfterMs) * time.Millisecond
			q.RetryAfter = &ra
		}
		if d.Message != nil {
			q.Message = *d.Message
		}
		if d.Run != nil {
			run := *d.Run
			q.Run = &run
		}
	}
	return q
}
