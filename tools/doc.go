// Package tools turns Go functions into contract.Tool values and checks
// every tool call's arguments before a tool runs.
//
// NewTool makes a typed tool from a func(ctx, In) (Out, error): the input
// JSON Schema is inferred from In (github.com/google/jsonschema-go, the
// library the MCP Go SDK uses), each call's arguments are validated
// against it, decoded strictly into In, and the Out the function returns
// is encoded as the call's result. The caller writes a function, never a
// schema.
//
// A Validator is the one check of a call's arguments, for typed and
// hand-written tools alike: the arguments must be a JSON object and, when
// the tool has an InputSchema, valid against it. A refusal is an
// *ArgumentsError naming the JSON-pointer path of the offending value and
// why; kernel's tool loop reports it to the model as an invalid_arguments
// outcome and never runs the tool. Compile a tool's Validator once
// (NewValidator) and reuse it for every call.
//
// The package runs nothing by itself and records nothing: the tool loop
// (package kernel) drives tools, and the providers offer their schemas to
// models.
package tools
