// Package vectors loads the conformance vectors of the reference TypeScript
// implementation for tests.
//
// The vectors live in the module, in testdata/vectors at the module root:
// an unchanged copy of the shared vectors (testdata/vectors/PROVENANCE.md
// says where they come from and how scripts/sync-vectors refreshes them).
// [Dir] resolves the directory in this order:
//
//  1. $AGENTRT_VECTORS, when it is set (to test against another copy);
//  2. otherwise the module's own testdata/vectors, found from this
//     package's source file rather than the working directory, so every
//     package's tests find it whatever directory go test runs them in.
//
// Whenever a shared/vectors directory exists beside the module root or
// beside one of its ancestors (../shared/vectors on the developers'
// machines and CI), this package's tests check that the module's copy holds
// the same files with the same bytes; without one they log that and pass.
//
// Vector files are read with canonjson.Decode, never encoding/json: their
// inputs hold lone surrogate escapes that encoding/json would silently turn
// into U+FFFD.
package vectors
