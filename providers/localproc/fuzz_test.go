package localproc

import (
	"bytes"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
)

func seedEnvRecord(t testing.TB) []byte {
	in := contract.CreateExactProcessInput{
		Image:          ImageRefPrefix + "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef",
		Egress:         contract.EgressPolicy{Mode: contract.EgressBlocked},
		MaxLifetimeMs:  1000,
		Resources:      contract.ExactProcessResources{CPU: 0.5, MemoryMB: 64, DiskMB: 8},
		Metadata:       map[string]canonjson.Value{"k": canonjson.StringValue("v")},
		IdempotencyKey: "key",
	}
	d, err := contract.CreateExactProcessInputDigest(&in)
	if err != nil {
		t.Fatal(err)
	}
	b, err := encodeRecord(&envRecord{V: 1, ID: "lp-0123456789abcdef0123456789abcdef", Digest: d, CreatedAtMs: 5, ExpiresAtMs: 1005, Input: in})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// roundTrip: a record that decodes encodes to canonical bytes that decode
// to the same canonical bytes.
func roundTrip[T any](t *testing.T, rec *T, decode func([]byte) (*T, error)) {
	b1, err := encodeRecord(rec)
	if err != nil {
		t.Fatalf("a decoded record does not encode: %v", err)
	}
	again, err := decode(b1)
	if err != nil {
		t.Fatalf("the canonical form %s of a decoded record does not decode: %v", b1, err)
	}
	b2, err := encodeRecord(again)
	if err != nil || !bytes.Equal(b1, b2) {
		t.Fatalf("round trip changed %s to %s (%v)", b1, b2, err)
	}
}

func TestSeedRecordsDecode(t *testing.T) {
	if _, err := decodeEnvRecord(seedEnvRecord(t)); err != nil {
		t.Fatal(err)
	}
	if _, err := decodeProcRecord([]byte(`{"hostPid":42,"pid":1,"startTicks":7,"startedAtMs":9,"timeoutMs":0,"v":1}`)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{
		`{"hostPid":42,"pid":1,"startTicks":7,"startedAtMs":9,"timeoutMs":0,"v":1,"x":1}`,
		`{"hostPid":42,"pid":0,"startTicks":7,"startedAtMs":9,"timeoutMs":0,"v":1}`,
		`{"hostPid":42,"pid":1,"startTicks":7,"startedAtMs":9,"v":1}`,
	} {
		if _, err := decodeProcRecord([]byte(bad)); err == nil {
			t.Errorf("%s decoded", bad)
		}
	}
	tampered := bytes.Replace(seedEnvRecord(t), []byte(`"memoryMb":64`), []byte(`"memoryMb":65`), 1)
	if _, err := decodeEnvRecord(tampered); err == nil {
		t.Error("a record whose input no longer has its digest decoded")
	}
}

func FuzzDecodeEnvRecord(f *testing.F) {
	f.Add(seedEnvRecord(f))
	f.Add([]byte(`{}`))
	f.Add([]byte(`{"v":1,"id":"lp-0","digest":"","createdAtMs":0,"expiresAtMs":0,"input":null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeEnvRecord(data)
		if err != nil {
			return
		}
		roundTrip(t, rec, decodeEnvRecord)
	})
}

func FuzzDecodeProcRecord(f *testing.F) {
	f.Add([]byte(`{"hostPid":42,"pid":1,"startTicks":7,"startedAtMs":9,"timeoutMs":0,"v":1}`))
	f.Add([]byte(`{"hostPid":1e3,"pid":1.5,"startTicks":-1,"startedAtMs":9,"timeoutMs":0,"v":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeProcRecord(data)
		if err != nil {
			return
		}
		roundTrip(t, rec, decodeProcRecord)
	})
}

func FuzzDecodeTermRecord(f *testing.F) {
	for _, s := range []string{`{"exitCode":0,"kind":"exit"}`, `{"kind":"signal","signal":"SIGKILL"}`,
		`{"kind":"timeout","timeoutMs":200}`, `{"kind":"cancelled"}`, `{"kind":"exit"}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := decodeTermRecord(data)
		if err != nil {
			return
		}
		roundTrip(t, rec, decodeTermRecord)
	})
}
