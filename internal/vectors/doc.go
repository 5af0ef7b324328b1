// Package vectors loads the conformance vectors of the reference TypeScript
// implementation from ../shared/vectors (or $AGENTRT_VECTORS) for tests.
// The vectors are never copied into this repository.
//
// Vector files are read with canonjson.Decode, never encoding/json: their
// inputs hold lone surrogate escapes that encoding/json would silently turn
// into U+FFFD.
package vectors
