// Package canonjson owns identity: RFC 8785 canonical JSON, the sha256
// digests computed over it, and the strict decoder that every wire shape in
// agentrt reads through.
//
// The package models JSON the way the reference TypeScript implementation
// sees it, because digests must agree byte for byte:
//
//   - Strings are sequences of UTF-16 code units. A Go string here holds
//     WTF-8: well-formed UTF-8, except that a lone surrogate written as a
//     \uD800–\uDFFF escape is kept as its three-byte generalized UTF-8 form
//     instead of being replaced by U+FFFD. [IsWellFormed] tells the two
//     apart, [UTF16Len] counts code units, and [CompareUTF16] orders member
//     names the way JavaScript's default sort does.
//   - Numbers are IEEE-754 doubles. A literal that overflows decodes to ±Inf,
//     as JSON.parse does; such a value can be validated but never
//     canonicalized. Canonical numbers use ECMAScript Number::toString.
//
// [Decode] is strict: invalid UTF-8, duplicate member names, trailing data,
// excessive nesting and too many values are refused with a [*DecodeError]
// that carries a JSON pointer. Lone surrogates are preserved rather than refused, because
// whether they are acceptable depends on where they appear (a profile may
// carry one in a string but never in a record key, and never in a digest);
// [Canonical] refuses them with a [*CanonicalError].
//
// [ToValue] and [FromValue] convert between [Value] trees and Go values using
// encoding/json struct tags, with `omitzero` presence semantics: a nil
// pointer, map or slice is absent, while an empty non-nil map or slice is
// present. The package must not import any other agentrt package.
package canonjson
