package wsarchive

import (
	"io/fs"
	"strconv"
	"strings"

	"github.com/agentrt/agentrt/candidate"
	"github.com/agentrt/agentrt/candidate/gitsafe"
	"github.com/agentrt/agentrt/canonjson"
)

const (
	blockSize = 512
	// nameSize and prefixSize are the ustar name and prefix fields.
	nameSize   = 100
	prefixSize = 155
	// paxName names a PAX extended header and the entry it describes.
	paxName = "PaxHeader"
	// defaultMode replaces a zero mode, which tar-stream treats as unset.
	defaultMode = 0o644
	typeRegular = '0'
	typePAX     = 'x'
)

// Encode writes files and, when repo is not nil, its git evidence in the
// reference layout under [DefaultLimits]. See [EncodeLimits].
func Encode(files []File, repo *Repository) ([]byte, error) {
	return EncodeLimits(files, repo, DefaultLimits())
}

// EncodeLimits writes files and, when repo is not nil, its git evidence
// in the reference layout. Files must already be in strictly ascending
// path order (UTF-16 code units, the manifest's order), with safe paths,
// modes 0..0777 and no file inside another's path; their count, sizes and
// the archive must be within limits. A mode of 0 is written as 0644, as
// the reference does (see the package documentation).
func EncodeLimits(files []File, repo *Repository, limits Limits) ([]byte, error) {
	if err := limits.check(); err != nil {
		return nil, err
	}
	if err := checkFiles(files, limits); err != nil {
		return nil, err
	}
	var meta []byte
	if repo != nil {
		if err := checkRepository(repo, limits); err != nil {
			return nil, err
		}
		var err error
		if meta, err = repositoryMetadata(repo); err != nil {
			return nil, err
		}
	}
	if n := encodedSize(files, meta, repo); n > limits.MaxArchiveBytes {
		return nil, errorf(CodeLimit, "", "archive of %d bytes exceeds the archive limit", n)
	}
	return encode(files, meta, repo), nil
}

func checkFiles(files []File, limits Limits) error {
	if len(files) > limits.MaxFiles {
		return errorf(CodeLimit, "", "%d files exceed the file limit", len(files))
	}
	var order pathOrder
	var total int64
	for _, f := range files {
		if why := checkPath(f.Path, limits.MaxPathBytes); why != "" {
			return &Error{Code: CodeUnsafePath, Entry: f.Path, Detail: why}
		}
		if !order.add(f.Path) {
			return errorf(CodeOrder, f.Path, "paths must be unique, ascending and not nested in a file")
		}
		if f.Mode > MaxMode {
			return errorf(CodeMode, f.Path, "mode %#o is not permission bits", uint32(f.Mode))
		}
		size := int64(len(f.Data))
		if size > limits.MaxFileBytes {
			return errorf(CodeLimit, f.Path, "file of %d bytes exceeds the file size limit", size)
		}
		if total += size; total > limits.MaxTotalFileBytes {
			return errorf(CodeLimit, f.Path, "files exceed the total size limit")
		}
	}
	return nil
}

func checkRepository(r *Repository, limits Limits) error {
	if !gitsafe.IsObjectID(r.HeadCommit) || !gitsafe.IsObjectID(r.HeadTree) {
		return errorf(CodeRepository, "", "head commit and tree must be git object ids")
	}
	if len(r.HeadCommit) != len(r.HeadTree) {
		return errorf(CodeRepository, "", "head commit and tree use different object formats")
	}
	if len(r.Bundle) == 0 {
		return errorf(CodeRepository, RepositoryBundleName, "bundle is empty")
	}
	if int64(len(r.Bundle)) > limits.MaxRepositoryBundleBytes {
		return errorf(CodeLimit, RepositoryBundleName, "bundle of %d bytes exceeds the bundle limit", len(r.Bundle))
	}
	return nil
}

type bundleRef struct {
	SHA256     string `json:"sha256"`
	ByteLength int64  `json:"byteLength"`
}

type repositoryDoc struct {
	Kind       string    `json:"kind"`
	HeadCommit string    `json:"headCommit"`
	HeadTree   string    `json:"headTree"`
	Bundle     bundleRef `json:"bundle"`
}

// repositoryMetadata returns the RFC 8785 bytes of r's metadata document.
func repositoryMetadata(r *Repository) ([]byte, error) {
	b, err := candidate.MaterialBytes(repositoryDoc{
		Kind:       RepositoryKind,
		HeadCommit: r.HeadCommit,
		HeadTree:   r.HeadTree,
		Bundle:     bundleRef{SHA256: canonjson.DigestBytes(r.Bundle), ByteLength: int64(len(r.Bundle))},
	})
	if err != nil {
		return nil, errorf(CodeRepository, RepositoryMetadataName, "metadata: %v", err)
	}
	return b, nil
}

// encode writes the layout without checking its input.
func encode(files []File, meta []byte, repo *Repository) []byte {
	out := make([]byte, 0, encodedSize(files, meta, repo))
	for _, f := range files {
		out = appendEntry(out, WorkspacePrefix+f.Path, f.Mode, f.Data)
	}
	if repo != nil {
		out = appendEntry(out, RepositoryMetadataName, repositoryEntryMode, meta)
		out = appendEntry(out, RepositoryBundleName, repositoryEntryMode, repo.Bundle)
	}
	return append(out, make([]byte, 2*blockSize)...)
}

func encodedSize(files []File, meta []byte, repo *Repository) int64 {
	n := int64(2 * blockSize)
	for _, f := range files {
		n += entrySize(WorkspacePrefix+f.Path, len(f.Data))
	}
	if repo != nil {
		n += entrySize(RepositoryMetadataName, len(meta)) + entrySize(RepositoryBundleName, len(repo.Bundle))
	}
	return n
}

func entrySize(name string, size int) int64 {
	n := int64(blockSize) + padded(int64(size))
	if _, _, ok := splitName(name); !ok {
		n += blockSize + padded(int64(len(paxRecord(name))))
	}
	return n
}

func padded(n int64) int64 { return (n + blockSize - 1) / blockSize * blockSize }

func appendPadded(out, data []byte) []byte {
	out = append(out, data...)
	if r := len(data) % blockSize; r != 0 {
		out = append(out, make([]byte, blockSize-r)...)
	}
	return out
}

// appendEntry appends one regular-file entry: a ustar header when the
// name fits, else a PAX header with the path, then a header named
// PaxHeader; then the data padded to a block.
func appendEntry(out []byte, name string, mode fs.FileMode, data []byte) []byte {
	if mode == 0 {
		mode = defaultMode
	}
	if n, prefix, ok := splitName(name); ok {
		out = append(out, header(n, prefix, mode, int64(len(data)), typeRegular)...)
	} else {
		rec := paxRecord(name)
		out = append(out, header(paxName, "", mode, int64(len(rec)), typePAX)...)
		out = appendPadded(out, rec)
		out = append(out, header(paxName, "", mode, int64(len(data)), typeRegular)...)
	}
	return appendPadded(out, data)
}

// splitName fits an entry name into the ustar name and prefix fields the
// way tar-stream does: only an ASCII name, moving leading segments into
// the prefix until the rest is at most 100 bytes, the prefix then being
// at most 155 bytes.
func splitName(full string) (name, prefix string, ok bool) {
	for i := 0; i < len(full); i++ {
		if full[i] >= 0x80 {
			return "", "", false
		}
	}
	name = full
	for len(name) > nameSize {
		seg, rest, found := strings.Cut(name, "/")
		if !found {
			return "", "", false
		}
		if prefix == "" {
			prefix = seg
		} else {
			prefix += "/" + seg
		}
		name = rest
	}
	if len(prefix) > prefixSize {
		return "", "", false
	}
	return name, prefix, true
}

// paxRecord returns the PAX extended header data for a path: one record
// "<length> path=<name>\n" whose decimal length counts itself.
func paxRecord(name string) []byte {
	body := " path=" + name + "\n"
	n := len(body)
	digits := len(strconv.Itoa(n))
	if n+digits >= pow10(digits) {
		digits++
	}
	return []byte(strconv.Itoa(n+digits) + body)
}

func pow10(d int) int {
	p := 1
	for range d {
		p *= 10
	}
	return p
}

// header returns one ustar header block as tar-stream writes it.
func header(name, prefix string, mode fs.FileMode, size int64, typeflag byte) []byte {
	h := make([]byte, blockSize)
	copy(h[0:nameSize], name)
	putOctal(h[100:], int64(mode&0o7777), 6) // mode
	putOctal(h[108:], 0, 6)                  // uid
	putOctal(h[116:], 0, 6)                  // gid
	putSize(h[124:136], size)
	putOctal(h[136:], 0, 11) // mtime
	h[156] = typeflag
	copy(h[257:], "ustar\x0000")
	putOctal(h[329:], 0, 6) // devmajor
	putOctal(h[337:], 0, 6) // devminor
	copy(h[345:345+prefixSize], prefix)
	putOctal(h[148:], int64(checksum(h)), 6)
	return h
}

// putOctal writes v as n zero-padded octal digits and a space (n sevens
// when v does not fit), leaving the rest of the field as it is.
func putOctal(b []byte, v int64, n int) {
	s := strconv.FormatInt(v, 8)
	if len(s) > n {
		for i := range n {
			b[i] = '7'
		}
	} else {
		for i := range n - len(s) {
			b[i] = '0'
		}
		copy(b[n-len(s):], s)
	}
	b[n] = ' '
}

// putSize writes a size as eleven octal digits and a space, or in the
// base-256 form when it needs more than eleven digits.
func putSize(b []byte, size int64) {
	if len(strconv.FormatInt(size, 8)) <= 11 {
		putOctal(b, size, 11)
		return
	}
	b[0] = 0x80
	for i := 11; i > 0; i-- {
		b[i] = byte(size)
		size >>= 8
	}
}

// checksum is the sum of the header bytes with the checksum field read as
// eight spaces.
func checksum(h []byte) int {
	sum := 8 * int(' ')
	for i, c := range h {
		if i < 148 || i >= 156 {
			sum += int(c)
		}
	}
	return sum
}
