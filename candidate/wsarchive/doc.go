// Package wsarchive reads and writes the reference workspace archive: the
// tar that carries the bytes of a candidate workspace snapshot
// (spec candidate §3.5, §21.4; §22 step 7).
//
// # Layout
//
// The archive is what the reference runtime's tar-stream 3.2.1 pack writes
// for its entries, byte for byte:
//
//   - one regular-file entry "workspace/<path>" per file, in strictly
//     ascending path order (UTF-16 code units), carrying the file's
//     permission bits, uid and gid 0, empty user and group names, mtime 0;
//   - optionally "metadata/repository.json" (mode 0600: the RFC 8785 bytes
//     of {kind:"agent-candidate-workspace-archive", headCommit, headTree,
//     bundle:{sha256, byteLength}}) then "metadata/repository.bundle"
//     (mode 0600: a git bundle of HEAD);
//   - two zero blocks, and no further record padding.
//
// The metadata document has no schemaVersion member, although spec §21.4
// lists one: the reference writer omits it and its reader refuses any
// member beyond those four, so this package does the same.
//
// Each header is a POSIX ustar block: name (and, when the name exceeds 100
// bytes, a prefix cut at the first slashes that leaves a name of at most
// 100 bytes), octal fields of six digits then a space then NUL (mode, uid,
// gid, devmajor, devminor), eleven digits then a space (size, mtime), a
// checksum of six digits, a space and NUL, typeflag '0', magic "ustar\x00"
// and version "00". A non-ASCII entry name, or one that no prefix cut
// fits, is preceded by a PAX extended header named "PaxHeader" holding a
// single "path" record, and the entry's own header is then named
// "PaxHeader" too. A mode of 0 is written as 0644: tar-stream treats it as
// unset, so the layout cannot carry a mode-0 file.
//
// # Decoding
//
// [Decode] accepts only that layout. It checks every entry as the
// reference reader does (no duplicate, unknown or non-regular entries,
// safe sorted paths, modes 0..0777, per-file, total, count and archive
// limits, a canonical repository metadata document matching its bundle),
// then re-encodes what it decoded and requires the very same bytes, so a
// decoded archive has exactly one encoding. [Match] compares the decoded
// files with a manifest's material ([Manifest] computes it), which is the
// verifier's workspace-archive-mismatch test. Every failure is an *[Error]
// with a [Code] and, where one is known, the entry or path.
package wsarchive
