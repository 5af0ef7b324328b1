package wsarchive

import (
	"bytes"
	"errors"
	"io/fs"
	"strconv"
	"strings"
	"testing"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/canonjson"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

var (
	commit1 = strings.Repeat("a", 40)
	tree1   = strings.Repeat("b", 40)
	commit2 = strings.Repeat("c", 64)
)

// block returns a header as Encode writes it, edited by edits, with its
// checksum recomputed afterwards.
func block(name, prefix string, mode fs.FileMode, size int64, typ byte, edits ...func([]byte)) []byte {
	h := header(name, prefix, mode, size, typ)
	for _, e := range edits {
		e(h)
	}
	clear(h[148:156])
	putOctal(h[148:], int64(checksum(h)), 6)
	return h
}

// data returns b padded to whole blocks.
func data(b string) []byte { return appendPadded(nil, []byte(b)) }

// tarOf joins parts and the two end blocks.
func tarOf(parts ...[]byte) []byte {
	var out []byte
	for _, p := range parts {
		out = append(out, p...)
	}
	return append(out, make([]byte, 2*blockSize)...)
}

// file returns a regular-file entry as Encode writes it.
func file(name string, mode fs.FileMode, body string) []byte {
	return appendEntry(nil, name, mode, []byte(body))
}

func metaEntry(t *testing.T, r *Repository) []byte {
	t.Helper()
	m, err := repositoryMetadata(r)
	if err != nil {
		t.Fatal(err)
	}
	return appendEntry(nil, RepositoryMetadataName, 0o600, m)
}

func wantCode(t *testing.T, err error, code Code, entry string) {
	t.Helper()
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("error %v is not *Error (want %s)", err, code)
	}
	if e.Code != code || entry != "" && e.Entry != entry {
		t.Fatalf("got %s %q (%v), want %s %q", e.Code, e.Entry, err, code, entry)
	}
}

func TestEncodeRejects(t *testing.T) {
	small := DefaultLimits()
	small.MaxFiles, small.MaxFileBytes, small.MaxTotalFileBytes, small.MaxPathBytes = 2, 4, 6, 8
	small.MaxRepositoryBundleBytes = 3
	tiny := DefaultLimits()
	tiny.MaxArchiveBytes = 2047
	f := func(path string) File { return File{Path: path, Mode: 0o644, Data: []byte("x")} }
	repo := func(c, tr string, b string) *Repository {
		return &Repository{HeadCommit: c, HeadTree: tr, Bundle: []byte(b)}
	}
	tests := []struct {
		name   string
		files  []File
		repo   *Repository
		limits Limits
		code   Code
		entry  string
	}{
		{"unsorted", []File{f("b"), f("a")}, nil, DefaultLimits(), CodeOrder, "a"},
		{"duplicate", []File{f("a"), f("a")}, nil, DefaultLimits(), CodeOrder, "a"},
		{"file is a directory", []File{f("a"), f("a/b")}, nil, DefaultLimits(), CodeOrder, "a/b"},
		{"file is a directory, not adjacent", []File{f("a"), f("a-b"), f("a/b")}, nil, DefaultLimits(), CodeOrder, "a/b"},
		{"byte order, not UTF-16 order", []File{f("\ue000"), f("\U0001F600")}, nil, DefaultLimits(), CodeOrder, "\U0001F600"},
		{"empty path", []File{f("")}, nil, DefaultLimits(), CodeUnsafePath, ""},
		{"absolute", []File{f("/etc/passwd")}, nil, DefaultLimits(), CodeUnsafePath, "/etc/passwd"},
		{"empty segment", []File{f("a//b")}, nil, DefaultLimits(), CodeUnsafePath, "a//b"},
		{"trailing slash", []File{f("a/")}, nil, DefaultLimits(), CodeUnsafePath, "a/"},
		{"dot", []File{f("./a")}, nil, DefaultLimits(), CodeUnsafePath, "./a"},
		{"dot dot", []File{f("a/../b")}, nil, DefaultLimits(), CodeUnsafePath, "a/../b"},
		{".git", []File{f(".git/config")}, nil, DefaultLimits(), CodeUnsafePath, ".git/config"},
		{".GIT any case", []File{f(".GiT/config")}, nil, DefaultLimits(), CodeUnsafePath, ".GiT/config"},
		{".Sidecar any case", []File{f(".SIDECAR/x")}, nil, DefaultLimits(), CodeUnsafePath, ".SIDECAR/x"},
		{"nested .git (manifest rule)", []File{f("a/.git/b")}, nil, DefaultLimits(), CodeUnsafePath, "a/.git/b"},
		{"backslash", []File{f(`a\b`)}, nil, DefaultLimits(), CodeUnsafePath, `a\b`},
		{"drive letter", []File{f("C:/x")}, nil, DefaultLimits(), CodeUnsafePath, "C:/x"},
		{"control", []File{f("a\x01b")}, nil, DefaultLimits(), CodeUnsafePath, "a\x01b"},
		{"DEL", []File{f("a\x7fb")}, nil, DefaultLimits(), CodeUnsafePath, "a\x7fb"},
		{"not UTF-8", []File{f("a\xffb")}, nil, DefaultLimits(), CodeUnsafePath, "a\xffb"},
		{"path limit", []File{f("123456789")}, nil, small, CodeUnsafePath, "123456789"},
		{"setuid", []File{{Path: "a", Mode: 0o4755}}, nil, DefaultLimits(), CodeMode, "a"},
		{"type bits", []File{{Path: "a", Mode: fs.ModeDir | 0o755}}, nil, DefaultLimits(), CodeMode, "a"},
		{"file count", []File{f("a"), f("b"), f("c")}, nil, small, CodeLimit, ""},
		{"file size", []File{{Path: "a", Mode: 0o644, Data: []byte("12345")}}, nil, small, CodeLimit, "a"},
		{"total size", []File{{Path: "a", Data: []byte("1234")}, {Path: "b", Data: []byte("123")}}, nil, small, CodeLimit, "b"},
		{"archive size", []File{{Path: "a", Data: []byte("1")}}, nil, tiny, CodeLimit, ""},
		{"head not an id", nil, repo("HEAD", tree1, "b"), DefaultLimits(), CodeRepository, ""},
		{"uppercase id", nil, repo(strings.ToUpper(commit1), tree1, "b"), DefaultLimits(), CodeRepository, ""},
		{"mixed object formats", nil, repo(commit2, tree1, "b"), DefaultLimits(), CodeRepository, ""},
		{"empty bundle", nil, repo(commit1, tree1, ""), DefaultLimits(), CodeRepository, RepositoryBundleName},
		{"bundle size", nil, repo(commit1, tree1, "1234"), small, CodeLimit, RepositoryBundleName},
		{"zero limit", nil, nil, Limits{}, CodeInvalidInput, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := EncodeLimits(tt.files, tt.repo, tt.limits)
			wantCode(t, err, tt.code, tt.entry)
		})
	}
}

func TestDecodeRejects(t *testing.T) {
	good := file("workspace/a", 0o644, "a")
	r := &Repository{HeadCommit: commit1, HeadTree: tree1, Bundle: []byte("bundle")}
	bundle := appendEntry(nil, RepositoryBundleName, 0o600, r.Bundle)
	meta := func(doc string) []byte { return appendEntry(nil, RepositoryMetadataName, 0o600, []byte(doc)) }
	sum := canonjson.DigestBytes(r.Bundle)
	setUID := func(h []byte) { copy(h[108:], "000001 ") }
	limit := func(edit func(*Limits)) *Limits { l := DefaultLimits(); edit(&l); return &l }
	pax := func(rec string) []byte {
		return append(append(block(paxName, "", 0o644, int64(len(rec)), typePAX), data(rec)...), block(paxName, "", 0o644, 1, typeRegular)...)
	}
	tests := []struct {
		name   string
		data   []byte
		limits *Limits
		code   Code
		entry  string
	}{
		{"empty input", nil, nil, CodeTruncated, ""},
		{"short block", make([]byte, 511), nil, CodeTruncated, ""},
		{"one end block", make([]byte, 512), nil, CodeTruncated, ""},
		{"no end blocks", good, nil, CodeTruncated, ""},
		{"data cut", tarOf(block("workspace/a", "", 0o644, 4096, typeRegular)), nil, CodeTruncated, "a"},
		{"padding cut", append(block("workspace/a", "", 0o644, 600, typeRegular), make([]byte, 700)...), nil, CodeTruncated, "a"},
		{"checksum", tarOf(func() []byte { b := bytes.Clone(good); b[0] = 'W'; return b }()), nil, CodeChecksum, ""},
		{"checksum not octal", tarOf(func() []byte { b := bytes.Clone(good); copy(b[148:], "zzzzzz"); return b }()), nil, CodeHeader, ""},
		{"gnu magic", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[257:], "ustar  \x00") })), nil, CodeHeader, ""},
		{"v7 header", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { clear(h[257:265]) })), nil, CodeHeader, ""},
		{"mode not octal", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[100:], "0006x4 ") })), nil, CodeHeader, "workspace/a"},
		{"size not octal", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[124:], "-1") })), nil, CodeHeader, "workspace/a"},
		{"size base-256 negative", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { h[124] = 0xff })), nil, CodeHeader, "workspace/a"},
		{"symlink", tarOf(block("workspace/a", "", 0o777, 0, '2')), nil, CodeEntryType, "workspace/a"},
		{"hard link", tarOf(block("workspace/a", "", 0o644, 0, '1')), nil, CodeEntryType, "workspace/a"},
		{"directory", tarOf(block("workspace/d", "", 0o755, 0, '5')), nil, CodeEntryType, "workspace/d"},
		{"fifo", tarOf(block("workspace/p", "", 0o644, 0, '6')), nil, CodeEntryType, "workspace/p"},
		{"old regular typeflag NUL", tarOf(block("workspace/a", "", 0o644, 0, 0)), nil, CodeEntryType, "workspace/a"},
		{"gnu long name", tarOf(block("././@LongLink", "", 0o644, 0, 'L')), nil, CodeEntryType, "././@LongLink"},
		{"pax global", tarOf(block("pax_global_header", "", 0o644, 0, 'g')), nil, CodeEntryType, ""},
		{"pax then symlink", tarOf(append(append(block(paxName, "", 0o644, 20, typePAX), data("20 path=workspace/l\n")...), block(paxName, "", 0o777, 0, '2')...)), nil, CodeEntryType, "workspace/l"},
		{"pax then end", tarOf(append(block(paxName, "", 0o644, 20, typePAX), data("20 path=workspace/l\n")...)), nil, CodeHeader, "workspace/l"},
		{"two pax headers", tarOf(append(append(block(paxName, "", 0o644, 20, typePAX), data("20 path=workspace/l\n")...), append(block(paxName, "", 0o644, 20, typePAX), data("20 path=workspace/m\n")...)...)), nil, CodeHeader, "workspace/l"},
		{"pax wrong length", tarOf(pax("21 path=workspace/l\n"), data("x")), nil, CodeHeader, paxName},
		{"pax leading zero", tarOf(pax("020 path=workspace/\n"), data("x")), nil, CodeHeader, paxName},
		{"pax other key", tarOf(pax("20 size=workspace/l\n"), data("x")), nil, CodeHeader, paxName},
		{"pax two records", tarOf(pax("11 path=ab\n11 path=cd\n"), data("x")), nil, CodeHeader, paxName},
		{"pax no length", tarOf(pax(" path=workspace/l\n"), data("x")), nil, CodeHeader, paxName},
		{"pax too large", tarOf(pax("9999 path=" + strings.Repeat("a", 9989) + "\n")), nil, CodeLimit, paxName},
		{"pax not UTF-8", tarOf(pax(string(paxRecord("workspace/\xff"))), data("x")), nil, CodeUnsafePath, ""},
		{"name not UTF-8", tarOf(block("workspace/\xff", "", 0o644, 0, typeRegular)), nil, CodeUnsafePath, ""},
		{"duplicate file", tarOf(good, good), nil, CodeDuplicate, "workspace/a"},
		{"duplicate through pax", tarOf(good, pax(string(paxRecord("workspace/a"))), data("a")), nil, CodeDuplicate, "workspace/a"},
		{"duplicate metadata", tarOf(metaEntry(t, r), metaEntry(t, r), bundle), nil, CodeDuplicate, RepositoryMetadataName},
		{"unknown entry", tarOf(file("other/a", 0o644, "")), nil, CodeUnknownEntry, "other/a"},
		{"unknown metadata", tarOf(file("metadata/other.json", 0o600, "")), nil, CodeUnknownEntry, "metadata/other.json"},
		{"bare workspace directory name", tarOf(file("workspace", 0o644, "")), nil, CodeUnknownEntry, "workspace"},
		{"empty path", tarOf(file("workspace/", 0o644, "")), nil, CodeUnsafePath, ""},
		{"escape", tarOf(file("workspace/../x", 0o644, "")), nil, CodeUnsafePath, "../x"},
		{"git dir", tarOf(file("workspace/.git/config", 0o644, "")), nil, CodeUnsafePath, ".git/config"},
		{"Git dir", tarOf(file("workspace/.Git/config", 0o644, "")), nil, CodeUnsafePath, ".Git/config"},
		{"path limit", tarOf(file("workspace/abcdefghi", 0o644, "")), limit(func(l *Limits) { l.MaxPathBytes = 8 }), CodeUnsafePath, "abcdefghi"},
		{"unsorted", tarOf(file("workspace/b", 0o644, ""), file("workspace/a", 0o644, "")), nil, CodeOrder, "a"},
		{"file as directory", tarOf(file("workspace/a", 0o644, ""), file("workspace/a/b", 0o644, "")), nil, CodeOrder, "a/b"},
		{"setuid mode", tarOf(block("workspace/a", "", 0o4755, 0, typeRegular)), nil, CodeMode, "a"},
		{"mode with type bits", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[100:], "100644 ") })), nil, CodeMode, "a"},
		{"metadata mode", tarOf(appendEntry(nil, RepositoryMetadataName, 0o644, []byte("{}")), bundle), nil, CodeMode, RepositoryMetadataName},
		{"bundle mode", tarOf(metaEntry(t, r), appendEntry(nil, RepositoryBundleName, 0o400, r.Bundle)), nil, CodeMode, RepositoryBundleName},
		{"archive limit", tarOf(good), limit(func(l *Limits) { l.MaxArchiveBytes = 2047 }), CodeLimit, ""},
		{"retained limit", tarOf(file("workspace/a", 0o644, strings.Repeat("x", 600))), limit(func(l *Limits) { l.MaxArchiveBytes = 2560 + 599 }), CodeLimit, "a"},
		{"file count", tarOf(good, file("workspace/b", 0o644, "")), limit(func(l *Limits) { l.MaxFiles = 1 }), CodeLimit, "workspace/b"},
		{"file size", tarOf(file("workspace/a", 0o644, "12345")), limit(func(l *Limits) { l.MaxFileBytes = 4 }), CodeLimit, "a"},
		{"total size", tarOf(file("workspace/a", 0o644, "1234"), file("workspace/b", 0o644, "123")), limit(func(l *Limits) { l.MaxTotalFileBytes = 6 }), CodeLimit, "b"},
		{"metadata size", tarOf(metaEntry(t, r), bundle), limit(func(l *Limits) { l.MaxPathBytes = 64 }), CodeLimit, RepositoryMetadataName},
		{"bundle size", tarOf(metaEntry(t, r), bundle), limit(func(l *Limits) { l.MaxRepositoryBundleBytes = 5 }), CodeRepository, RepositoryMetadataName},
		{"bundle entry size", tarOf(bundle), limit(func(l *Limits) { l.MaxRepositoryBundleBytes = 5 }), CodeLimit, RepositoryBundleName},
		{"bad limits", tarOf(), &Limits{MaxArchiveBytes: 1}, CodeInvalidInput, ""},
		{"metadata without bundle", tarOf(metaEntry(t, r)), nil, CodeRepository, ""},
		{"bundle without metadata", tarOf(bundle), nil, CodeRepository, ""},
		{"metadata not JSON", tarOf(meta("{"), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata not canonical", tarOf(meta(`{"kind":"agent-candidate-workspace-archive","headCommit":"`+commit1+`","headTree":"`+tree1+`","bundle":{"sha256":"`+sum+`","byteLength":6}}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata schemaVersion", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"`+sum+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive","schemaVersion":1}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata kind", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"`+sum+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"x"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata bundle extra key", tarOf(meta(`{"bundle":{"byteLength":6,"encoding":"base64","sha256":"`+sum+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata zero length", tarOf(meta(`{"bundle":{"byteLength":0,"sha256":"`+sum+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata fractional length", tarOf(meta(`{"bundle":{"byteLength":6.5,"sha256":"`+sum+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata bad digest", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"sha256:00"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata bad head", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"`+sum+`"},"headCommit":"HEAD","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata head not string", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"`+sum+`"},"headCommit":1,"headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"metadata mixed formats", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"`+sum+`"},"headCommit":"`+commit2+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryMetadataName},
		{"bundle length", tarOf(meta(`{"bundle":{"byteLength":7,"sha256":"`+sum+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryBundleName},
		{"bundle hash", tarOf(meta(`{"bundle":{"byteLength":6,"sha256":"`+canonjson.DigestBytes([]byte("other!"))+`"},"headCommit":"`+commit1+`","headTree":"`+tree1+`","kind":"agent-candidate-workspace-archive"}`), bundle), nil, CodeRepository, RepositoryBundleName},
		{"third end block", append(tarOf(good), make([]byte, 512)...), nil, CodeTrailingData, ""},
		{"record padding", append(tarOf(good), make([]byte, 10240-3072)...), nil, CodeTrailingData, ""},
		{"garbage after end", append(tarOf(good), 'x'), nil, CodeTrailingData, ""},
		{"lone zero block", append(append(bytes.Clone(good[:1024]), make([]byte, 512)...), tarOf(file("workspace/b", 0o644, ""))...), nil, CodeHeader, ""},
		{"uid", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, setUID)), nil, CodeNotCanonical, ""},
		{"mtime", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[136:], "00000000001 ") })), nil, CodeNotCanonical, ""},
		{"uname", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[265:], "root") })), nil, CodeNotCanonical, ""},
		{"mode zero", tarOf(block("workspace/a", "", 0, 0, typeRegular, func(h []byte) { copy(h[100:], "000000 ") })), nil, CodeNotCanonical, ""},
		{"mode with NUL terminator", tarOf(block("workspace/a", "", 0o644, 0, typeRegular, func(h []byte) { copy(h[100:], "0000644\x00") })), nil, CodeNotCanonical, ""},
		{"gnu checksum form", tarOf(func() []byte {
			h := header("workspace/a", "", 0o644, 0, typeRegular)
			copy(h[148:], []byte("0" + strings.TrimSpace(string(h[148:155])) + "\x00 ")[1:])
			return h
		}()), nil, CodeNotCanonical, ""},
		{"needless prefix", tarOf(block("a", "workspace", 0o644, 0, typeRegular)), nil, CodeNotCanonical, ""},
		{"needless pax", tarOf(pax(string(paxRecord("workspace/a"))), data("x")), nil, CodeNotCanonical, ""},
		{"prefix cut at a later slash", tarOf(block("y/"+strings.Repeat("a", 90), "workspace/x", 0o644, 0, typeRegular)), nil, CodeNotCanonical, ""},
		{"non-ASCII name without pax", tarOf(block("workspace/\u00e9", "", 0o644, 0, typeRegular)), nil, CodeNotCanonical, ""},
		{"data padding not zero", tarOf(append(block("workspace/a", "", 0o644, 1, typeRegular), append([]byte("a"), bytes.Repeat([]byte{1}, 511)...)...)), nil, CodeNotCanonical, ""},
		{"metadata after file order", tarOf(metaEntry(t, r), bundle, good), nil, CodeNotCanonical, ""},
		{"bundle before metadata", tarOf(good, bundle, metaEntry(t, r)), nil, CodeNotCanonical, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := DefaultLimits()
			if tt.limits != nil {
				l = *tt.limits
			}
			a, err := Decode(tt.data, l)
			if err == nil {
				t.Fatalf("Decode accepted it: %+v", a)
			}
			wantCode(t, err, tt.code, tt.entry)
		})
	}
}

func TestDecodeAcceptsOwnEncoding(t *testing.T) {
	files := []File{
		{Path: "README.md", Mode: 0o644, Data: []byte("# hi\n")},
		{Path: "a-b", Mode: 0o600, Data: nil},
		{Path: "a/b", Mode: 0o755, Data: bytes.Repeat([]byte{0}, 1500)},
		{Path: strings.Repeat("d/", 900) + "deep", Mode: 0o644, Data: []byte("deep")},
		{Path: "\U0001F600", Mode: 0o644, Data: []byte("emoji")},
		{Path: "\ue000", Mode: 0o644, Data: []byte("pua")},
	}
	r := &Repository{HeadCommit: commit2, HeadTree: strings.Repeat("d", 64), Bundle: []byte("bundle bytes")}
	for _, repo := range []*Repository{nil, r} {
		b, err := Encode(files, repo)
		if err != nil {
			t.Fatal(err)
		}
		a, err := Decode(b, DefaultLimits())
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(&Archive{Files: files, Repository: repo}, a, cmpopts.EquateEmpty()); diff != "" {
			t.Fatalf("round trip (-want +got):\n%s", diff)
		}
		m := Manifest(files)
		if err := Match(a, &m); err != nil {
			t.Fatal(err)
		}
	}
}

// TestDecodeCopies checks that decoded bytes do not alias the archive.
func TestDecodeCopies(t *testing.T) {
	b, err := Encode([]File{{Path: "a", Mode: 0o644, Data: []byte("abc")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Decode(b, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	a.Files[0].Data[0] = 'X'
	if b[512] != 'a' {
		t.Fatal("decoded data aliases the archive")
	}
}

func TestManifest(t *testing.T) {
	got := Manifest([]File{{Path: "a", Mode: 0o755, Data: []byte("x")}, {Path: "b", Mode: 0o644}})
	want := candidate.WorkspaceManifestMaterial{Kind: "agent-candidate-workspace-manifest", Files: []candidate.ManifestFile{
		{Path: "a", Mode: 493, SHA256: canonjson.DigestBytes([]byte("x")), ByteLength: 1},
		{Path: "b", Mode: 420, SHA256: canonjson.DigestBytes(nil), ByteLength: 0},
	}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("Manifest (-want +got):\n%s", diff)
	}
	empty, err := candidate.MaterialBytes(Manifest(nil))
	if err != nil {
		t.Fatal(err)
	}
	if string(empty) != `{"files":[],"kind":"agent-candidate-workspace-manifest"}` {
		t.Fatalf("empty manifest is %s", empty)
	}
}

func TestMatch(t *testing.T) {
	a := &Archive{Files: []File{{Path: "a", Mode: 0o644, Data: []byte("x")}, {Path: "b", Mode: 0o755, Data: []byte("yy")}}}
	edit := func(f func(m *candidate.WorkspaceManifestMaterial)) *candidate.WorkspaceManifestMaterial {
		m := Manifest(a.Files)
		f(&m)
		return &m
	}
	tests := []struct {
		name  string
		m     *candidate.WorkspaceManifestMaterial
		entry string
		want  string
	}{
		{"kind", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Kind = "x" }), "", "manifest kind"},
		{"mode", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files[1].Mode = 0o644 }), "b", "mode"},
		{"length", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files[0].ByteLength = 2 }), "a", "bytes"},
		{"hash", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files[1].SHA256 = canonjson.DigestBytes([]byte("zz")) }), "b", "hash"},
		{"extra archive file", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files = m.Files[:1] }), "b", "not in the manifest"},
		{"missing archive file", edit(func(m *candidate.WorkspaceManifestMaterial) {
			m.Files = append(m.Files, candidate.ManifestFile{Path: "c", Mode: 0o644, SHA256: canonjson.DigestBytes(nil)})
		}), "c", "not in the archive"},
		{"renamed", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files[0].Path = "0" }), "a", "not in the manifest"},
		{"reordered", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files[0], m.Files[1] = m.Files[1], m.Files[0] }), "b", "row 0"},
		{"mode zero manifest", edit(func(m *candidate.WorkspaceManifestMaterial) { m.Files[0].Mode = 0 }), "a", "mode"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := Match(a, tt.m)
			wantCode(t, err, CodeMismatch, tt.entry)
			if !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("error %q does not say %q", err, tt.want)
			}
		})
	}
	if err := Match(a, edit(func(*candidate.WorkspaceManifestMaterial) {})); err != nil {
		t.Fatal(err)
	}
}

// TestModeZeroCannotRoundTrip records the reference quirk: a mode-0 file
// is written as 0644, so its manifest never matches the decoded archive.
func TestModeZeroCannotRoundTrip(t *testing.T) {
	files := []File{{Path: "x", Mode: 0, Data: []byte("x")}}
	b, err := Encode(files, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Decode(b, DefaultLimits())
	if err != nil {
		t.Fatal(err)
	}
	if a.Files[0].Mode != 0o644 {
		t.Fatalf("mode %#o, want 0644", a.Files[0].Mode)
	}
	m := Manifest(files)
	wantCode(t, Match(a, &m), CodeMismatch, "x")
}

func TestErrorMessage(t *testing.T) {
	e := &Error{Code: CodeOrder, Entry: "a", Detail: "d"}
	if got := e.Error(); got != `workspace archive: path-order: "a": d` {
		t.Fatal(got)
	}
	e.Entry = ""
	if got := e.Error(); got != `workspace archive: path-order: d` {
		t.Fatal(got)
	}
}

// TestNumericFields pins tar-stream's field forms, including the two no
// limit lets a workspace reach: an overflowing octal field (all sevens)
// and the base-256 size of 8 GiB and more.
func TestNumericFields(t *testing.T) {
	b := make([]byte, 8)
	putOctal(b, 0o644, 6)
	if string(b) != "000644 \x00" {
		t.Fatalf("mode field %q", b)
	}
	putOctal(b, 0o10000000, 6)
	if string(b) != "777777 \x00" {
		t.Fatalf("overflow field %q", b)
	}
	size := make([]byte, 12)
	putSize(size, 0o77777777777)
	if string(size) != "77777777777 " {
		t.Fatalf("size field %q", size)
	}
	if v, ok := parseSize(size); !ok || v != 0o77777777777 {
		t.Fatalf("parseSize = %d, %v", v, ok)
	}
	clear(size)
	putSize(size, 1<<33)
	if want := []byte{0x80, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0}; !bytes.Equal(size, want) {
		t.Fatalf("base-256 size % x", size)
	}
	if v, ok := parseSize(size); !ok || v != 1<<33 {
		t.Fatalf("parseSize = %d, %v", v, ok)
	}
	for _, bad := range []string{"", "   ", "0 1", "08", "1\x00x"} {
		if _, ok := parseOctal([]byte(bad)); ok {
			t.Errorf("parseOctal(%q) accepted", bad)
		}
	}
}

// TestPAXRecordLength pins the self-counting length at the digit steps.
func TestPAXRecordLength(t *testing.T) {
	for _, tt := range []struct{ body, want int }{{97, 99}, {98, 101}, {99, 102}, {996, 999}, {997, 1001}, {998, 1002}} {
		name := strings.Repeat("a", tt.body-len(" path=\n"))
		rec := paxRecord(name)
		if len(rec) != tt.want || !strings.HasPrefix(string(rec), strconv.Itoa(tt.want)+" ") {
			t.Errorf("body %d: record of %d bytes starts %q, want %d", tt.body, len(rec), rec[:5], tt.want)
		}
	}
}

// TestIsReferenceLayout: what claims the reference layout (and is then
// decoded strictly) and what does not.
func TestIsReferenceLayout(t *testing.T) {
	one, err := Encode([]File{{Path: "a.txt", Mode: 0o644, Data: []byte("a\n")}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	empty, err := Encode(nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	broken := bytes.Clone(one)
	broken[148] = 'x' // a bad checksum still claims the layout
	for _, tc := range []struct {
		name string
		data []byte
		want bool
	}{
		{"one file", one, true},
		{"empty archive", empty, true},
		{"bad checksum", broken, true},
		{"zip", append([]byte("PK\x03\x04"), make([]byte, 2000)...), false},
		{"short", one[:600], false},
		{"json", []byte(`{"files":[]}`), false},
		{"zeros then data", append(make([]byte, 1024), 'x'), false},
	} {
		if got := IsReferenceLayout(tc.data); got != tc.want {
			t.Errorf("%s: IsReferenceLayout = %v, want %v", tc.name, got, tc.want)
		}
	}
}
