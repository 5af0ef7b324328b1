// Package schema checks decoded JSON values against declared shapes and
// reports every problem as an [Issue] with an RFC 6901 JSON pointer.
//
// It reproduces the verdicts of the reference implementation's validators
// (zod 4) closely enough that agentrt and the reference refuse the same
// documents at the same places:
//
//   - Objects are strict: an unknown member is an "unrecognized_keys"
//     issue at the object. A member named "__proto__" is ignored, neither
//     validated nor kept, exactly as the reference's object parser does.
//   - Type mismatches, unknown members, wrong literals and missing members
//     are fatal. Length, range, format and custom checks are not: they are
//     reported, but the value's shape still counts as matched.
//   - A refinement of an object runs only when nothing fatal was found
//     inside it.
//   - A union takes the first option that matches cleanly. Failing that,
//     if exactly one option matched its shape and failed only checks, that
//     option's issues are reported; otherwise one "invalid_union" issue is
//     reported at the union.
//
// Nodes return the value they accept, which may differ from their input
// when a member was dropped or a transform canonicalized it. Callers decode
// that output, never the raw input.
//
// The package depends only on canonjson. It knows nothing of agentrt's
// contract types; packages profile, contract and candidate declare theirs
// with it.
package schema
