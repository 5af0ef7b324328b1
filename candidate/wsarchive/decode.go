package wsarchive

import (
	"bytes"
	"io/fs"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/canonjson"
)

// maxPAXOverhead bounds a PAX record beyond its path: " path=", the
// newline, "workspace/" and up to ten length digits.
const maxPAXOverhead = 32

// Decode reads an archive in the reference layout under limits. It
// rejects anything else: a malformed or truncated header, a bad checksum,
// a non-regular, duplicate or unknown entry, an unsafe or out-of-order
// path, a mode outside 0..0777, an exceeded limit, repository metadata
// that is not canonical or does not describe its bundle, metadata without
// a bundle or a bundle without metadata, bytes after the end blocks, and
// finally any archive whose content re-encodes to other bytes. The
// returned files own their bytes.
func Decode(data []byte, limits Limits) (*Archive, error) {
	if err := limits.check(); err != nil {
		return nil, err
	}
	if int64(len(data)) > limits.MaxArchiveBytes {
		return nil, errorf(CodeLimit, "", "archive of %d bytes exceeds the archive limit", len(data))
	}
	d := decoder{data: data, limits: limits, names: make(map[string]struct{})}
	if err := d.run(); err != nil {
		return nil, err
	}
	a := &Archive{Files: d.files}
	if (d.meta == nil) != (d.bundle == nil) {
		return nil, errorf(CodeRepository, "", "repository metadata and bundle must come together")
	}
	if d.meta != nil {
		if int64(len(d.bundle)) != d.meta.Bundle.ByteLength {
			return nil, errorf(CodeRepository, RepositoryBundleName, "bundle has %d bytes, metadata says %d",
				len(d.bundle), d.meta.Bundle.ByteLength)
		}
		if canonjson.DigestBytes(d.bundle) != d.meta.Bundle.SHA256 {
			return nil, errorf(CodeRepository, RepositoryBundleName, "bundle does not hash to its metadata sha256")
		}
		a.Repository = &Repository{HeadCommit: d.meta.HeadCommit, HeadTree: d.meta.HeadTree, Bundle: d.bundle}
	}
	var meta []byte
	if a.Repository != nil {
		var err error
		if meta, err = repositoryMetadata(a.Repository); err != nil {
			return nil, err
		}
	}
	if !bytes.Equal(encode(a.Files, meta, a.Repository), data) {
		return nil, errorf(CodeNotCanonical, "", "re-encoding the decoded content gives other bytes")
	}
	return a, nil
}

type decoder struct {
	data   []byte
	off    int
	limits Limits

	names    map[string]struct{}
	files    []File
	order    pathOrder
	total    int64
	retained int64

	meta   *repositoryDoc
	bundle []byte
}

// run reads entries up to the two end blocks.
func (d *decoder) run() error {
	var paxPath *string
	for {
		if len(d.data)-d.off < blockSize {
			return errorf(CodeTruncated, "", "archive ends before its end-of-archive blocks")
		}
		h := d.data[d.off : d.off+blockSize]
		if isZero(h) {
			if paxPath != nil {
				return errorf(CodeHeader, *paxPath, "PAX header is not followed by an entry")
			}
			if len(d.data)-d.off < 2*blockSize {
				return errorf(CodeTruncated, "", "archive ends after one end-of-archive block")
			}
			if !isZero(d.data[d.off+blockSize : d.off+2*blockSize]) {
				return errorf(CodeHeader, "", "a zero block is not followed by a second one")
			}
			if d.off+2*blockSize != len(d.data) {
				return errorf(CodeTrailingData, "", "%d bytes follow the end-of-archive blocks", len(d.data)-d.off-2*blockSize)
			}
			return nil
		}
		name, mode, size, typeflag, err := parseHeader(h)
		if err != nil {
			return err
		}
		d.off += blockSize
		switch typeflag {
		case typePAX:
			if paxPath != nil {
				return errorf(CodeHeader, *paxPath, "two PAX headers in a row")
			}
			if size > int64(d.limits.MaxPathBytes+len(WorkspacePrefix)+maxPAXOverhead) {
				return errorf(CodeLimit, name, "PAX header of %d bytes exceeds the path limit", size)
			}
			body, err := d.take(name, size)
			if err != nil {
				return err
			}
			p, err := parsePAX(body)
			if err != nil {
				return err
			}
			paxPath = &p
			continue
		case typeRegular:
		default:
			if paxPath != nil {
				name = *paxPath
			}
			return errorf(CodeEntryType, name, "entry type %q is not a regular file", typeflag)
		}
		if paxPath != nil {
			name, paxPath = *paxPath, nil
		}
		if err := d.entry(name, mode, size); err != nil {
			return err
		}
	}
}

// entry reads one regular-file entry's data and files it.
func (d *decoder) entry(name string, mode, size int64) error {
	if _, dup := d.names[name]; dup {
		return errorf(CodeDuplicate, name, "entry occurs twice")
	}
	d.names[name] = struct{}{}
	switch {
	case strings.HasPrefix(name, WorkspacePrefix):
		if len(d.files) >= d.limits.MaxFiles {
			return errorf(CodeLimit, name, "more than %d files", d.limits.MaxFiles)
		}
		p := name[len(WorkspacePrefix):]
		if why := checkPath(p, d.limits.MaxPathBytes); why != "" {
			return &Error{Code: CodeUnsafePath, Entry: p, Detail: why}
		}
		if mode < 0 || mode > int64(MaxMode) {
			return errorf(CodeMode, p, "mode %#o is not permission bits", mode)
		}
		if size > d.limits.MaxFileBytes {
			return errorf(CodeLimit, p, "file of %d bytes exceeds the file size limit", size)
		}
		b, err := d.read(p, size)
		if err != nil {
			return err
		}
		if !d.order.add(p) {
			return errorf(CodeOrder, p, "paths must be unique, ascending and not nested in a file")
		}
		if d.total += size; d.total > d.limits.MaxTotalFileBytes {
			return errorf(CodeLimit, p, "files exceed the total size limit")
		}
		d.files = append(d.files, File{Path: p, Mode: fs.FileMode(mode), Data: b})
	case name == RepositoryMetadataName:
		if mode != repositoryEntryMode {
			return errorf(CodeMode, name, "mode %#o is not 0600", mode)
		}
		if size > int64(d.limits.MaxPathBytes) {
			return errorf(CodeLimit, name, "metadata of %d bytes exceeds the path limit", size)
		}
		b, err := d.read(name, size)
		if err != nil {
			return err
		}
		if d.meta, err = parseRepositoryMetadata(b, d.limits); err != nil {
			return err
		}
	case name == RepositoryBundleName:
		if mode != repositoryEntryMode {
			return errorf(CodeMode, name, "mode %#o is not 0600", mode)
		}
		if size > d.limits.MaxRepositoryBundleBytes {
			return errorf(CodeLimit, name, "bundle of %d bytes exceeds the bundle limit", size)
		}
		b, err := d.read(name, size)
		if err != nil {
			return err
		}
		d.bundle = b
	default:
		return errorf(CodeUnknownEntry, name, "entry is not part of the workspace layout")
	}
	return nil
}

// read copies an entry's data, keeping the archive plus every entry read
// within the archive limit as the reference reader does.
func (d *decoder) read(name string, size int64) ([]byte, error) {
	if size > d.limits.MaxArchiveBytes-int64(len(d.data))-d.retained {
		return nil, errorf(CodeLimit, name, "entries exceed the archive limit while decoding")
	}
	b, err := d.take(name, size)
	if err != nil {
		return nil, err
	}
	d.retained += size
	return bytes.Clone(b), nil
}

// take returns the next size bytes and skips their block padding.
func (d *decoder) take(name string, size int64) ([]byte, error) {
	if size > int64(len(d.data)-d.off) {
		return nil, errorf(CodeTruncated, name, "entry data runs past the end of the archive")
	}
	b := d.data[d.off : d.off+int(size)]
	end := int64(d.off) + padded(size)
	if end > int64(len(d.data)) {
		return nil, errorf(CodeTruncated, name, "entry padding runs past the end of the archive")
	}
	d.off = int(end)
	if b == nil {
		b = []byte{}
	}
	return b, nil
}

func isZero(b []byte) bool {
	for _, c := range b {
		if c != 0 {
			return false
		}
	}
	return true
}

// parseHeader checks a header's checksum and magic and returns its full
// name (prefix joined), mode, size and type.
func parseHeader(h []byte) (name string, mode, size int64, typeflag byte, err error) {
	sum, ok := parseOctal(h[148:156])
	if !ok {
		return "", 0, 0, 0, errorf(CodeHeader, "", "checksum field is not octal")
	}
	if sum != int64(checksum(h)) {
		return "", 0, 0, 0, errorf(CodeChecksum, "", "header checksum %d, computed %d", sum, checksum(h))
	}
	if string(h[257:265]) != "ustar\x0000" {
		return "", 0, 0, 0, errorf(CodeHeader, "", "header is not ustar")
	}
	name = cString(h[0:nameSize])
	if prefix := cString(h[345 : 345+prefixSize]); prefix != "" {
		name = prefix + "/" + name
	}
	if !utf8.ValidString(name) {
		return "", 0, 0, 0, errorf(CodeUnsafePath, strconv.Quote(name), "entry name is not UTF-8")
	}
	if mode, ok = parseOctal(h[100:108]); !ok {
		return "", 0, 0, 0, errorf(CodeHeader, name, "mode field is not octal")
	}
	if size, ok = parseSize(h[124:136]); !ok {
		return "", 0, 0, 0, errorf(CodeHeader, name, "size field is not a size")
	}
	return name, mode, size, h[156], nil
}

// cString returns b up to its first NUL.
func cString(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	return string(b)
}

// parseOctal reads a numeric field: optional leading spaces, octal digits
// and then only spaces and NULs. Anything the layout does not write still
// fails the canonical comparison; this only has to be unambiguous.
func parseOctal(b []byte) (int64, bool) {
	i := 0
	for i < len(b) && b[i] == ' ' {
		i++
	}
	var v int64
	digits := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '7'; i++ {
		if v > (1<<62)>>3 {
			return 0, false
		}
		v = v<<3 | int64(b[i]-'0')
		digits++
	}
	for ; i < len(b); i++ {
		if b[i] != ' ' && b[i] != 0 {
			return 0, false
		}
	}
	return v, digits > 0
}

// parseSize reads the size field: octal, or tar's positive base-256 form.
func parseSize(b []byte) (int64, bool) {
	if b[0]&0x80 == 0 {
		return parseOctal(b)
	}
	if b[0] != 0x80 {
		return 0, false
	}
	var v int64
	for _, c := range b[1:] {
		if v > (1<<62)>>8 {
			return 0, false
		}
		v = v<<8 | int64(c)
	}
	return v, true
}

// parsePAX reads the one record of the layout's PAX header: a decimal
// length that counts the whole record, then " path=<name>\n".
func parsePAX(b []byte) (string, error) {
	sp := bytes.IndexByte(b, ' ')
	if sp <= 0 {
		return "", errorf(CodeHeader, paxName, "PAX record has no length")
	}
	n, err := strconv.Atoi(string(b[:sp]))
	if err != nil || n != len(b) || b[0] == '0' {
		return "", errorf(CodeHeader, paxName, "PAX record length does not match its header")
	}
	rec, ok := bytes.CutPrefix(b[sp:], []byte(" path="))
	if !ok || len(rec) == 0 || rec[len(rec)-1] != '\n' {
		return "", errorf(CodeHeader, paxName, "PAX header must hold exactly one path record")
	}
	p := string(rec[:len(rec)-1])
	if !utf8.ValidString(p) || strings.ContainsAny(p, "\x00\n") {
		return "", errorf(CodeUnsafePath, strconv.Quote(p), "PAX path is not a UTF-8 line")
	}
	return p, nil
}

// parseRepositoryMetadata reads the repository metadata document: exactly
// {bundle:{byteLength, sha256}, headCommit, headTree, kind}, in its RFC
// 8785 form.
func parseRepositoryMetadata(b []byte, limits Limits) (*repositoryDoc, error) {
	bad := func(format string, args ...any) (*repositoryDoc, error) {
		return nil, errorf(CodeRepository, RepositoryMetadataName, format, args...)
	}
	v, err := canonjson.Decode(b)
	if err != nil {
		return bad("metadata is not JSON: %v", err)
	}
	if !hasExactly(v, "bundle", "headCommit", "headTree", "kind") {
		return bad("metadata must have exactly bundle, headCommit, headTree and kind")
	}
	kind, _ := v.Get("kind")
	commit, _ := v.Get("headCommit")
	tree, _ := v.Get("headTree")
	bundle, _ := v.Get("bundle")
	if kind.Kind() != canonjson.String || kind.Str() != RepositoryKind {
		return bad("metadata kind must be %q", RepositoryKind)
	}
	if commit.Kind() != canonjson.String || tree.Kind() != canonjson.String {
		return bad("headCommit and headTree must be strings")
	}
	if !hasExactly(bundle, "byteLength", "sha256") {
		return bad("bundle must have exactly byteLength and sha256")
	}
	sum, _ := bundle.Get("sha256")
	length, _ := bundle.Get("byteLength")
	if sum.Kind() != canonjson.String || !canonjson.IsDigest(sum.Str()) {
		return bad("bundle sha256 must be a sha256 digest")
	}
	if length.Kind() != canonjson.Number || !length.IsSafeInteger() || length.Float() <= 0 ||
		length.Float() > float64(limits.MaxRepositoryBundleBytes) {
		return bad("bundle byteLength must be a positive integer within the bundle limit")
	}
	canon, err := canonjson.Canonical(v)
	if err != nil || !bytes.Equal(canon, b) {
		return bad("metadata is not in RFC 8785 form")
	}
	doc := &repositoryDoc{
		Kind:       RepositoryKind,
		HeadCommit: commit.Str(),
		HeadTree:   tree.Str(),
		Bundle:     bundleRef{SHA256: sum.Str(), ByteLength: int64(length.Float())},
	}
	if !gitsafe.IsObjectID(doc.HeadCommit) || !gitsafe.IsObjectID(doc.HeadTree) {
		return bad("headCommit and headTree must be git object ids")
	}
	if len(doc.HeadCommit) != len(doc.HeadTree) {
		return bad("headCommit and headTree use different object formats")
	}
	return doc, nil
}

// hasExactly reports whether v is an object with exactly the named
// members.
func hasExactly(v canonjson.Value, names ...string) bool {
	if v.Kind() != canonjson.Object || len(v.Members()) != len(names) {
		return false
	}
	for _, n := range names {
		if _, ok := v.Get(n); !ok {
			return false
		}
	}
	return true
}

// IsReferenceLayout reports whether data claims the reference layout: it
// is exactly the two zero end blocks of an empty archive, or its first
// block is a ustar header (magic "ustar\x00", version "00"). A verifier
// decodes such an archive strictly with [Decode] and treats any failure
// as a mismatch; other encodings are outside this package (spec
// candidate §22 step 7: their content stays unverified).
func IsReferenceLayout(data []byte) bool {
	if len(data) < 2*blockSize {
		return false
	}
	if len(data) == 2*blockSize && isZero(data) {
		return true
	}
	return string(data[257:265]) == "ustar\x0000"
}
