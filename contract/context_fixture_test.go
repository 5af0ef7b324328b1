package contract_test

import (
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/internal/vectors"
	"github.com/agentrt/agentrt/profile"
)

// Markers placed in content and explanations that must never travel to a
// destination (CTX-16).
const (
	pcMarkerOmittedMessage = "OMITTED-MESSAGE-MARKER"
	pcMarkerOmittedPart    = "OMITTED-PART-MARKER"
	pcMarkerReason         = "REASON-MARKER"
)

func pcDigestOf(c string) string { return "sha256:" + strings.Repeat(c, 64) }

func pcPtr[T any](v T) *T { return &v }

func pcJSON(t testing.TB, s string) canonjson.Value {
	t.Helper()
	v, err := canonjson.Decode([]byte(s))
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func pcSourceBoundary() contract.PortableContextSourceBoundary {
	return contract.PortableContextSourceBoundary{RunID: "run-source", MessageID: "message-3", Provider: "cli-bridge",
		EnvironmentID: "environment-source", SessionID: "session-source", ExecutionID: "execution-source",
		RequestDigest: pcDigestOf("a")}
}

// pcSource is a three-message history: a user message with a text and a
// file part (an attachment), a private reasoning message, and an
// assistant message with a text part and an image (an attachment).
func pcSource(t testing.TB) *contract.PortableConversationContext {
	t.Helper()
	messages := []contract.BackendMessage{
		{ID: "message-1", Role: contract.MessageRoleUser, Timestamp: "2026-08-01T20:00:00.000Z", Parts: []canonjson.Value{
			pcJSON(t, `{"type":"text","text":"Investigate the failure."}`),
			pcJSON(t, `{"type":"file","filename":"build.log","content":"exit 1"}`),
		}},
		{ID: "message-2", Role: contract.MessageRoleAssistant, Timestamp: "2026-08-01T20:00:01.000Z", Parts: []canonjson.Value{
			pcJSON(t, `{"type":"reasoning","text":"`+pcMarkerOmittedMessage+`"}`),
		}},
		{ID: "message-3", Role: contract.MessageRoleAssistant, Timestamp: "2026-08-01T20:00:02.000Z",
			Metadata: map[string]canonjson.Value{"model": canonjson.StringValue("m-1")},
			Parts: []canonjson.Value{
				pcJSON(t, `{"type":"text","text":"`+pcMarkerOmittedPart+`"}`),
				pcJSON(t, `{"type":"image","path":"screenshot.png","mediaType":"image/png"}`),
			}},
	}
	attachments := []contract.PortableContextAttachmentRef{
		{MessageID: "message-1", PartIndex: 1, Digest: pcDigestOf("c"), Name: pcPtr("build.log")},
		{MessageID: "message-3", PartIndex: 1, Digest: pcDigestOf("d"), MediaType: pcPtr("image/png")},
	}
	src, err := contract.NewPortableConversationContext(pcSourceBoundary(), contract.CompletenessComplete, messages, attachments)
	if err != nil {
		t.Fatal(err)
	}
	return src
}

func pcDestination() contract.PortableContextDestination {
	return contract.PortableContextDestination{Runner: "codex", Provider: "cli-bridge", EnvironmentID: pcPtr("environment-destination"),
		SessionID: "session-destination", RunID: "run-destination", ExecutionID: "execution-destination", ProfileDigest: pcDigestOf("b")}
}

// pcDecisions keeps message 1, omits message 2, and in message 3 omits
// the text part and keeps the image.
func pcDecisions() []contract.PortableContextMessagePlan {
	reason := pcMarkerReason + " private reasoning does not transfer"
	return []contract.PortableContextMessagePlan{
		{MessageID: "message-1", Action: contract.ContextActionInclude, Parts: []contract.PortableContextPartPlan{
			{PartIndex: 0, Action: contract.ContextActionInclude},
			{PartIndex: 1, Action: contract.ContextActionInclude},
		}},
		{MessageID: "message-2", Action: contract.ContextActionOmit, Reason: &reason, Parts: []contract.PortableContextPartPlan{
			{PartIndex: 0, Action: contract.ContextActionOmit, Reason: &reason},
		}},
		{MessageID: "message-3", Action: contract.ContextActionInclude, Parts: []contract.PortableContextPartPlan{
			{PartIndex: 1, Action: contract.ContextActionInclude},
			{PartIndex: 0, Action: contract.ContextActionOmit, Reason: pcPtr(pcMarkerReason + " superseded")},
		}},
	}
}

// pcIncludeAll includes every part of every message of src except
// reasoning, which it transforms into cited text.
func pcIncludeAll(src *contract.PortableConversationContext) []contract.PortableContextMessagePlan {
	var out []contract.PortableContextMessagePlan
	for _, m := range src.Messages {
		mp := contract.PortableContextMessagePlan{MessageID: m.ID, Action: contract.ContextActionInclude}
		for i, p := range m.Parts {
			pp := contract.PortableContextPartPlan{PartIndex: int64(i), Action: contract.ContextActionInclude}
			if t, _ := p.Get("type"); t.Str() == contract.PartTypeReasoning {
				out := contract.TextInputPart("Summary of the reasoning.")
				pp = contract.PortableContextPartPlan{PartIndex: int64(i), Action: contract.ContextActionTransform, Output: &out, Reason: pcPtr("runner-private reasoning became cited text")}
			}
			mp.Parts = append(mp.Parts, pp)
		}
		out = append(out, mp)
	}
	return out
}

func pcPlan(t testing.TB) *contract.PortableContextPlan {
	t.Helper()
	plan, err := contract.NewPortableContextPlan("plan-1", pcSource(t), pcDestination(), pcDecisions(), pcPtr[int64](64))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func pcAcceptance(plan *contract.PortableContextPlan, by string) contract.ContextPlanAcceptance {
	return contract.ContextPlanAcceptance{PlanDigest: plan.Digest, AcceptedAt: "2026-08-01T20:01:00.000Z", AcceptedBy: by}
}

func pcRequest(t testing.TB, plan *contract.PortableContextPlan, inputs contract.ContextTransferInputs) *contract.ContextTransferRequest {
	t.Helper()
	req, err := contract.CreateContextTransferRequest("transfer-1", plan, pcAcceptance(plan, contract.AcceptedByUser), inputs)
	if err != nil {
		t.Fatal(err)
	}
	return req
}

// pcReceipt is the receipt a provider returns for req.
func pcReceipt(t testing.TB, req *contract.ContextTransferRequest) *contract.ContextTransferReceipt {
	t.Helper()
	ctx, err := req.Plan.Context()
	if err != nil {
		t.Fatal(err)
	}
	d := req.Plan.Destination
	env := "environment-allocated"
	if d.EnvironmentID != nil {
		env = *d.EnvironmentID
	}
	var ids []string
	for _, m := range req.Plan.Messages {
		ids = append(ids, m.ID)
	}
	return &contract.ContextTransferReceipt{Status: contract.TransferStatusAccepted, OperationID: req.OperationID,
		RequestDigest: req.RequestDigest, PlanDigest: req.Plan.PlanDigest, ContextDigest: ctx.Digest,
		Source: req.Plan.Source, Destination: d, Provider: d.Provider, EnvironmentID: env, SessionID: d.SessionID,
		RunID: d.RunID, ExecutionID: d.ExecutionID, SessionCreatedForOperationID: req.OperationID,
		SessionCreatedAt: "2026-08-01T20:01:00.500Z", TransferredMessageIDs: ids, OmittedMessageIDs: []string{},
		AdmittedAt: "2026-08-01T20:01:01.000Z"}
}

func pcProfile(t testing.TB) (*profile.Profile, string) {
	t.Helper()
	p, digest, err := profile.ParseDigest([]byte(`{"harness":"codex","tools":{"Bash":true}}`))
	if err != nil {
		t.Fatal(err)
	}
	return p, digest
}

func pcMarshal(t testing.TB, x any) string {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	b, err := canonjson.Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func pcClone[T any](t testing.TB, x *T) *T {
	t.Helper()
	v, err := canonjson.ToValue(x)
	if err != nil {
		t.Fatal(err)
	}
	out := new(T)
	if err := canonjson.FromValue(v, out); err != nil {
		t.Fatal(err)
	}
	return out
}

func pcLoadKind(t testing.TB, kind string) *vectors.Kind {
	t.Helper()
	k, err := vectors.Load(kind)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
