// Package workspace is agentrt's shared workspace: one versioned document
// store per tenant that every executor of that tenant shares, the memory
// and file tools agents call, the memory policy that decides authority,
// and the deterministic pinned-memory block (seed 003, "Shared workspace
// memory and files"; spec/runtime.md §3.11).
//
// Documents live at validated paths under four roots and nothing else:
//
//	/memories/workspace/<id>             memories every member shares
//	/memories/members/<memberId>/<id>    one member's own memories
//	/knowledge/**                         reference material
//	/files/**                             working files
//
// Every write is a compare-and-set: [Store.Put] and [Store.Delete] take an
// [Expect] precondition ([ExpectAbsent] or [ExpectRevision]) and there is
// no unconditional write. A mismatch is a [*ConflictError]. Revisions of a
// path strictly increase and are never reused, also across a delete. A
// delete erases the content and keeps a [Tombstone] (path, revision, when,
// by whom) that reads, lists and searches never show but the audit
// listing [Store.Tombstones] does.
//
// Identity comes from the host: it installs the trusted active turn on the
// context with [WithActiveTurn], and the tools read it with
// [ActiveTurnFrom]. Tool arguments never name a tenant or a member: an
// argument that tries (memberId, tenant, …) is ignored and the call acts
// as the active turn; any other unknown argument is refused.
//
// This package holds the contract and the rules (one owner per rule:
// [ValidatePath], [Match], [RenderPinnedMemory]); it imports no operating
// system or network package. The adapters live beside it:
// workspace/memory (the reference), workspace/sqlite (the embedded
// default, able to share the run store's file) and workspace/postgres.
// workspace/storetest holds the contract cases every adapter runs.
package workspace
