package contract_test

import (
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// TestTransferProjection: CreateContextTransferRequest validates the local
// plan and projects it into a transfer plan of selected typed content and
// commitments (CTX-15); omitted content and explanations do not travel
// (CTX-08, CTX-16, CTX-20); attachments are indexed in the selected output
// (CTX-18); the destination verifies the plan digest from the commitments
// (CTX-17).
func TestTransferProjection(t *testing.T) {
	plan := pcPlan(t)
	req := pcRequest(t, plan, contract.ContextTransferInputs{})
	tp := req.Plan

	if tp.PlanDigest != plan.Digest || req.Acceptance.PlanDigest != plan.Digest {
		t.Fatal("the transfer plan must carry the accepted plan digest")
	}
	if pcMarshal(t, tp.Messages) != pcMarshal(t, plan.Context.Messages) || pcMarshal(t, tp.Attachments) != pcMarshal(t, plan.Context.Attachments) {
		t.Fatal("the transfer plan must carry exactly the derived content")
	}
	ctx, err := tp.Context()
	if err != nil || ctx.Digest != plan.Context.Digest {
		t.Fatalf("the destination must rebuild the exact derived context: %v", err)
	}
	if tp.Attachments[1].MessageID != "message-3" || tp.Attachments[1].PartIndex != 0 {
		t.Fatalf("attachment not indexed in the selected output: %+v", tp.Attachments[1])
	}
	// One commitment per selected message, part and attachment; none for
	// the omitted message or part.
	if len(tp.Commitments.Messages) != 2 || len(tp.Commitments.Messages[0].Parts) != 2 ||
		len(tp.Commitments.Messages[1].Parts) != 1 || len(tp.Commitments.Attachments) != 2 {
		t.Fatalf("commitments %+v", tp.Commitments)
	}
	data := pcMarshal(t, req)
	for _, marker := range []string{pcMarkerOmittedMessage, pcMarkerOmittedPart, pcMarkerReason, "message-2", `"reason"`, `"context"`} {
		if strings.Contains(data, marker) {
			t.Errorf("request bytes carry %q", marker)
		}
	}
	if _, err := contract.ParseContextTransferRequest([]byte(data)); err != nil {
		t.Fatal(err)
	}
	if _, err := contract.ParsePortableContextTransferPlan([]byte(pcMarshal(t, tp))); err != nil {
		t.Fatal(err)
	}

	// The receiver recomputes commitments and the plan digest: one flipped
	// commitment, or content that no longer matches it, fails.
	for name, tc := range map[string]struct {
		edit func(tp *contract.PortableContextTransferPlan)
		path string
	}{
		"flipped-part":       {func(tp *contract.PortableContextTransferPlan) { tp.Commitments.Messages[0].Parts[1] = pcDigestOf("0") }, "/commitments/messages/0/parts/1"},
		"flipped-metadata":   {func(tp *contract.PortableContextTransferPlan) { tp.Commitments.Messages[1].Metadata = pcDigestOf("0") }, "/commitments/messages/1/metadata"},
		"flipped-attachment": {func(tp *contract.PortableContextTransferPlan) { tp.Commitments.Attachments[0] = pcDigestOf("0") }, "/commitments/attachments/0"},
		"flipped-review":     {func(tp *contract.PortableContextTransferPlan) { tp.ReviewDigest = pcDigestOf("0") }, "/planDigest"},
		"changed-content":    {func(tp *contract.PortableContextTransferPlan) { tp.Messages[0].Timestamp = "2026-08-01T20:00:00.001Z" }, "/commitments/messages/0/metadata"},
		"changed-runner":     {func(tp *contract.PortableContextTransferPlan) { tp.Destination.Runner = "kimi" }, "/planDigest"},
		"dropped-commitment": {func(tp *contract.PortableContextTransferPlan) {
			tp.Commitments.Attachments = tp.Commitments.Attachments[:1]
		}, "/commitments/attachments"},
		"acceptance-flag": {func(tp *contract.PortableContextTransferPlan) { tp.RequiresAcceptance = false }, "/requiresAcceptance"},
	} {
		t.Run(name, func(t *testing.T) {
			changed := pcClone(t, &tp)
			tc.edit(changed)
			_, err := contract.ParsePortableContextTransferPlan([]byte(pcMarshal(t, changed)))
			pcRefusedAt(t, err, tc.path)
			bad := pcClone(t, req)
			bad.Plan = *changed
			_, err = contract.ParseContextTransferRequest([]byte(pcMarshal(t, bad)))
			if err == nil {
				t.Fatal("a request with a tampered transfer plan was accepted")
			}
		})
	}
}

// TestCommitmentIsolation: changing one selected part changes exactly its
// commitment (CTX-19); changing an explanation changes only the review
// digest (CTX-21); both change the plan digest.
func TestCommitmentIsolation(t *testing.T) {
	src := pcSource(t)
	base := pcPlan(t)
	baseTP, err := contract.ProjectPortableContextPlan(base)
	if err != nil {
		t.Fatal(err)
	}

	changedSrc := pcClone(t, src)
	changedSrc.Messages[0].Parts[1] = pcJSON(t, `{"type":"file","filename":"build.log","content":"exit 2"}`)
	ctx, err := contract.NewPortableConversationContext(changedSrc.Source, changedSrc.Completeness, changedSrc.Messages, changedSrc.Attachments)
	if err != nil {
		t.Fatal(err)
	}
	partPlan, err := contract.NewPortableContextPlan("plan-1", ctx, pcDestination(), pcDecisions(), pcPtr[int64](64))
	if err != nil {
		t.Fatal(err)
	}
	partTP, err := contract.ProjectPortableContextPlan(partPlan)
	if err != nil {
		t.Fatal(err)
	}
	if diff := pcCommitmentDiff(baseTP, partTP); !slices.Equal(diff, []string{"messages/0/parts/1", "review"}) {
		t.Fatalf("changing one part changed %v", diff)
	}

	decisions := pcDecisions()
	decisions[2].Parts[1].Reason = pcPtr("another explanation")
	reasonPlan, err := contract.NewPortableContextPlan("plan-1", src, pcDestination(), decisions, pcPtr[int64](64))
	if err != nil {
		t.Fatal(err)
	}
	reasonTP, err := contract.ProjectPortableContextPlan(reasonPlan)
	if err != nil {
		t.Fatal(err)
	}
	if diff := pcCommitmentDiff(baseTP, reasonTP); !slices.Equal(diff, []string{"review"}) {
		t.Fatalf("changing an explanation changed %v", diff)
	}
	if reasonPlan.Digest == base.Digest || partPlan.Digest == base.Digest {
		t.Fatal("the plan digest must bind parts and explanations")
	}
	if pcMarshal(t, reasonTP.Messages) != pcMarshal(t, baseTP.Messages) {
		t.Fatal("an explanation changed the transferred content")
	}
}

func pcCommitmentDiff(a, b *contract.PortableContextTransferPlan) []string {
	var out []string
	for i := range a.Commitments.Messages {
		am, bm := a.Commitments.Messages[i], b.Commitments.Messages[i]
		if am.Metadata != bm.Metadata {
			out = append(out, "messages/"+canonjson.IndexToken(i)+"/metadata")
		}
		for j := range am.Parts {
			if am.Parts[j] != bm.Parts[j] {
				out = append(out, "messages/"+canonjson.IndexToken(i)+"/parts/"+canonjson.IndexToken(j))
			}
		}
	}
	for i := range a.Commitments.Attachments {
		if a.Commitments.Attachments[i] != b.Commitments.Attachments[i] {
			out = append(out, "attachments/"+canonjson.IndexToken(i))
		}
	}
	if a.ReviewDigest != b.ReviewDigest {
		out = append(out, "review")
	}
	return out
}

// TestTransferRequestDigest: the request binds the operation id to the
// accepted transfer plan (CTX-26), and freezes optional workspace and
// resources (CTX-38).
func TestTransferRequestDigest(t *testing.T) {
	plan := pcPlan(t)
	req := pcRequest(t, plan, contract.ContextTransferInputs{})
	other, err := contract.CreateContextTransferRequest("transfer-2", plan, pcAcceptance(plan, contract.AcceptedByUser), contract.ContextTransferInputs{})
	if err != nil {
		t.Fatal(err)
	}
	if other.RequestDigest == req.RequestDigest {
		t.Fatal("the operation id is not bound")
	}
	ws := map[string]canonjson.Value{"repoUrl": canonjson.StringValue("https://example.com/r.git")}
	withWS := pcRequest(t, plan, contract.ContextTransferInputs{Workspace: ws})
	changedWS := pcRequest(t, plan, contract.ContextTransferInputs{Workspace: map[string]canonjson.Value{"repoUrl": canonjson.StringValue("https://example.com/s.git")}})
	withRes := pcRequest(t, plan, contract.ContextTransferInputs{Resources: map[string]canonjson.Value{"cpu": canonjson.NumberValue(2)}})
	seen := map[string]bool{req.RequestDigest: true}
	for _, r := range []*contract.ContextTransferRequest{withWS, changedWS, withRes} {
		if seen[r.RequestDigest] {
			t.Fatal("a creation input is not frozen into the request digest")
		}
		seen[r.RequestDigest] = true
	}
	tampered := pcClone(t, withWS)
	tampered.Workspace = changedWS.Workspace
	_, err = contract.ParseContextTransferRequest([]byte(pcMarshal(t, tampered)))
	pcRefusedAt(t, err, "/requestDigest")
	tampered = pcClone(t, req)
	tampered.OperationID = "transfer-3"
	_, err = contract.ParseContextTransferRequest([]byte(pcMarshal(t, tampered)))
	pcRefusedAt(t, err, "/requestDigest")
}

// TestUnboundDestination: an unbound destination (CTX-34) requires the
// inline profile with the destination's profile digest (CTX-37); the
// receipt keeps the unbound destination and binds the fresh environment
// (CTX-35); a prebound destination requires equality (CTX-36).
func TestUnboundDestination(t *testing.T) {
	prof, profDigest := pcProfile(t)
	dest := pcDestination()
	dest.EnvironmentID = nil
	dest.ProfileDigest = profDigest
	plan, err := contract.NewPortableContextPlan("plan-u", pcSource(t), dest, pcDecisions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	acceptance := pcAcceptance(plan, contract.AcceptedByPolicy)
	_, err = contract.CreateContextTransferRequest("transfer-u", plan, acceptance, contract.ContextTransferInputs{})
	pcRefusedAt(t, err, "/profile")

	wrongDest := dest
	wrongDest.ProfileDigest = pcDigestOf("e")
	wrongPlan, err := contract.NewPortableContextPlan("plan-u", pcSource(t), wrongDest, pcDecisions(), nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = contract.CreateContextTransferRequest("transfer-u", wrongPlan, pcAcceptance(wrongPlan, contract.AcceptedByPolicy), contract.ContextTransferInputs{Profile: prof})
	pcRefusedAt(t, err, "/profile")

	req, err := contract.CreateContextTransferRequest("transfer-u", plan, acceptance, contract.ContextTransferInputs{Profile: prof})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := contract.ParseContextTransferRequest([]byte(pcMarshal(t, req))); err != nil {
		t.Fatal(err)
	}
	receipt := pcReceipt(t, req)
	receipt.EnvironmentID = "environment-fresh-7"
	if !contract.ContextTransferReceiptMatches(req, receipt) {
		t.Fatal("a receipt binding the allocated environment must match")
	}
	filled := pcClone(t, receipt)
	filled.Destination.EnvironmentID = pcPtr("environment-fresh-7")
	if contract.ContextTransferReceiptMatches(req, filled) {
		t.Fatal("the receipt must repeat the original (unbound) destination")
	}
	sourceEnv := pcClone(t, receipt)
	sourceEnv.EnvironmentID = "environment-source"
	if contract.ContextTransferReceiptMatches(req, sourceEnv) {
		t.Fatal("an allocated environment must still be fresh")
	}

	bound := pcRequest(t, pcPlan(t), contract.ContextTransferInputs{})
	other := pcReceipt(t, bound)
	other.EnvironmentID = "environment-fresh-7"
	if contract.ContextTransferReceiptMatches(bound, other) {
		t.Fatal("a prebound destination requires its exact environment")
	}
}

// TestTransferResults: the four outcomes (CTX-27), the operation and
// digest check for each (CTX-28), and the receipt rules (CTX-29, CTX-30).
func TestTransferResults(t *testing.T) {
	req := pcRequest(t, pcPlan(t), contract.ContextTransferInputs{})
	receipt := pcReceipt(t, req)
	replayed := pcClone(t, receipt)
	replayed.Status = contract.TransferStatusReplayed
	results := map[string]*contract.ContextTransferResult{
		"accepted": {Receipt: receipt},
		"replayed": {Receipt: replayed},
		"conflict": {Conflict: &contract.ContextTransferConflict{Status: contract.TransferStatusConflict, OperationID: req.OperationID,
			RequestDigest: req.RequestDigest, ExistingRequestDigest: pcDigestOf("f")}},
		"unknown": {Failure: &contract.ContextTransferFailure{Status: contract.TransferStatusUnknown, OperationID: req.OperationID,
			RequestDigest: req.RequestDigest, Message: "lost", Retryable: true}},
		"transport_failure": {Failure: &contract.ContextTransferFailure{Status: contract.TransferStatusTransportFailure, OperationID: req.OperationID,
			RequestDigest: req.RequestDigest, Message: "reset", Retryable: true}},
	}
	for status, res := range results {
		if res.Status() != status {
			t.Errorf("%s: status %q", status, res.Status())
		}
		data := pcMarshal(t, res)
		parsed, err := contract.ParseContextTransferResult([]byte(data))
		if err != nil {
			t.Fatalf("%s: %v", status, err)
		}
		if pcMarshal(t, parsed) != data {
			t.Errorf("%s: result does not round-trip", status)
		}
		if !contract.ContextTransferResultMatchesRequest(req, res) {
			t.Errorf("%s: does not match its request", status)
		}
		for _, field := range []string{"operationId", "requestDigest"} {
			v := pcJSON(t, data)
			var members []canonjson.Member
			for _, m := range v.Members() {
				if m.Name == field {
					m.Value = canonjson.StringValue("transfer-9")
					if field == "requestDigest" {
						m.Value = canonjson.StringValue(pcDigestOf("9"))
					}
				}
				members = append(members, m)
			}
			var other contract.ContextTransferResult
			if err := canonjson.FromValue(canonjson.ObjectValue(members), &other); err != nil {
				t.Fatal(err)
			}
			if contract.ContextTransferResultMatchesRequest(req, &other) {
				t.Errorf("%s: a result for another %s matches", status, field)
			}
		}
	}
	same := pcClone(t, results["conflict"])
	same.Conflict.ExistingRequestDigest = req.RequestDigest
	_, err := contract.ParseContextTransferResult([]byte(pcMarshal(t, same)))
	pcRefusedAt(t, err, "/existingRequestDigest")

	for name, edit := range map[string]func(r *contract.ContextTransferReceipt){
		"other-destination": func(r *contract.ContextTransferReceipt) { r.Destination.Runner = "kimi" },
		"other-session":     func(r *contract.ContextTransferReceipt) { r.SessionID = "session-other" },
		"source-session": func(r *contract.ContextTransferReceipt) {
			r.SessionID = "session-source"
			r.Destination.SessionID = "session-source"
		},
		"other-operation":     func(r *contract.ContextTransferReceipt) { r.SessionCreatedForOperationID = "transfer-0" },
		"before-acceptance":   func(r *contract.ContextTransferReceipt) { r.SessionCreatedAt = "2026-08-01T20:00:59.999Z" },
		"after-admission":     func(r *contract.ContextTransferReceipt) { r.AdmittedAt = "2026-08-01T20:01:00.499Z" },
		"other-plan":          func(r *contract.ContextTransferReceipt) { r.PlanDigest = pcDigestOf("1") },
		"other-context":       func(r *contract.ContextTransferReceipt) { r.ContextDigest = pcDigestOf("1") },
		"other-source":        func(r *contract.ContextTransferReceipt) { r.Source.MessageID = "message-1" },
		"missing-transferred": func(r *contract.ContextTransferReceipt) { r.TransferredMessageIDs = r.TransferredMessageIDs[:1] },
		"omitted-claimed":     func(r *contract.ContextTransferReceipt) { r.OmittedMessageIDs = []string{"message-2"} },
	} {
		r := pcClone(t, receipt)
		edit(r)
		if contract.ContextTransferReceiptMatches(req, r) {
			t.Errorf("%s: receipt matches", name)
		}
	}
	reordered := pcClone(t, receipt)
	slices.Reverse(reordered.TransferredMessageIDs)
	if !contract.ContextTransferReceiptMatches(req, reordered) {
		t.Error("transferred ids are a set")
	}
	// A retry of the same request replays the same fresh session.
	if !contract.ContextTransferReceiptMatches(req, replayed) || replayed.SessionID != receipt.SessionID {
		t.Error("replay")
	}
}

// TestLegacyTransferRequest: a request carrying the complete local plan
// is refused by the Interface 5 schema with a typed version error
// (CTX-23, CTX-24) and read only through the legacy recovery path
// (CTX-25).
func TestLegacyTransferRequest(t *testing.T) {
	k := pcLoadKind(t, contract.KindContextTransferRequest)
	read := 0
	for _, c := range k.Cases {
		if !c.Valid {
			continue
		}
		_, err := contract.ParseContextTransferRequest(c.Raw())
		if !errors.Is(err, contract.ErrLegacyContextTransferRequest) {
			t.Fatalf("%s: legacy request not refused as legacy: %v", c.Name, err)
		}
		var le *contract.LegacyContextTransferError
		var se *schema.Error
		if !errors.As(err, &le) || !errors.As(err, &se) {
			t.Fatalf("%s: %T", c.Name, err)
		}
		legacy, err := contract.ParseLegacyContextTransferRequest(c.Raw())
		if err != nil {
			t.Fatalf("%s: recovery path refuses a legacy record: %v", c.Name, err)
		}
		if legacy.Plan.Destination.EnvironmentID == nil {
			t.Fatal("legacy destinations are bound")
		}
		read++
	}
	if read == 0 {
		t.Fatal("no legacy records")
	}
	// An Interface 5 request is not a legacy record.
	req := pcRequest(t, pcPlan(t), contract.ContextTransferInputs{})
	if _, err := contract.ParseLegacyContextTransferRequest([]byte(pcMarshal(t, req))); err == nil {
		t.Fatal("the recovery path read an Interface 5 request")
	}
	// And a malformed Interface 5 request is not mistaken for legacy.
	bad := pcClone(t, req)
	bad.OperationID = " x"
	if _, err := contract.ParseContextTransferRequest([]byte(pcMarshal(t, bad))); err == nil || errors.Is(err, contract.ErrLegacyContextTransferRequest) {
		t.Fatalf("malformed v5 request: %v", err)
	}
}

// TestLegacyResultMatches settles stored legacy records: the reference's
// own request and result fixtures match under the legacy rules (CTX-25).
func TestLegacyResultMatches(t *testing.T) {
	var reqs []*contract.LegacyContextTransferRequest
	for _, c := range pcLoadKind(t, contract.KindContextTransferRequest).Cases {
		if r, err := contract.ParseLegacyContextTransferRequest(c.Raw()); err == nil {
			reqs = append(reqs, r)
		}
	}
	matched := 0
	for _, c := range pcLoadKind(t, contract.KindContextTransferResult).Cases {
		res, err := contract.ParseLegacyContextTransferResult(c.Raw())
		if err != nil {
			continue
		}
		for _, r := range reqs {
			if contract.LegacyContextTransferResultMatchesRequest(r, res) {
				matched++
				t.Logf("%s matches %s", c.Name, r.OperationID)
				break
			}
		}
	}
	if matched == 0 {
		t.Fatal("no legacy result matches a legacy request")
	}
}
