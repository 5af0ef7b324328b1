// Package mcpserver serves agentrt tools over the Model Context Protocol,
// with the official Go SDK (github.com/modelcontextprotocol/go-sdk): the
// same plain [contract.Tool] values the tool loop mounts in-process,
// listed and called by an external harness over stdio or streamable HTTP
// (seed 003; spec/runtime.md §9; checklist WST-09).
//
// [New] mounts any tools. A call runs exactly as the tool loop runs it:
// the arguments are checked against the tool's InputSchema, then the
// tool runs; whatever it does — succeed, refuse, fail, panic — the
// outcome is a tool RESULT, never a protocol error. A success carries the
// output as JSON text and as structuredContent; a failure has isError set,
// the message as text and {error: code, reason: message} as
// structuredContent, with the tool loop's codes (kernel.CodeRefused and
// the others). Only an unknown tool (the SDK answers -32602) or a
// malformed request is a protocol error.
//
// Identity never travels in arguments. The host binds each call to a
// trusted context with [Options.Bind]; [NewWorkspace] binds the workspace
// memory and file tools to one trusted [workspace.ActiveTurn], so an
// argument naming a tenant or member is ignored (WST-10).
//
// [Stdio] is the stdio transport (one JSON-RPC message per line) that
// answers a malformed line with -32700 or -32600 and reads on, where the
// SDK's own would end the session. [HTTPHandler] serves a server over
// streamable HTTP, behind a bearer token when one is given. Nothing here logs arguments or results: they
// may hold secrets or private memories.
package mcpserver
