package contract_test

import (
	"errors"
	"testing"

	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

func FuzzParseRunCancellationRequest(f *testing.F) {
	obsFuzzParse(f, contract.KindRunCancellationRequest, contract.RunCancellationRequestSchema, contract.ParseRunCancellationRequest)
}

func FuzzParseRunCancellationAcknowledgement(f *testing.F) {
	obsFuzzParse(f, contract.KindRunCancellationAcknowledgement, contract.RunCancellationAcknowledgementSchema, contract.ParseRunCancellationAcknowledgement)
}

// FuzzParseWorkspaceCwd: a refusal is a *schema.Error; an accepted cwd
// is canonical (parsing its own form gives it back).
func FuzzParseWorkspaceCwd(f *testing.F) {
	for _, s := range []string{`{"base":"repository","path":"src"}`, `{"base":"host","path":"/abs"}`, `"/abs"`, `{"base":"repository","path":"a/../b"}`, `{}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		cwd, err := contract.ParseWorkspaceCwd(data)
		if err != nil {
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Fatalf("refusal is not a *schema.Error with issues: %v", err)
			}
			return
		}
		again, err := contract.CanonicalWorkspaceCwd(cwd)
		if err != nil || again != cwd {
			t.Fatalf("canonicalizing an accepted cwd %+v gave %+v, %v", cwd, again, err)
		}
	})
}
