// Package gitsafe runs the git operations a candidate verifier needs
// against a local repository the candidate names but does not control
// (spec candidate §20.4, §20.5 and §22 steps 8 and 9): admitting the
// repository, resolving a base commit's tree, applying a candidate's patch
// to that tree, checking that a tree is safe to materialize, and reading
// one blob of a commit.
//
// Every git process is hardened: it starts from an empty environment
// (PATH, LC_ALL=C, and git's own switches only; no inherited GIT_*
// variable), reads no system or global configuration, never prompts,
// ignores replace objects, and runs with hooks, fsmonitor and the
// untracked cache disabled and every transport protocol forbidden, always
// with -C and an explicit repository. Object ids are checked before they
// reach a command line, and paths travel after --, so nothing a candidate
// wrote can become an option.
//
// Verification never writes to the repository: a patch is applied in a
// temporary index, and the blobs and trees it creates go to a temporary
// object directory that borrows the repository's objects read-only and is
// deleted afterwards. Refs, the index and the work tree are never touched,
// and nothing is fetched.
//
// The code surface of an improvement search (runtime §3.9) uses the same
// hardened git for a repository its caller owns (OpenLocal: no origin
// rule, but only at the top of a work tree): each candidate runs in a
// linked work tree (Repo.AddWorktree) detached at a pinned commit with
// its patch applied, reset between runs and removed afterwards. Only
// git's administrative entry for the linked work tree is written to the
// repository, and Remove deletes it; the repository's own work tree,
// index and refs are never touched.
//
// Errors say which verifier verdict they are (RefusedError.Code:
// repository-mismatch, base-commit-missing, base-tree-mismatch,
// patch-does-not-apply, unsafe-tree, resource-commit, resource-path); any
// other error is operational (git missing, I/O), which the verifier
// reports apart from a rejection.
package gitsafe
