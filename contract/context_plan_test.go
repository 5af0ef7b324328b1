package contract_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

func pcRefusedAt(t *testing.T, err error, path string) {
	t.Helper()
	var se *schema.Error
	if !errors.As(err, &se) {
		t.Fatalf("want a refusal at %q, got %v", path, err)
	}
	for _, is := range se.Issues {
		if is.Path == path {
			return
		}
	}
	t.Fatalf("want an issue at %q, got %v", path, err)
}

// TestInputParts: InputPart and BackendMessage are the only message format
// (CTX-01); turn input reuses InputPartSchema.
func TestInputParts(t *testing.T) {
	for _, tc := range []struct {
		in    string
		valid bool
	}{
		{`{"type":"text","text":""}`, true},
		{`{"type":"file","filename":"a","mediaType":"b","url":"c","path":"d","content":"e"}`, true},
		{`{"type":"image","path":"p.png"}`, true},
		{`{"type":"image","content":"x"}`, false},
		{`{"type":"text"}`, false},
		{`{"type":"reasoning","text":"x"}`, false},
		{`{"type":"text","text":"x","__proto__":{"y":1}}`, true},
		{`{"type":"text","text":"x","extra":1}`, false},
	} {
		_, err := contract.ParseInputPart([]byte(tc.in))
		if (err == nil) != tc.valid {
			t.Errorf("%s: err=%v, want valid=%v", tc.in, err, tc.valid)
		}
	}
	if _, err := contract.ParseBackendMessage([]byte(`{"id":"m","role":"user","parts":[{"any":"json"}],"timestamp":"2026-08-01T20:00:00Z"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := contract.ParseBackendMessage([]byte(`{"id":"m","role":"tool","parts":[],"timestamp":"2026-08-01T20:00:00Z"}`)); err == nil {
		t.Fatal("accepted an unknown role")
	}
	long := `"2026-08-01T20:00:00.` + strings.Repeat("0", 50) + `Z"`
	if _, err := contract.ParseBackendMessage([]byte(`{"id":"m","role":"user","parts":[],"timestamp":` + long + `}`)); err == nil {
		t.Fatal("accepted a timestamp longer than 64 units")
	}
}

func TestRenderInputParts(t *testing.T) {
	parts := []contract.InputPart{
		contract.TextInputPart("  Look at this. "),
		contract.TextInputPart(""),
		{Type: contract.PartTypeFile, Filename: pcPtr("a.txt"), Path: pcPtr("")},
		{Type: contract.PartTypeImage},
		contract.TextInputPart("Thanks"),
	}
	want := "Look at this. \n\nThanks\n\nAttached files:\n[File: a.txt]\n[Image: image attachment]"
	if got := contract.RenderInputPartsAsText(parts); got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	if got := contract.RenderInputPartsAsText([]contract.InputPart{{Type: contract.PartTypeFile}}); got != "Attached files:\n[File: file attachment]" {
		t.Errorf("got %q", got)
	}
	if got := contract.NormalizeInputParts("hi", nil); len(got) != 1 || *got[0].Text != "hi" {
		t.Errorf("normalize message: %v", got)
	}
	if got := contract.NormalizeInputParts("hi", parts[:1]); len(got) != 1 || *got[0].Text != "  Look at this. " {
		t.Errorf("normalize parts: %v", got)
	}
	if got := contract.NormalizeInputParts("", nil); got == nil || len(got) != 0 {
		t.Errorf("normalize nothing: %v", got)
	}
}

// TestPortableConversationContextDigest: CTX-03, CTX-07.
func TestPortableConversationContextDigest(t *testing.T) {
	src := pcSource(t)
	data := pcMarshal(t, src)
	if _, err := contract.ParsePortableConversationContext([]byte(data)); err != nil {
		t.Fatal(err)
	}
	changed := pcClone(t, src)
	changed.Messages[0].Role = contract.MessageRoleSystem
	_, err := contract.ParsePortableConversationContext([]byte(pcMarshal(t, changed)))
	pcRefusedAt(t, err, "/digest")

	dangling := pcClone(t, src)
	dangling.Attachments[0].PartIndex = 2
	_, err = contract.NewPortableConversationContext(dangling.Source, dangling.Completeness, dangling.Messages, dangling.Attachments)
	pcRefusedAt(t, err, "/attachments")

	dup := pcClone(t, src)
	dup.Messages[1].ID = dup.Messages[0].ID
	_, err = contract.NewPortableConversationContext(dup.Source, dup.Completeness, dup.Messages, dup.Attachments)
	pcRefusedAt(t, err, "/messages")

	// A lone surrogate has no canonical form: the digest cannot be
	// computed and the whole context is refused.
	lone := `{"source":` + pcMarshal(t, src.Source) + `,"completeness":"complete","messages":[{"id":"m","role":"user","parts":[{"type":"text","text":"\ud800"}],"timestamp":"2026-08-01T20:00:00Z"}],"attachments":[],"digest":"` + pcDigestOf("0") + `"}`
	_, err = contract.ParsePortableConversationContext([]byte(lone))
	pcRefusedAt(t, err, "")
}

// TestPortableContextPlan: the local plan embeds the source (CTX-03),
// decides every message and part (CTX-04), names the destination runner
// (CTX-05), contains the exact derived context (CTX-06) and carries a
// canonical digest (CTX-07).
func TestPortableContextPlan(t *testing.T) {
	src := pcSource(t)
	plan := pcPlan(t)
	if !strings.Contains(pcMarshal(t, plan.Source), pcMarkerOmittedPart) || plan.Source.Digest != src.Digest {
		t.Fatal("the plan does not embed the immutable source")
	}
	decided := 0
	for _, mp := range plan.Messages {
		decided += len(mp.Parts)
	}
	if len(plan.Messages) != len(src.Messages) || decided != 5 {
		t.Fatalf("decisions: %d messages, %d parts", len(plan.Messages), decided)
	}
	if plan.Destination.Runner != "codex" {
		t.Fatal("runner")
	}
	// Derived context: message 1 whole, message 3 with only its image;
	// the image attachment is re-indexed to its output position (CTX-18).
	want := `[{"id":"message-1","parts":[{"text":"Investigate the failure.","type":"text"},{"content":"exit 1","filename":"build.log","type":"file"}],"role":"user","timestamp":"2026-08-01T20:00:00.000Z"},{"id":"message-3","metadata":{"model":"m-1"},"parts":[{"mediaType":"image/png","path":"screenshot.png","type":"image"}],"role":"assistant","timestamp":"2026-08-01T20:00:02.000Z"}]`
	if got := pcMarshal(t, plan.Context.Messages); got != want {
		t.Fatalf("derived messages\n got %s\nwant %s", got, want)
	}
	if len(plan.Context.Attachments) != 2 || plan.Context.Attachments[0].PartIndex != 1 ||
		plan.Context.Attachments[1].MessageID != "message-3" || plan.Context.Attachments[1].PartIndex != 0 {
		t.Fatalf("derived attachments %+v", plan.Context.Attachments)
	}
	if plan.Context.Completeness != contract.CompletenessPartial || !plan.RequiresAcceptance {
		t.Fatal("an omitting plan must be partial and require acceptance")
	}
	if _, err := contract.ParsePortableContextPlan([]byte(pcMarshal(t, plan))); err != nil {
		t.Fatal(err)
	}
	// The plan holds its own copy of the source: changing the caller's
	// source afterwards changes nothing (CTX-03).
	mutable := pcSource(t)
	copied, err := contract.NewPortableContextPlan("plan-1", mutable, pcDestination(), pcDecisions(), pcPtr[int64](64))
	if err != nil {
		t.Fatal(err)
	}
	mutable.Messages[0].ID = "changed"
	mutable.Messages[0].Parts[0] = canonjson.StringValue("changed")
	if pcMarshal(t, copied) != pcMarshal(t, plan) {
		t.Fatal("mutating the source changed the plan")
	}

	for name, tamper := range map[string]struct {
		edit func(p *contract.PortableContextPlan)
		path string
	}{
		"digest":           {func(p *contract.PortableContextPlan) { p.Digest = pcDigestOf("0") }, "/digest"},
		"runner":           {func(p *contract.PortableContextPlan) { p.Destination.Runner = "kimi" }, "/digest"},
		"reason":           {func(p *contract.PortableContextPlan) { p.Messages[1].Reason = pcPtr("another reason") }, "/digest"},
		"estimate":         {func(p *contract.PortableContextPlan) { p.EstimatedTokens = nil }, "/digest"},
		"undecided-msg":    {func(p *contract.PortableContextPlan) { p.Messages = p.Messages[:2] }, "/messages"},
		"undecided-part":   {func(p *contract.PortableContextPlan) { p.Messages[0].Parts = p.Messages[0].Parts[:1] }, "/messages"},
		"acceptance":       {func(p *contract.PortableContextPlan) { p.RequiresAcceptance = false }, "/requiresAcceptance"},
		"completeness":     {func(p *contract.PortableContextPlan) { p.Context.Completeness = contract.CompletenessComplete }, "/context/completeness"},
		"forged-messages":  {func(p *contract.PortableContextPlan) { p.Context.Messages[0].Role = contract.MessageRoleSystem }, "/context/messages"},
		"source-attach-ix": {func(p *contract.PortableContextPlan) { p.Context.Attachments[1].PartIndex = 1 }, "/context/attachments"},
	} {
		t.Run(name, func(t *testing.T) {
			p := pcClone(t, plan)
			tamper.edit(p)
			if strings.HasPrefix(tamper.path, "/context/") {
				// Re-digest the context so only the plan rule fails.
				ctx, err := contract.NewPortableConversationContext(p.Context.Source, p.Context.Completeness, p.Context.Messages, p.Context.Attachments)
				if err == nil {
					p.Context = *ctx
				}
			}
			_, err := contract.ParsePortableContextPlan([]byte(pcMarshal(t, p)))
			pcRefusedAt(t, err, tamper.path)
		})
	}

	// A reasoning part can only be transformed or omitted.
	bad := pcDecisions()
	bad[1] = contract.PortableContextMessagePlan{MessageID: "message-2", Action: contract.ContextActionInclude,
		Parts: []contract.PortableContextPartPlan{{PartIndex: 0, Action: contract.ContextActionInclude}}}
	if _, err := contract.NewPortableContextPlan("plan-2", src, pcDestination(), bad, nil); err == nil {
		t.Fatal("included a reasoning part")
	}
}

// TestPartialRequiresAcceptance: partial input or output always requires
// explicit user or policy acceptance, even when no message was
// transformed (CTX-14).
func TestPartialRequiresAcceptance(t *testing.T) {
	src := pcSource(t)
	whole, err := contract.NewPortableContextPlan("plan-whole", src, pcDestination(), pcIncludeAll(src), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !whole.RequiresAcceptance {
		t.Fatal("a transformed part must require acceptance")
	}

	// A source without reasoning, included whole: complete, no acceptance
	// needed, system acceptance allowed.
	plain := pcClone(t, src)
	plain.Messages = []contract.BackendMessage{src.Messages[0]}
	plain.Attachments = plain.Attachments[:1]
	plainCtx, err := contract.NewPortableConversationContext(plain.Source, contract.CompletenessComplete, plain.Messages, plain.Attachments)
	if err != nil {
		t.Fatal(err)
	}
	untouched, err := contract.NewPortableContextPlan("plan-untouched", plainCtx, pcDestination(), pcIncludeAll(plainCtx), nil)
	if err != nil {
		t.Fatal(err)
	}
	if untouched.RequiresAcceptance || untouched.Context.Completeness != contract.CompletenessComplete {
		t.Fatal("an unchanged complete transfer needs no acceptance")
	}
	if _, err := contract.CreateContextTransferRequest("t-1", untouched, pcAcceptance(untouched, contract.AcceptedBySystem), contract.ContextTransferInputs{}); err != nil {
		t.Fatal(err)
	}

	// The same messages from a partial source: nothing transformed, still
	// partial and still needs a user or policy.
	partialCtx, err := contract.NewPortableConversationContext(plain.Source, contract.CompletenessPartial, plain.Messages, plain.Attachments)
	if err != nil {
		t.Fatal(err)
	}
	partial, err := contract.NewPortableContextPlan("plan-partial", partialCtx, pcDestination(), pcIncludeAll(partialCtx), nil)
	if err != nil {
		t.Fatal(err)
	}
	if !partial.RequiresAcceptance || partial.Context.Completeness != contract.CompletenessPartial {
		t.Fatal("a partial source must stay partial and require acceptance")
	}
	_, err = contract.CreateContextTransferRequest("t-2", partial, pcAcceptance(partial, contract.AcceptedBySystem), contract.ContextTransferInputs{})
	pcRefusedAt(t, err, "/acceptance/acceptedBy")
	for _, by := range []string{contract.AcceptedByUser, contract.AcceptedByPolicy} {
		if _, err := contract.CreateContextTransferRequest("t-2", partial, pcAcceptance(partial, by), contract.ContextTransferInputs{}); err != nil {
			t.Fatalf("%s acceptance: %v", by, err)
		}
	}

	// An omitting plan cannot become a request without its acceptance.
	plan := pcPlan(t)
	_, err = contract.CreateContextTransferRequest("t-3", plan, pcAcceptance(plan, contract.AcceptedBySystem), contract.ContextTransferInputs{})
	pcRefusedAt(t, err, "/acceptance/acceptedBy")
	other := pcAcceptance(plan, contract.AcceptedByUser)
	other.PlanDigest = whole.Digest
	_, err = contract.CreateContextTransferRequest("t-3", plan, other, contract.ContextTransferInputs{})
	pcRefusedAt(t, err, "/acceptance/planDigest")
}

// TestPlanRequestAndResults: plan request digests (CTX-09), results that
// repeat the request id and digest (CTX-10), and
// PortableContextPlanResultMatchesRequest (CTX-11, CTX-12, CTX-13).
func TestPlanRequestAndResults(t *testing.T) {
	src := pcSource(t)
	req, err := contract.NewPortableContextPlanRequest("plan-request-1", *src, pcDestination(), pcPtr[int64](64))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := contract.ParsePortableContextPlanRequest([]byte(pcMarshal(t, req))); err != nil {
		t.Fatal(err)
	}
	for name, edit := range map[string]func(r *contract.PortableContextPlanRequest){
		"requestId":   func(r *contract.PortableContextPlanRequest) { r.RequestID = "plan-request-2" },
		"budget":      func(r *contract.PortableContextPlanRequest) { r.MaxInputTokens = pcPtr[int64](65) },
		"no-budget":   func(r *contract.PortableContextPlanRequest) { r.MaxInputTokens = nil },
		"destination": func(r *contract.PortableContextPlanRequest) { r.Destination.Model = pcPtr("gpt") },
	} {
		r := pcClone(t, req)
		edit(r)
		_, err := contract.ParsePortableContextPlanRequest([]byte(pcMarshal(t, r)))
		pcRefusedAt(t, err, "/requestDigest")
		if name == "requestId" {
			again, err := contract.NewPortableContextPlanRequest(r.RequestID, r.Source, r.Destination, r.MaxInputTokens)
			if err != nil || again.RequestDigest == req.RequestDigest {
				t.Fatal("a changed request kept its digest")
			}
		}
	}

	plan, err := contract.NewPortableContextPlan("plan-1", src, pcDestination(), pcDecisions(), pcPtr[int64](64))
	if err != nil {
		t.Fatal(err)
	}
	ready := &contract.PortableContextPlanResult{Status: contract.PlanStatusReady, RequestID: req.RequestID, RequestDigest: req.RequestDigest, Plan: plan}
	over := &contract.PortableContextPlanResult{Status: contract.PlanStatusOverLimit, RequestID: req.RequestID, RequestDigest: req.RequestDigest,
		EstimatedTokens: pcPtr[int64](120), MaxInputTokens: pcPtr[int64](64), SuggestedBoundaryMessageID: pcPtr("message-3"), Message: pcPtr("too long")}
	unsupported := &contract.PortableContextPlanResult{Status: contract.PlanStatusUnsupported, RequestID: req.RequestID, RequestDigest: req.RequestDigest, Message: pcPtr("no")}

	for _, res := range []*contract.PortableContextPlanResult{ready, over, unsupported} {
		data := pcMarshal(t, res)
		if _, err := contract.ParsePortableContextPlanResult([]byte(data)); err != nil {
			t.Fatalf("%s: %v", res.Status, err)
		}
		for _, drop := range []string{"requestId", "requestDigest"} {
			v := pcJSON(t, data)
			var members []canonjson.Member
			for _, m := range v.Members() {
				if m.Name != drop {
					members = append(members, m)
				}
			}
			_, err := contract.ParsePortableContextPlanResult(canonjson.Marshal(canonjson.ObjectValue(members)))
			pcRefusedAt(t, err, "/"+drop)
		}
	}

	with := func(r *contract.PortableContextPlanResult, edit func(r *contract.PortableContextPlanResult)) *contract.PortableContextPlanResult {
		c := pcClone(t, r)
		edit(c)
		return c
	}
	noBudget, _ := contract.NewPortableContextPlanRequest("plan-request-1", *src, pcDestination(), nil)
	otherDest := pcDestination()
	otherDest.Runner = "kimi"
	swapped, _ := contract.NewPortableContextPlan("plan-1", src, otherDest, pcDecisions(), pcPtr[int64](64))
	overBudget, _ := contract.NewPortableContextPlan("plan-1", src, pcDestination(), pcDecisions(), pcPtr[int64](65))
	noEstimate, _ := contract.NewPortableContextPlan("plan-1", src, pcDestination(), pcDecisions(), nil)

	for _, tc := range []struct {
		name string
		req  *contract.PortableContextPlanRequest
		res  *contract.PortableContextPlanResult
		want bool
	}{
		{"ready", req, ready, true},
		{"ready/other-id", req, with(ready, func(r *contract.PortableContextPlanResult) { r.RequestID = "x" }), false},
		{"ready/other-digest", req, with(ready, func(r *contract.PortableContextPlanResult) { r.RequestDigest = pcDigestOf("9") }), false},
		{"ready/swapped-destination", req, with(ready, func(r *contract.PortableContextPlanResult) { r.Plan = swapped }), false},
		{"ready/over-budget", req, with(ready, func(r *contract.PortableContextPlanResult) { r.Plan = overBudget }), false},
		{"ready/no-estimate", req, with(ready, func(r *contract.PortableContextPlanResult) { r.Plan = noEstimate }), false},
		{"ready/no-budget", noBudget, with(ready, func(r *contract.PortableContextPlanResult) {
			r.RequestDigest = noBudget.RequestDigest
			r.Plan = noEstimate
		}), true},
		{"ready/invalid-plan", req, with(ready, func(r *contract.PortableContextPlanResult) { r.Plan.Digest = pcDigestOf("0") }), false},
		{"over", req, over, true},
		{"over/no-estimate", req, with(over, func(r *contract.PortableContextPlanResult) { r.EstimatedTokens = nil }), true},
		{"over/estimate-within", req, with(over, func(r *contract.PortableContextPlanResult) { r.EstimatedTokens = pcPtr[int64](64) }), false},
		{"over/other-budget", req, with(over, func(r *contract.PortableContextPlanResult) { r.MaxInputTokens = pcPtr[int64](32) }), false},
		{"over/unknown-boundary", req, with(over, func(r *contract.PortableContextPlanResult) { r.SuggestedBoundaryMessageID = pcPtr("message-9") }), false},
		{"over/request-without-budget", noBudget, with(over, func(r *contract.PortableContextPlanResult) { r.RequestDigest = noBudget.RequestDigest }), false},
		{"unsupported", req, unsupported, true},
		{"unsupported/other-id", req, with(unsupported, func(r *contract.PortableContextPlanResult) { r.RequestID = "x" }), false},
		{"nil", req, nil, false},
	} {
		if got := contract.PortableContextPlanResultMatchesRequest(tc.req, tc.res); got != tc.want {
			t.Errorf("%s: match=%v, want %v", tc.name, got, tc.want)
		}
	}
}
