// Package openaitest is a local OpenAI-compatible endpoint for tests:
// it replays recorded transcripts (txtar files of expected requests and
// exact response bytes) over a real HTTP server, checking every request
// the client sends. It owns no provider logic and is imported by tests
// only.
package openaitest
