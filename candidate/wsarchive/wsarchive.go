package wsarchive

import (
	"fmt"
	"io/fs"
)

// Entry names and the repository metadata kind of the reference layout.
const (
	// WorkspacePrefix begins the entry name of every workspace file.
	WorkspacePrefix = "workspace/"
	// RepositoryMetadataName is the entry holding the repository metadata
	// document.
	RepositoryMetadataName = "metadata/repository.json"
	// RepositoryBundleName is the entry holding the git bundle of HEAD.
	RepositoryBundleName = "metadata/repository.bundle"
	// RepositoryKind is the kind of the repository metadata document.
	RepositoryKind = "agent-candidate-workspace-archive"
	// MaxMode is the largest file mode: permission bits only.
	MaxMode fs.FileMode = 0o777
	// repositoryEntryMode is the mode of both repository entries.
	repositoryEntryMode = 0o600
)

// Limits bounds what [Encode] writes and [Decode] accepts. Every field
// must be positive; [DefaultLimits] returns the reference runtime's.
type Limits struct {
	// MaxArchiveBytes bounds the archive. While decoding, the archive's
	// length plus the bytes of every entry read so far must stay within
	// it too, as in the reference reader.
	MaxArchiveBytes int64
	// MaxEmbeddedArtifactBytes is the largest manifest or archive a
	// capture embeds as base64 rather than storing through an artifact
	// port. Encode and Decode do not use it.
	MaxEmbeddedArtifactBytes int64
	// MaxFiles bounds the number of workspace files.
	MaxFiles int
	// MaxFileBytes bounds one workspace file.
	MaxFileBytes int64
	// MaxTotalFileBytes bounds the sum of the workspace files.
	MaxTotalFileBytes int64
	// MaxPathBytes bounds a workspace path in UTF-8 bytes. The reference
	// reader also uses it as the cap of the repository metadata entry.
	MaxPathBytes int
	// MaxRepositoryBundleBytes bounds the git bundle.
	MaxRepositoryBundleBytes int64
}

// DefaultLimits returns the reference runtime's limits: a 512 MiB
// archive, 1 MiB embedded artifacts, 50,000 files of at most 128 MiB and
// 256 MiB in all, 4,096-byte paths and a 128 MiB repository bundle.
func DefaultLimits() Limits {
	const mib = 1 << 20
	return Limits{
		MaxArchiveBytes:          512 * mib,
		MaxEmbeddedArtifactBytes: 1 * mib,
		MaxFiles:                 50_000,
		MaxFileBytes:             128 * mib,
		MaxTotalFileBytes:        256 * mib,
		MaxPathBytes:             4096,
		MaxRepositoryBundleBytes: 128 * mib,
	}
}

func (l Limits) check() error {
	if l.MaxArchiveBytes <= 0 || l.MaxEmbeddedArtifactBytes <= 0 || l.MaxFiles <= 0 || l.MaxFileBytes <= 0 ||
		l.MaxTotalFileBytes <= 0 || l.MaxPathBytes <= 0 || l.MaxRepositoryBundleBytes <= 0 {
		return &Error{Code: CodeInvalidInput, Detail: "every limit must be positive"}
	}
	return nil
}

// File is one regular workspace file.
type File struct {
	// Path is the workspace-relative path, "/"-separated.
	Path string
	// Mode is the permission bits, 0 to [MaxMode].
	Mode fs.FileMode
	// Data is the file's bytes.
	Data []byte
}

// Repository is the git evidence a task workspace may carry: the HEAD
// commit and tree ids (40 or 64 lowercase hex digits, one object format)
// and a git bundle of HEAD.
type Repository struct {
	// HeadCommit is the id of the HEAD commit.
	HeadCommit string
	// HeadTree is the id of HEAD's tree.
	HeadTree string
	// Bundle is the bytes of `git bundle create <file> HEAD`.
	Bundle []byte
}

// Archive is a decoded workspace archive.
type Archive struct {
	// Files are the workspace files in archive (ascending path) order.
	Files []File
	// Repository is the git evidence, or nil when the archive has none.
	Repository *Repository
}

// Code classifies an [Error].
type Code string

// The error codes.
const (
	// CodeInvalidInput: Encode was given a file, repository or limit it
	// cannot write.
	CodeInvalidInput Code = "invalid-input"
	// CodeLimit: a limit of [Limits] is exceeded.
	CodeLimit Code = "limit-exceeded"
	// CodeTruncated: the archive ends inside a header, an entry or before
	// its two end blocks.
	CodeTruncated Code = "truncated"
	// CodeHeader: a header is malformed (magic, numeric field, PAX record).
	CodeHeader Code = "bad-header"
	// CodeChecksum: a header's checksum does not match its bytes.
	CodeChecksum Code = "bad-checksum"
	// CodeEntryType: an entry is not a regular file.
	CodeEntryType Code = "not-regular-file"
	// CodeDuplicate: an entry name occurs twice.
	CodeDuplicate Code = "duplicate-entry"
	// CodeUnknownEntry: an entry is neither a workspace file nor a
	// repository entry.
	CodeUnknownEntry Code = "unknown-entry"
	// CodeUnsafePath: a workspace path breaks the path rule.
	CodeUnsafePath Code = "unsafe-path"
	// CodeOrder: workspace paths are not strictly ascending, or one file
	// is a directory of another.
	CodeOrder Code = "path-order"
	// CodeMode: a mode is outside 0..0777 (or not 0600 for a repository
	// entry).
	CodeMode Code = "bad-mode"
	// CodeRepository: the repository metadata or bundle is invalid,
	// incomplete or inconsistent.
	CodeRepository Code = "bad-repository"
	// CodeTrailingData: bytes follow the end-of-archive blocks.
	CodeTrailingData Code = "trailing-data"
	// CodeNotCanonical: the archive decodes, but re-encoding its content
	// gives other bytes.
	CodeNotCanonical Code = "not-canonical"
	// CodeMismatch: the decoded files differ from a manifest.
	CodeMismatch Code = "manifest-mismatch"
)

// Error is the error of every function of the package.
type Error struct {
	// Code classifies the failure.
	Code Code
	// Entry is the tar entry name or workspace path concerned, if any.
	Entry string
	// Detail says what is wrong.
	Detail string
}

func (e *Error) Error() string {
	if e.Entry == "" {
		return fmt.Sprintf("workspace archive: %s: %s", e.Code, e.Detail)
	}
	return fmt.Sprintf("workspace archive: %s: %q: %s", e.Code, e.Entry, e.Detail)
}

func errorf(code Code, entry, format string, args ...any) *Error {
	return &Error{Code: code, Entry: entry, Detail: fmt.Sprintf(format, args...)}
}
