package cli_test

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
)

const (
	improveBase      = "sha256:5555555555555555555555555555555555555555555555555555555555555555"
	improveCandidate = "sha256:8888888888888888888888888888888888888888888888888888888888888888"
)

// improveProposal is the reference's valid profile proposal vector with
// its self-digest.
func improveProposal(t *testing.T) canonjson.Value {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "..", "testdata", "vectors", "AgentImprovementProposal.json"))
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Cases []struct {
			Name  string          `json:"name"`
			Input json.RawMessage `json:"input"`
		} `json:"cases"`
	}
	if err := json.Unmarshal(data, &file); err != nil {
		t.Fatal(err)
	}
	for _, c := range file.Cases {
		if c.Name == "recorded-78fc9629aa" {
			v, err := canonjson.Decode(c.Input)
			if err != nil {
				t.Fatal(err)
			}
			d, _ := candidate.SelfDigestValue(v)
			return v.With("digest", canonjson.StringValue(d))
		}
	}
	t.Fatal("proposal vector not found")
	return canonjson.Value{}
}

func putFile(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// TestImproveCommands walks propose → review → activate → show through the
// CLI over a SQLite store and a file target, and checks the refusals the
// commands report.
func TestImproveCommands(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	p := improveProposal(t)
	pd := member(p, "digest").Str()
	proposalFile := filepath.Join(dir, "proposal.json")
	putFile(t, proposalFile, canonjson.Marshal(p))

	out, errOut, code := run(t, "", "improve", "propose", proposalFile, "--db", db)
	if code != 0 || !strings.Contains(out, pd) {
		t.Fatalf("propose: %d\n%s%s", code, out, errOut)
	}
	if out, _, code = run(t, "", "improve", "propose", proposalFile, "--db", db, "--json"); code != 0 || !member(decode(t, out), "replayed").Bool() {
		t.Fatalf("propose replay: %d %s", code, out)
	}

	// An activation before any review is refused.
	now := time.Now().UTC()
	act := &candidate.ImprovementActivation{
		Kind: candidate.KindImprovementActivationValue, ProposalDigest: pd,
		ExperimentDigest: member(member(member(p, "evaluation"), "experiment"), "digest").Str(),
		CandidateDigest:  improveCandidate, Intent: "activate-candidate",
		Targets:      []candidate.ActivationTarget{{Surface: "prompt", Identity: "support.json", ExpectedBaseDigest: improveBase}},
		FundingOwner: "tenant:test", AuthorizedBy: "policy:tenant-admin",
		AuthorizedAt: now.Format("2006-01-02T15:04:05.000Z"), ExpiresAt: now.Add(time.Hour).Format("2006-01-02T15:04:05.000Z"),
	}
	writeActivation := func(reviewDigest string) string {
		act.ReviewDigest = reviewDigest
		act.Digest = ""
		d, err := candidate.SelfDigest(act)
		if err != nil {
			t.Fatal(err)
		}
		act.Digest = d
		v, _ := canonjson.ToValue(act)
		path := filepath.Join(dir, "activation.json")
		putFile(t, path, canonjson.Marshal(v))
		return path
	}
	if _, errOut, code = run(t, "", "improve", "activate", writeActivation(improveBase), "--db", db); code != 1 || !strings.Contains(errOut, "not approved") {
		t.Fatalf("unreviewed activation: %d %s", code, errOut)
	}

	out, errOut, code = run(t, "", "improve", "review", pd, "--decision", "approve", "--by", "operator", "--reason", "measured winner", "--db", db, "--json")
	if code != 0 {
		t.Fatalf("review: %d %s", code, errOut)
	}
	rd := member(decode(t, out), "digest").Str()
	if _, errOut, code = run(t, "", "improve", "review", pd, "--decision", "reject", "--by", "other", "--reason", "no", "--db", db); code != 1 || !strings.Contains(errOut, "different request") {
		t.Fatalf("second review: %d %s", code, errOut)
	}

	targets := filepath.Join(dir, "targets")
	if err := os.Mkdir(targets, 0o700); err != nil {
		t.Fatal(err)
	}
	putFile(t, filepath.Join(targets, "support.json"), []byte(`{"stateDigest":"`+improveBase+`","prompt":"old"}`))
	cand := filepath.Join(dir, "candidate.json")
	putFile(t, cand, []byte(`{"stateDigest":"`+improveCandidate+`","prompt":"new"}`))

	activation := writeActivation(rd)
	out, errOut, code = run(t, "", "improve", "activate", activation, "--targets", targets, "--candidate", cand, "--db", db)
	if code != 0 || !strings.Contains(out, "applied") {
		t.Fatalf("activate: %d\n%s%s", code, out, errOut)
	}
	if got, _ := os.ReadFile(filepath.Join(targets, "support.json")); !strings.Contains(string(got), `"new"`) {
		t.Fatalf("target = %s", got)
	}
	out, errOut, code = run(t, "", "improve", "activate", activation, "--targets", targets, "--candidate", cand, "--db", db)
	if code != 1 || !strings.Contains(errOut, "already executed") || !strings.Contains(out, "applied") {
		t.Fatalf("second activate: %d\n%s%s", code, out, errOut)
	}

	out, _, code = run(t, "", "improve", "show", act.Digest, "--db", db, "--json")
	if v := decode(t, out); code != 0 || member(v, "status").Str() != "completed" {
		t.Fatalf("show: %d %s", code, out)
	}
	out, _, code = run(t, "", "improve", "show", pd, "--db", db)
	if code != 0 || !strings.Contains(out, "approve by operator") {
		t.Fatalf("show proposal: %d %s", code, out)
	}
	if _, _, code = run(t, "", "improve", "show", improveBase, "--db", db); code != 1 {
		t.Fatalf("show unknown: %d", code)
	}
}

// A target whose base moved is refused and the refusal recorded.
func TestImproveActivateBaseChanged(t *testing.T) {
	dir := t.TempDir()
	db := filepath.Join(dir, "runs.db")
	p := improveProposal(t)
	pd := member(p, "digest").Str()
	proposalFile := filepath.Join(dir, "proposal.json")
	putFile(t, proposalFile, canonjson.Marshal(p))
	if _, e, code := run(t, "", "improve", "propose", proposalFile, "--db", db); code != 0 {
		t.Fatal(e)
	}
	out, e, code := run(t, "", "improve", "review", pd, "--decision", "approve", "--by", "op", "--reason", "ok", "--db", db, "--json")
	if code != 0 {
		t.Fatal(e)
	}
	now := time.Now().UTC()
	act := &candidate.ImprovementActivation{
		Kind: candidate.KindImprovementActivationValue, ProposalDigest: pd, ReviewDigest: member(decode(t, out), "digest").Str(),
		ExperimentDigest: member(member(member(p, "evaluation"), "experiment"), "digest").Str(),
		CandidateDigest:  improveCandidate, Intent: "activate-candidate",
		Targets:      []candidate.ActivationTarget{{Surface: "prompt", Identity: "support.json", ExpectedBaseDigest: improveBase}},
		FundingOwner: "tenant:test", AuthorizedBy: "policy:tenant-admin",
		AuthorizedAt: now.Format("2006-01-02T15:04:05.000Z"), ExpiresAt: now.Add(time.Hour).Format("2006-01-02T15:04:05.000Z"),
	}
	act.Digest, _ = candidate.SelfDigest(act)
	v, _ := canonjson.ToValue(act)
	activation := filepath.Join(dir, "activation.json")
	putFile(t, activation, canonjson.Marshal(v))
	targets := t.TempDir()
	moved := "sha256:9999999999999999999999999999999999999999999999999999999999999999"
	putFile(t, filepath.Join(targets, "support.json"), []byte(`{"stateDigest":"`+moved+`"}`))
	cand := filepath.Join(dir, "candidate.json")
	putFile(t, cand, []byte(`{"stateDigest":"`+improveCandidate+`"}`))
	out, e, code = run(t, "", "improve", "activate", activation, "--targets", targets, "--candidate", cand, "--db", db, "--json")
	if code != 1 || !strings.Contains(e, "base changed") {
		t.Fatalf("activate: %d\n%s%s", code, out, e)
	}
	if status := member(member(member(decode(t, out), "result"), "outcome"), "status").Str(); status != "conflict" {
		t.Fatalf("outcome %s, want conflict", status)
	}
}
