package wire

import (
	"encoding/base64"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Routes of the exact-process ability (capability exactProcess; spec J,
// checklist EXP-01..EXP-13), served only when the served provider offers
// it; otherwise refused with CodeUnsupported. An unknown or destroyed
// environment, and an unknown process, are CodeNotFound.
//
// Every request that may have an effect is safe to re-send after a lost
// answer: a create carries the contract's idempotency key (the provider
// replays it), a spawn carries the client's operation id (the server
// starts one process per environment and operation id and answers a
// re-send with it), a write replaces the file with the same bytes, and a
// kill or destroy of what already ended succeeds. An output stream is
// read from a byte offset, so a client resumes it after a dropped
// connection with nothing lost and nothing repeated.
const (
	// PathExactEnvironments (POST): contract.CreateExactProcessInput →
	// ExactEnvironment.
	PathExactEnvironments = "/v1/exact/environments"
	// PathExactEnvironmentList (POST):
	// contract.ExactProcessEnvironmentQuery → ExactEnvironmentList.
	PathExactEnvironmentList = "/v1/exact/environment-list"
	// RouteExactEnvironment: GET → ExactEnvironment; DELETE destroys it,
	// answered {}.
	RouteExactEnvironment = "/v1/exact/environments/{id}"
	// RouteExactFileWrite (POST): ExactFileWrite, answered {}.
	RouteExactFileWrite = "/v1/exact/environments/{id}/file-write"
	// RouteExactFileRead (POST): ExactFileRead → ExactFileData; a file
	// over maxBytes is CodeFileTooLarge, a missing one CodeFileNotFound.
	RouteExactFileRead = "/v1/exact/environments/{id}/file-read"
	// RouteExactProcesses: GET → ExactProcessList; POST ExactSpawnCall →
	// contract.ExactProcessStatus of the started process.
	RouteExactProcesses = "/v1/exact/environments/{id}/processes"
	// RouteExactProcess (GET): contract.ExactProcessStatus.
	RouteExactProcess = "/v1/exact/environments/{id}/processes/{pid}"
	// RouteExactProcessWait (POST, no body, query QueryWaitMs):
	// ExactWaitResult, whose termination is absent when the server's
	// wait bound passed first (the client asks again).
	RouteExactProcessWait = "/v1/exact/environments/{id}/processes/{pid}/wait"
	// RouteExactProcessKill (POST, no body): answered {}.
	RouteExactProcessKill = "/v1/exact/environments/{id}/processes/{pid}/kill"
	// RouteExactProcessOutput (GET, query offset and QueryWaitMs):
	// ExactOutputChunk of the stream {stream} (stdout or stderr) from
	// byte offset on.
	RouteExactProcessOutput = "/v1/exact/environments/{id}/processes/{pid}/output/{stream}"
)

// QueryWaitMs is the optional query parameter of the exact long polls
// (RouteExactProcessWait, RouteExactProcessOutput): the most the client
// wants one ask to wait, in milliseconds (0..MaxResultWaitMs). The
// server waits no longer than it nor than its own bound, so a client
// knows when an answer is overdue (a paused server) and bounds the ask
// by it plus a grace.
const QueryWaitMs = "waitMs"

// Output stream names of RouteExactProcessOutput.
const (
	StreamStdout = "stdout"
	StreamStderr = "stderr"
)

// MaxExactChunkBytes bounds one ExactOutputChunk's and one file's
// decoded bytes, so their base64 form fits MaxBodyBytes.
const MaxExactChunkBytes = (MaxBodyBytes - 4096) / 4 * 3

// ExactEnvironment is one exact-process environment as the server
// describes it.
type ExactEnvironment struct {
	ID       string                     `json:"id"`
	Provider string                     `json:"provider"`
	Metadata map[string]canonjson.Value `json:"metadata"`
}

// ExactEnvironmentList answers PathExactEnvironmentList.
type ExactEnvironmentList struct {
	Environments []ExactEnvironment `json:"environments"`
}

// ExactFileWrite writes Data (base64) to the absolute Path with the POSIX
// Mode (0..0o7777).
type ExactFileWrite struct {
	Path string `json:"path"`
	Data string `json:"data"`
	Mode int64  `json:"mode"`
}

// ExactFileRead reads the file at Path, refusing one over MaxBytes.
type ExactFileRead struct {
	Path     string `json:"path"`
	MaxBytes int64  `json:"maxBytes"`
}

// ExactFileData is a file's exact bytes (base64).
type ExactFileData struct {
	Data string `json:"data"`
}

// ExactProcessList answers GET RouteExactProcesses.
type ExactProcessList struct {
	Processes []contract.ExactProcessStatus `json:"processes"`
}

// ExactSpawnCall spawns Launch under the client's OperationID.
type ExactSpawnCall struct {
	OperationID string                      `json:"operationId"`
	Launch      contract.ExactProcessLaunch `json:"launch"`
}

// ExactWaitResult answers RouteExactProcessWait: the termination, or
// nothing when the server's wait bound passed first.
type ExactWaitResult struct {
	Termination *contract.ProcessTermination `json:"termination,omitzero"`
}

// ExactOutputChunk is the output of one stream from Offset on: Data
// (base64, at most MaxExactChunkBytes decoded) and End, true once the
// process terminated and Data holds the stream's last bytes.
type ExactOutputChunk struct {
	Offset int64  `json:"offset"`
	Data   string `json:"data"`
	End    bool   `json:"end"`
}

// Kind names of the exact-process bodies, for errors.
const (
	KindExactEnvironment     = "SidecarExactEnvironment"
	KindExactEnvironmentList = "SidecarExactEnvironmentList"
	KindExactFileWrite       = "SidecarExactFileWrite"
	KindExactFileRead        = "SidecarExactFileRead"
	KindExactFileData        = "SidecarExactFileData"
	KindExactProcessList     = "SidecarExactProcessList"
	KindExactSpawnCall       = "SidecarExactSpawnCall"
	KindExactWaitResult      = "SidecarExactWaitResult"
	KindExactOutputChunk     = "SidecarExactOutputChunk"
)

// exactBytes is a base64 string of at most MaxExactChunkBytes bytes.
var exactBytes = schema.String(schema.Matches("must be standard base64 of at most MaxExactChunkBytes bytes", func(s string) bool {
	if base64.StdEncoding.DecodedLen(len(s)) > MaxExactChunkBytes+2 {
		return false
	}
	_, err := base64.StdEncoding.DecodeString(s)
	return err == nil
}))

var (
	// ExactEnvironmentSchema is the strict ExactEnvironment shape.
	ExactEnvironmentSchema = schema.Object(
		schema.Req("id", contract.BoundedIdentifier),
		schema.Req("provider", contract.BoundedIdentifier),
		schema.Req("metadata", contract.BoundedJSONRecord))
	// ExactEnvironmentListSchema is the strict ExactEnvironmentList shape.
	ExactEnvironmentListSchema = schema.Object(
		schema.Req("environments", schema.Array(ExactEnvironmentSchema).MaxItems(contract.MaxArrayLength)))
	// ExactFileWriteSchema is the strict ExactFileWrite shape.
	ExactFileWriteSchema = schema.Object(
		schema.Req("path", contract.BoundedString),
		schema.Req("data", exactBytes),
		schema.Req("mode", schema.Number(schema.Int, schema.NonNegative, schema.Max(0o7777))))
	// ExactFileReadSchema is the strict ExactFileRead shape.
	ExactFileReadSchema = schema.Object(
		schema.Req("path", contract.BoundedString),
		schema.Req("maxBytes", schema.Number(schema.Int, schema.NonNegative, schema.Max(MaxExactChunkBytes))))
	// ExactFileDataSchema is the strict ExactFileData shape.
	ExactFileDataSchema = schema.Object(schema.Req("data", exactBytes))
	// ExactProcessListSchema is the strict ExactProcessList shape.
	ExactProcessListSchema = schema.Object(
		schema.Req("processes", schema.Array(contract.ExactProcessStatusSchema).MaxItems(contract.MaxArrayLength)))
	// ExactSpawnCallSchema is the strict ExactSpawnCall shape.
	ExactSpawnCallSchema = schema.Object(
		schema.Req("operationId", contract.BoundedIdentifier),
		schema.Req("launch", contract.ExactProcessLaunchSchema))
	// ExactWaitResultSchema is the strict ExactWaitResult shape.
	ExactWaitResultSchema = schema.Object(schema.Opt("termination", contract.ProcessTerminationSchema))
	// ExactOutputChunkSchema is the strict ExactOutputChunk shape.
	ExactOutputChunkSchema = schema.Object(
		schema.Req("offset", schema.Number(schema.Int, schema.NonNegative)),
		schema.Req("data", exactBytes),
		schema.Req("end", schema.Bool()))
)

// ParseCreateExactProcessInput decodes an exact create body.
func ParseCreateExactProcessInput(data []byte) (*contract.CreateExactProcessInput, error) {
	return parse[contract.CreateExactProcessInput](contract.KindCreateExactProcessInput, contract.CreateExactProcessInputSchema, data)
}

// ParseExactProcessEnvironmentQuery decodes an exact list body.
func ParseExactProcessEnvironmentQuery(data []byte) (*contract.ExactProcessEnvironmentQuery, error) {
	return parse[contract.ExactProcessEnvironmentQuery](contract.KindExactProcessEnvironmentQuery, contract.ExactProcessEnvironmentQuerySchema, data)
}

// ParseExactEnvironment decodes an exact environment answer.
func ParseExactEnvironment(data []byte) (*ExactEnvironment, error) {
	return parse[ExactEnvironment](KindExactEnvironment, ExactEnvironmentSchema, data)
}

// ParseExactEnvironmentList decodes an exact list answer.
func ParseExactEnvironmentList(data []byte) (*ExactEnvironmentList, error) {
	return parse[ExactEnvironmentList](KindExactEnvironmentList, ExactEnvironmentListSchema, data)
}

// ParseExactFileWrite decodes a file write body.
func ParseExactFileWrite(data []byte) (*ExactFileWrite, error) {
	return parse[ExactFileWrite](KindExactFileWrite, ExactFileWriteSchema, data)
}

// ParseExactFileRead decodes a file read body.
func ParseExactFileRead(data []byte) (*ExactFileRead, error) {
	return parse[ExactFileRead](KindExactFileRead, ExactFileReadSchema, data)
}

// ParseExactFileData decodes a file read answer.
func ParseExactFileData(data []byte) (*ExactFileData, error) {
	return parse[ExactFileData](KindExactFileData, ExactFileDataSchema, data)
}

// ParseExactProcessList decodes a process list answer.
func ParseExactProcessList(data []byte) (*ExactProcessList, error) {
	return parse[ExactProcessList](KindExactProcessList, ExactProcessListSchema, data)
}

// ParseExactSpawnCall decodes a spawn body.
func ParseExactSpawnCall(data []byte) (*ExactSpawnCall, error) {
	return parse[ExactSpawnCall](KindExactSpawnCall, ExactSpawnCallSchema, data)
}

// ParseExactProcessStatus decodes a process status answer.
func ParseExactProcessStatus(data []byte) (*contract.ExactProcessStatus, error) {
	return parse[contract.ExactProcessStatus](contract.KindExactProcessStatus, contract.ExactProcessStatusSchema, data)
}

// ParseExactWaitResult decodes a wait answer.
func ParseExactWaitResult(data []byte) (*ExactWaitResult, error) {
	return parse[ExactWaitResult](KindExactWaitResult, ExactWaitResultSchema, data)
}

// ParseExactOutputChunk decodes an output answer.
func ParseExactOutputChunk(data []byte) (*ExactOutputChunk, error) {
	return parse[ExactOutputChunk](KindExactOutputChunk, ExactOutputChunkSchema, data)
}
