package workspace

import (
	"context"
	"encoding/base64"
	"fmt"
	"sort"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// FileOptions adjusts FileTools. The zero value (or nil) allows reading
// and writing under /files and /knowledge with no content hook.
type FileOptions struct {
	// Admit, when set, vets content before files.write stores it; its
	// veto writes nothing.
	Admit AdmitFunc
	// ReadOnlyKnowledge refuses writes and deletes under /knowledge.
	ReadOnlyKnowledge bool
}

var filePathNode = schema.String(schema.MinLen(1), schema.WellFormed)

const pathDescription = "a path under /files/ or /knowledge/, such as /files/notes/plan.md; " +
	"segments are non-empty, not . or .., without control characters, backslashes or leading or trailing space"

var filesListSpec = &toolSpec{
	name:        ToolFilesList,
	description: "List the files at or below a prefix (default: everything under /files and /knowledge), sorted by path, with each file's revision and size.",
	node: schema.Object(
		schema.Opt("prefix", filePathNode),
		schema.Opt("limit", limitNode),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"prefix": {"type": "string", "minLength": 1, "description": "a directory such as /files or /knowledge/specs; lists that path and everything below it"},
			"limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 200, "description": "at most this many entries"}
		},
		"additionalProperties": false
	}`),
}

type filesListArgs struct {
	Prefix string `json:"prefix,omitzero"`
	Limit  int    `json:"limit,omitzero"`
}

var filesReadSpec = &toolSpec{
	name:        ToolFilesRead,
	description: "Read a file with its revision. Text comes back as UTF-8; other bytes as base64 (or ask for base64).",
	node: schema.Object(
		schema.Req("path", filePathNode),
		schema.Opt("encoding", schema.Enum(EncodingUTF8, EncodingBase64)),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"path": {"type": "string", "minLength": 1, "description": "` + pathDescription + `"},
			"encoding": {"type": "string", "enum": ["utf8", "base64"], "description": "how to return the content; default: utf8 for text, base64 otherwise"}
		},
		"required": ["path"],
		"additionalProperties": false
	}`),
}

type filesReadArgs struct {
	Path     string `json:"path"`
	Encoding string `json:"encoding,omitzero"`
}

var filesWriteSpec = &toolSpec{
	name: ToolFilesWrite,
	description: "Write a file as a compare-and-set: ifRevision null creates a file that must not exist yet; " +
		"otherwise pass the revision files.read returned. A stale revision fails with the current one.",
	node: schema.Object(
		schema.Req("path", filePathNode),
		schema.Req("content", textNode),
		schema.Opt("encoding", schema.Enum(EncodingUTF8, EncodingBase64)),
		schema.Req("ifRevision", ifRevisionNode),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"path": {"type": "string", "minLength": 1, "description": "` + pathDescription + `"},
			"content": {"type": "string", "description": "the file's content, at most 8 MiB once decoded"},
			"encoding": {"type": "string", "enum": ["utf8", "base64"], "default": "utf8", "description": "utf8: content is the text; base64: content is standard base64 of the bytes"},
			"ifRevision": {"type": ["integer", "null"], "minimum": 1, "description": "null to create (the file must not exist); otherwise its current revision"}
		},
		"required": ["path", "content", "ifRevision"],
		"additionalProperties": false
	}`),
}

type filesWriteArgs struct {
	Path       string          `json:"path"`
	Content    string          `json:"content"`
	Encoding   string          `json:"encoding,omitzero"`
	IfRevision canonjson.Value `json:"ifRevision"` // a revision or null
}

var filesDeleteSpec = &toolSpec{
	name: ToolFilesDelete,
	description: "Delete a file at its current revision. The content is erased; an audit record keeps who deleted " +
		"which revision and when. A stale revision fails with the current one.",
	node: schema.Object(
		schema.Req("path", filePathNode),
		schema.Req("ifRevision", revisionNode),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"path": {"type": "string", "minLength": 1, "description": "` + pathDescription + `"},
			"ifRevision": {"type": "integer", "minimum": 1, "description": "the file's current revision"}
		},
		"required": ["path", "ifRevision"],
		"additionalProperties": false
	}`),
}

type filesDeleteArgs struct {
	Path       string `json:"path"`
	IfRevision int64  `json:"ifRevision"`
}

var filesSearchSpec = &toolSpec{
	name:        ToolFilesSearch,
	description: "Find files whose path or content contains every word of query (case-insensitive), sorted by path.",
	node: schema.Object(
		schema.Req("query", queryNode),
		schema.Opt("prefix", filePathNode),
		schema.Opt("limit", limitNode),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"query": {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": "\\S", "description": "words that must all occur"},
			"prefix": {"type": "string", "minLength": 1, "description": "search only this directory (default: /files and /knowledge)"},
			"limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50, "description": "at most this many matches"}
		},
		"required": ["query"],
		"additionalProperties": false
	}`),
}

type filesSearchArgs struct {
	Query  string `json:"query"`
	Prefix string `json:"prefix,omitzero"`
	Limit  int    `json:"limit,omitzero"`
}

type fileEntry struct {
	Path      string `json:"path"`
	Revision  int64  `json:"revision"`
	Size      int64  `json:"size"`
	UpdatedAt string `json:"updatedAt"`
	UpdatedBy string `json:"updatedBy"`
}

type fileList struct {
	Entries   []fileEntry `json:"entries"`
	Truncated bool        `json:"truncated"`
}

type fileContent struct {
	fileEntry
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

type fileWritten struct {
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
	Size     int64  `json:"size"`
}

type fileDeleted struct {
	Path      string `json:"path"`
	Revision  int64  `json:"revision"`
	DeletedAt string `json:"deletedAt"`
}

type fileMatches struct {
	Matches   []fileEntry `json:"matches"`
	Truncated bool        `json:"truncated"`
}

// FileTools returns files.list, files.read, files.write, files.delete and
// files.search over s, as plain tools for the tool loop or an MCP server.
// They reach /files/** and /knowledge/** only (memories go through
// MemoryTools); tenant and writer come from the trusted active turn on the
// context, never from arguments. opts may be nil.
//
// Errors: bad arguments are *schema.Error (or match ErrInvalid for a bad
// path); paths outside the file roots, read-only knowledge and admit
// vetoes are *contract.ToolRefusal; a missing file matches ErrNotFound; a
// stale ifRevision is a *ConflictError carrying the current revision.
func FileTools(s Store, opts *FileOptions) []contract.Tool {
	f := fileTools{s: s}
	if opts != nil {
		f.opts = *opts
	}
	return []contract.Tool{
		filesListSpec.tool(f.list),
		filesReadSpec.tool(f.read),
		filesWriteSpec.tool(f.write),
		filesDeleteSpec.tool(f.delete),
		filesSearchSpec.tool(f.search),
	}
}

type fileTools struct {
	s    Store
	opts FileOptions
}

// filePath validates a document path the file tools may reach.
func (f fileTools) filePath(tool, path string, write bool) error {
	if err := ValidatePath(path); err != nil {
		return err
	}
	if InPrefix(RootKnowledge, path) {
		if write && f.opts.ReadOnlyKnowledge {
			return &contract.ToolRefusal{Tool: tool, Reason: "/knowledge is read-only here"}
		}
		return nil
	}
	if !InPrefix(RootFiles, path) {
		return &contract.ToolRefusal{Tool: tool, Reason: "file tools reach /files and /knowledge only; use the memory tools for memories"}
	}
	return nil
}

// filePrefixes validates a prefix argument ("" for both file roots).
func filePrefixes(tool, prefix string) ([]string, error) {
	if prefix == "" {
		return []string{RootFiles, RootKnowledge}, nil
	}
	p, err := ValidatePrefix(prefix)
	if err != nil {
		return nil, err
	}
	if p == "/" {
		return []string{RootFiles, RootKnowledge}, nil
	}
	if !InPrefix(RootFiles, p) && !InPrefix(RootKnowledge, p) {
		return nil, &contract.ToolRefusal{Tool: tool, Reason: "file tools reach /files and /knowledge only; use the memory tools for memories"}
	}
	return []string{p}, nil
}

func entryOf(m Meta) fileEntry {
	return fileEntry{Path: m.Path, Revision: m.Revision, Size: m.Size, UpdatedAt: timeText(m.UpdatedAt), UpdatedBy: m.UpdatedBy}
}

func sortedEntries(metas []Meta, limit int) ([]fileEntry, bool) {
	sort.Slice(metas, func(i, j int) bool { return metas[i].Path < metas[j].Path })
	out := []fileEntry{}
	for _, m := range metas {
		if len(out) == limit {
			return out, true
		}
		out = append(out, entryOf(m))
	}
	return out, false
}

func (f fileTools) list(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[filesListArgs](filesListSpec, raw)
	if err != nil {
		return nil, err
	}
	prefixes, err := filePrefixes(ToolFilesList, a.Prefix)
	if err != nil {
		return nil, err
	}
	var metas []Meta
	for _, p := range prefixes {
		got, err := f.s.List(ctx, turn.Tenant, p)
		if err != nil {
			return nil, err
		}
		metas = append(metas, got...)
	}
	limit := a.Limit
	if limit == 0 {
		limit = MaxResultLimit
	}
	entries, truncated := sortedEntries(metas, limit)
	return fileList{Entries: entries, Truncated: truncated}, nil
}

func (f fileTools) read(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[filesReadArgs](filesReadSpec, raw)
	if err != nil {
		return nil, err
	}
	if err := f.filePath(ToolFilesRead, a.Path, false); err != nil {
		return nil, err
	}
	doc, err := f.s.Get(ctx, turn.Tenant, a.Path)
	if err != nil {
		return nil, err
	}
	enc, text, err := encodeContent(doc.Body, a.Encoding)
	if err != nil {
		return nil, err
	}
	return fileContent{fileEntry: entryOf(doc.Meta), Encoding: enc, Content: text}, nil
}

func (f fileTools) write(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[filesWriteArgs](filesWriteSpec, raw)
	if err != nil {
		return nil, err
	}
	if err := f.filePath(ToolFilesWrite, a.Path, true); err != nil {
		return nil, err
	}
	body := []byte(a.Content)
	if a.Encoding == EncodingBase64 {
		if body, err = base64.StdEncoding.Strict().DecodeString(a.Content); err != nil {
			return nil, fmt.Errorf("%w: content is not standard base64: %w", ErrInvalid, err)
		}
	}
	if len(body) > MaxBodyBytes {
		return nil, fmt.Errorf("%w: a file holds at most %d bytes, got %d", ErrInvalid, MaxBodyBytes, len(body))
	}
	if f.opts.Admit != nil {
		if err := f.opts.Admit(ctx, turn, a.Path, body); err != nil {
			return nil, refuse(ToolFilesWrite, err)
		}
	}
	meta, err := f.s.Put(ctx, turn.Tenant, a.Path, body, expectFrom(a.IfRevision), turn.Member)
	if err != nil {
		return nil, err
	}
	return fileWritten{Path: meta.Path, Revision: meta.Revision, Size: meta.Size}, nil
}

func (f fileTools) delete(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[filesDeleteArgs](filesDeleteSpec, raw)
	if err != nil {
		return nil, err
	}
	if err := f.filePath(ToolFilesDelete, a.Path, true); err != nil {
		return nil, err
	}
	ts, err := f.s.Delete(ctx, turn.Tenant, a.Path, ExpectRevision(a.IfRevision), turn.Member)
	if err != nil {
		return nil, err
	}
	return fileDeleted{Path: ts.Path, Revision: ts.Revision, DeletedAt: timeText(ts.DeletedAt)}, nil
}

func (f fileTools) search(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[filesSearchArgs](filesSearchSpec, raw)
	if err != nil {
		return nil, err
	}
	prefixes, err := filePrefixes(ToolFilesSearch, a.Prefix)
	if err != nil {
		return nil, err
	}
	var metas []Meta
	for _, p := range prefixes {
		got, err := f.s.Search(ctx, turn.Tenant, Query{Prefix: p, Text: a.Query})
		if err != nil {
			return nil, err
		}
		metas = append(metas, got...)
	}
	limit := a.Limit
	if limit == 0 {
		limit = DefaultResultLimit
	}
	matches, truncated := sortedEntries(metas, limit)
	return fileMatches{Matches: matches, Truncated: truncated}, nil
}
