// Package whatwgurl parses absolute URL strings exactly as the JavaScript
// expression new URL(input) does in Node.js 20 when no base URL is given:
// it tells whether the constructor throws and, when it does not, what the
// protocol, username, password, hostname, host, port, pathname, search, hash,
// href and searchParams getters return.
//
// Go's net/url accepts and rejects a different set of strings and serializes
// differently, so this package implements the WHATWG URL Standard's basic URL
// parser directly. It strips leading and trailing C0 controls and spaces,
// removes ASCII tab and newline, lower-cases schemes, applies the special
// scheme rules (http, https, ws, wss, ftp, file), percent-encodes each
// component with its own encode set, parses IPv4 hosts in all their legacy
// number forms ("0x7f.1", "2130706433"), parses and compresses IPv6 hosts,
// and converts domains to ASCII with UTS #46 processing.
//
// # Fidelity to Node.js 20
//
// The target is Node.js 20's behaviour (its URL parser is Ada 2.9), not the
// latest text of the standard, and where the two differ Node wins:
//   - "^" is not percent-encoded in paths, and spaces before "?" or "#" in an
//     opaque path are kept as they are.
//   - A final ".." in the path of a non-special URL whose path is already
//     empty leaves the path empty ("sc:/.." is "sc:", not "sc:/").
//   - In a file URL, a lone first path segment such as "C:x" (a letter and
//     ":") is never removed by "..".
//   - A path that needs no percent-encoding, has no "%" or "\", does not
//     start with "." and whose first "/." is followed by something other than
//     ".", "/" or its end is taken over without dot-segment processing:
//     "http://h/x/.:/.." keeps its pathname "/x/.:/..".
//   - IDNA: labels starting with "xn--" may decode to ASCII ("xn--ab-" is
//     accepted); the Bidi rule is checked only for labels that contain a
//     right-to-left character and in a relaxed form; when a label contains a
//     ZERO WIDTH (NON-)JOINER only the first one is checked, with a loose
//     form of the ContextJ rule, and the Bidi rule is then skipped; combining
//     marks, viramas, Bidi classes and joining types are those of Unicode
//     13.0, and Node's joining-type data lacks some scripts. See idna.go and
//     maketables.go.
//
// The UTS #46 mapping table comes from golang.org/x/net/idna, whose Unicode
// 15.0 tables (selected for Go toolchains before 1.27) agree with Node.js 20
// on every code point. A toolchain that selects newer tables in x/net or
// x/text may change verdicts for recently assigned characters; the Node.js
// corpus test in this package would show it.
//
// Input strings are treated as WTF-8: a lone UTF-16 surrogate stored in its
// three-byte generalized UTF-8 form becomes U+FFFD, as JavaScript's
// conversion to USVString would make it; a high surrogate followed directly
// by a low one in that form is joined into one code point. Other ill-formed
// UTF-8 is replaced with U+FFFD per maximal ill-formed subsequence, as the
// Encoding Standard's UTF-8 decoder (and so Node's Buffer and TextDecoder)
// does.
//
// Only parsing without a base URL is supported: relative references such as
// "/a", "a" or "//host" fail, as new URL(input) throws for them.
package whatwgurl
