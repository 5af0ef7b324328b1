// Package transcript is a local vendor endpoint for tests: it replays
// recorded transcripts (txtar files of expected requests and exact
// response bytes) over a real HTTP server, checking every request the
// client sends, for the OpenAI-compatible and Anthropic providers alike.
// It owns no provider logic and is imported by tests only.
//
// A transcript's comment says what it shows. Each exchange N (1, 2, …)
// is two files: "N/request" — a request line "METHOD PATH", the headers
// the request must carry with exactly those values, an empty line and the
// expected JSON body (compared as values: key order and spacing do not
// matter; no body checks nothing) — and "N/response" — a status line
// "HTTP/1.1 CODE TEXT", headers, an empty line and the body bytes, which
// are written event by event (flushed after every blank line) as a live
// server-sent stream would be. Two pseudo-headers script the connection
// and are not sent: "X-Transcript-Drop: true" aborts it after the body (a
// dropped stream), "X-Transcript-Hang: true" keeps it open after the body
// until the client goes away.
package transcript
