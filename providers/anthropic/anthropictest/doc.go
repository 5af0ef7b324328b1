// Package anthropictest serves recorded Anthropic Messages API exchanges
// from a real local HTTP server, so that a client's requests are checked
// against the transcript and its responses are the transcript's bytes.
//
// A transcript is a txtar archive. Its comment says what it shows. Each
// exchange N (1, 2, …) is two files: "N/request.json", the request body
// the client must send (compared as JSON values, so key order and spacing
// do not matter), and "N/response", an HTTP response written as a status
// line "HTTP <code>", header lines "Name: value", an empty line, and the
// body bytes exactly (for a stream, the event: and data: lines of the
// server-sent events). Two pseudo-headers script the connection and are
// not sent: "X-Transcript: drop" aborts the connection after the body
// (a dropped stream), "X-Transcript: hang" keeps it open after the body
// until the client goes away.
package anthropictest
