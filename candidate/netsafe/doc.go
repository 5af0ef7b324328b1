// Package netsafe is how agentrt reaches the network on behalf of a frozen
// candidate: it owns the address rules of candidate resolvers (spec
// candidate §1 isPrivateHost and §3.6; checklist N01) and an HTTP client
// that enforces them where they can be enforced — at every connect.
//
// The rules, in one place:
//
//   - IsPrivateAddr is the set every resolver MUST refuse: IPv4 0/8, 10/8,
//     100.64/10, 127/8, 169.254/16, 172.16/12, 192.168/16, 198.18/15 and
//     224/3 and up; IPv6 ::, ::1, fe80::/10, fc00::/7 and every
//     IPv4-mapped address (::ffff:0:0/96).
//   - Blocked adds what a resolver SHOULD refuse: IPv6 multicast
//     (ff00::/8), and NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses
//     whose embedded IPv4 address is private.
//
// The schema-level predicate on a host as written (localhost, metadata
// names, and the WHATWG-normalized private addresses) is
// candidate.IsPrivateHost; the client applies it too, so a resolver never
// accepts a host the schema refuses.
//
// NewClient's client checks the request's host before it resolves it,
// every address it connects to (a dialer control hook, so a DNS answer
// that rebinds to an internal address is refused at connect time, and so
// is every further answer it tries), and every redirect, which it refuses
// unless Options.MaxRedirects allows some; it never uses a proxy from the
// environment and never forwards credentials. Fetch reads a bounded
// response. S3URL and IPFSURL map the closed locator kinds to endpoints
// themselves, so no caller-supplied URL is ever dereferenced.
//
// netsafe does not verify what it fetched: a caller treats bytes as proof
// only after checking their length and sha256 (spec candidate §3.4).
package netsafe
