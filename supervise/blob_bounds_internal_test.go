package supervise

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/google/go-cmp/cmp"
)

// blobDirLog is a runLog over a fresh run dir's blobs directory only.
func blobDirLog(t testing.TB) *runLog {
	t.Helper()
	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, BlobsDir), 0o700); err != nil {
		t.Fatal(err)
	}
	return &runLog{dir: dir}
}

// oversizedBlob is a JSON document of n bytes: one string.
func oversizedBlob(n int) []byte {
	return append(append([]byte(`"`), bytes.Repeat([]byte("a"), n-2)...), '"')
}

// TestGetBlobRefusesBadBlobs: a blob read back that is over
// MaxResultBlobBytes, does not hash to its name, is not JSON, or whose
// ref is not a digest is a *BlobError naming the blob's path, never a
// huge read or a panic; a good blob reads back.
func TestGetBlobRefusesBadBlobs(t *testing.T) {
	good := resultValue("the answer", canonjson.Value{})
	goodRef, err := canonjson.Digest(good)
	if err != nil {
		t.Fatal(err)
	}
	otherRef, err := canonjson.Digest(resultValue("another answer", canonjson.Value{}))
	if err != nil {
		t.Fatal(err)
	}
	goodBytes, err := canonjson.Canonical(good)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		ref  string
		data []byte // written at the ref's path; nil writes nothing
		// want is the *BlobError's fields (Path filled in per test);
		// wantErr is a substring of its Err.
		wantSize bool
		wantErr  string
	}{
		{name: "oversized", ref: otherRef, data: oversizedBlob(MaxResultBlobBytes + 1), wantSize: true},
		{name: "digest mismatch", ref: otherRef, data: goodBytes, wantErr: "does not hash to its name"},
		{name: "not JSON", ref: otherRef, data: []byte(`{"text":`), wantErr: "JSON"},
		{name: "ref not a digest", ref: "sha256:../../escape", wantErr: "not a digest"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := blobDirLog(t)
			if tt.data != nil {
				if err := os.WriteFile(l.blobPath(tt.ref), tt.data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			_, err := l.getBlob(tt.ref)
			var be *BlobError
			if !errors.As(err, &be) {
				t.Fatalf("getBlob(%s) = %v, want a *BlobError", tt.name, err)
			}
			if be.Ref != tt.ref || be.Path != l.blobPath(tt.ref) {
				t.Errorf("BlobError names ref %q path %q, want %q %q", be.Ref, be.Path, tt.ref, l.blobPath(tt.ref))
			}
			if !strings.Contains(be.Error(), be.Path) {
				t.Errorf("BlobError %q does not name its path", be.Error())
			}
			if tt.wantSize {
				if be.Size != int64(len(tt.data)) || be.Limit != MaxResultBlobBytes {
					t.Errorf("BlobError size %d limit %d, want %d %d", be.Size, be.Limit, len(tt.data), MaxResultBlobBytes)
				}
			} else if be.Err == nil || !strings.Contains(be.Err.Error(), tt.wantErr) {
				t.Errorf("BlobError.Err = %v, want it to say %q", be.Err, tt.wantErr)
			}
		})
	}
	t.Run("good", func(t *testing.T) {
		l := blobDirLog(t)
		if err := os.WriteFile(l.blobPath(goodRef), goodBytes, 0o600); err != nil {
			t.Fatal(err)
		}
		got, err := l.getBlob(goodRef)
		if err != nil {
			t.Fatal(err)
		}
		gotBytes, err := canonjson.Canonical(got)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(goodBytes), string(gotBytes)); diff != "" {
			t.Errorf("blob read back (-want +got):\n%s", diff)
		}
	})
}

// TestPutBlobRefusesOversized: a result over MaxResultBlobBytes is not
// stored (a resume could not read it back): a *BlobError, and no file.
func TestPutBlobRefusesOversized(t *testing.T) {
	l := blobDirLog(t)
	v := resultValue(strings.Repeat("a", MaxResultBlobBytes), canonjson.Value{})
	_, err := l.putBlob(context.Background(), v)
	var be *BlobError
	if !errors.As(err, &be) || be.Limit != MaxResultBlobBytes || be.Size <= MaxResultBlobBytes {
		t.Fatalf("putBlob of an oversized result = %v, want a *BlobError over the limit", err)
	}
	ents, err := os.ReadDir(filepath.Join(l.dir, BlobsDir))
	if err != nil {
		t.Fatal(err)
	}
	if len(ents) != 0 {
		t.Errorf("an oversized result left %d files in %s", len(ents), BlobsDir)
	}
}

// BenchmarkGetOversizedBlob: refusing an oversized blob costs about
// the limit, not the file's size.
func BenchmarkGetOversizedBlob(b *testing.B) {
	l := blobDirLog(b)
	ref, err := canonjson.Digest(canonjson.StringValue("x"))
	if err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(l.blobPath(ref), oversizedBlob(4*MaxResultBlobBytes), 0o600); err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := l.getBlob(ref); err == nil {
			b.Fatal("an oversized blob read back")
		}
	}
}

// FuzzDecodeBlob: whatever a blob file holds, getBlob returns its value
// only when it hashes to its name, else an error; it never panics.
func FuzzDecodeBlob(f *testing.F) {
	good, _ := canonjson.Canonical(resultValue("ok", canonjson.Value{}))
	for _, s := range [][]byte{good, []byte(`{"text":"ok"}`), []byte(`{"text":`), []byte(`"` + strings.Repeat("\\u0000", 8) + `"`), {}, []byte("null")} {
		f.Add(s)
	}
	l := blobDirLog(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, err := canonjson.Decode(data)
		ref := "sha256:" + strings.Repeat("0", 64)
		if err == nil {
			if r, err := canonjson.Digest(v); err == nil {
				ref = r
			}
		}
		if err := os.WriteFile(l.blobPath(ref), data, 0o600); err != nil {
			t.Fatal(err)
		}
		defer os.Remove(l.blobPath(ref))
		got, err := l.getBlob(ref)
		if err != nil {
			var be *BlobError
			if !errors.As(err, &be) {
				t.Fatalf("getBlob error %v is not a *BlobError", err)
			}
			return
		}
		if r, err := canonjson.Digest(got); err != nil || r != ref {
			t.Fatalf("getBlob returned a value hashing to %s (%v), want %s", r, err, ref)
		}
	})
}
