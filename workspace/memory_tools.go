package workspace

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/contract"
	"github.com/agentrt/agentrt/schema"
)

// Memory scopes as the memory tools name them.
const (
	ScopeMember    = "member"
	ScopeWorkspace = "workspace"
	scopeAll       = "all"
)

// MemoryPath returns the store path of memory key in scope (ScopeMember
// or ScopeWorkspace) for turn: /memories/members/<turn.Member>/<key> or
// /memories/workspace/<key>. The member always comes from the turn.
func MemoryPath(turn ActiveTurn, scope, key string) (string, error) {
	if err := ValidateSegment(key); err != nil {
		return "", err
	}
	switch scope {
	case ScopeWorkspace:
		return RootMemories + "/workspace/" + key, nil
	case ScopeMember:
		if err := ValidateSegment(turn.Member); err != nil {
			return "", err
		}
		return RootMemories + "/members/" + turn.Member + "/" + key, nil
	}
	return "", fmt.Errorf("%w: unknown memory scope %q", ErrInvalid, scope)
}

// memoryScopeOf splits a memory path into its scope and key.
func memoryScopeOf(path string) (scope, key string) {
	rest, _ := strings.CutPrefix(path, RootMemories+"/")
	if k, ok := strings.CutPrefix(rest, "workspace/"); ok {
		return ScopeWorkspace, k
	}
	rest, _ = strings.CutPrefix(rest, "members/")
	_, k, _ := strings.Cut(rest, "/")
	return ScopeMember, k
}

var rememberSpec = &toolSpec{
	name: ToolRemember,
	description: "Store a memory. scope \"member\" is your own memory, \"workspace\" is shared with every member. " +
		"Every write is a compare-and-set: pass ifRevision null to create a memory that must not exist yet, or the " +
		"revision memory.recall returned to replace it; a stale revision fails with the current one. Your identity is implicit.",
	node: schema.Object(
		schema.Req("scope", schema.Enum(ScopeMember, ScopeWorkspace)),
		schema.Req("key", nonEmptyNode),
		schema.Req("content", textNode),
		schema.Req("ifRevision", ifRevisionNode),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"scope": {"type": "string", "enum": ["member", "workspace"], "description": "member: your own memory; workspace: shared with every member"},
			"key": {"type": "string", "minLength": 1, "description": "the memory's id: one path segment (no /, no control characters, no leading or trailing space, not . or .., at most 255 UTF-8 bytes)"},
			"content": {"type": "string", "description": "the memory's text, at most 65536 UTF-8 bytes"},
			"ifRevision": {"type": ["integer", "null"], "minimum": 1, "description": "null to create (the memory must not exist); otherwise its current revision"}
		},
		"required": ["scope", "key", "content", "ifRevision"],
		"additionalProperties": false
	}`),
}

type rememberArgs struct {
	Scope      string          `json:"scope"`
	Key        string          `json:"key"`
	Content    string          `json:"content"`
	IfRevision canonjson.Value `json:"ifRevision"` // a revision or null
}

var recallSpec = &toolSpec{
	name: ToolRecall,
	description: "Read memories you may see: your own (scope \"member\") and the shared ones (scope \"workspace\"). " +
		"Give key (with a scope) for one memory, query for memories containing every word, or neither for all of them. " +
		"Each memory comes with its revision, which memory.remember and memory.forget need.",
	node: schema.Object(
		schema.Opt("scope", schema.Enum(ScopeMember, ScopeWorkspace, scopeAll)),
		schema.Opt("key", nonEmptyNode),
		schema.Opt("query", queryNode),
		schema.Opt("limit", limitNode),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		scope, _ := v.Get("scope")
		_, hasKey := v.Get("key")
		_, hasQuery := v.Get("query")
		if hasKey && hasQuery {
			c.Custom("give key or query, not both", "query")
		}
		if hasKey && (scope.Str() != ScopeMember && scope.Str() != ScopeWorkspace) {
			c.Custom("a key needs scope member or workspace", "scope")
		}
	}),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"scope": {"type": "string", "enum": ["member", "workspace", "all"], "default": "all", "description": "which memories: your own, the shared ones, or both"},
			"key": {"type": "string", "minLength": 1, "description": "one memory's id; needs scope member or workspace; not with query"},
			"query": {"type": "string", "minLength": 1, "maxLength": 1024, "pattern": "\\S", "description": "words that must all occur in a memory (case-insensitive); not with key"},
			"limit": {"type": "integer", "minimum": 1, "maximum": 200, "default": 50, "description": "at most this many memories"}
		},
		"additionalProperties": false
	}`),
}

type recallArgs struct {
	Scope string `json:"scope,omitzero"`
	Key   string `json:"key,omitzero"`
	Query string `json:"query,omitzero"`
	Limit int    `json:"limit,omitzero"`
}

var forgetSpec = &toolSpec{
	name: ToolForget,
	description: "Erase a memory. Its content is gone for good; an audit record keeps who erased which revision and when. " +
		"Pass the revision memory.recall returned; a stale revision fails with the current one.",
	node: schema.Object(
		schema.Req("scope", schema.Enum(ScopeMember, ScopeWorkspace)),
		schema.Req("key", nonEmptyNode),
		schema.Req("ifRevision", revisionNode),
	),
	jsonSchema: mustSchema(`{
		"type": "object",
		"properties": {
			"scope": {"type": "string", "enum": ["member", "workspace"], "description": "member: your own memory; workspace: a shared one"},
			"key": {"type": "string", "minLength": 1, "description": "the memory's id"},
			"ifRevision": {"type": "integer", "minimum": 1, "description": "the memory's current revision"}
		},
		"required": ["scope", "key", "ifRevision"],
		"additionalProperties": false
	}`),
}

type forgetArgs struct {
	Scope      string `json:"scope"`
	Key        string `json:"key"`
	IfRevision int64  `json:"ifRevision"`
}

type memoryWritten struct {
	Scope    string `json:"scope"`
	Key      string `json:"key"`
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
}

type memoryItem struct {
	Scope    string `json:"scope"`
	Key      string `json:"key"`
	Path     string `json:"path"`
	Revision int64  `json:"revision"`
	Encoding string `json:"encoding"`
	Content  string `json:"content"`
}

type recallResult struct {
	Memories  []memoryItem `json:"memories"`
	Truncated bool         `json:"truncated"`
}

type memoryForgotten struct {
	Scope     string `json:"scope"`
	Key       string `json:"key"`
	Path      string `json:"path"`
	Revision  int64  `json:"revision"`
	DeletedAt string `json:"deletedAt"`
}

// MemoryTools returns memory.remember, memory.recall and memory.forget
// over s, as plain tools for the tool loop or an MCP server. Each call
// takes the tenant and the acting member from the trusted active turn on
// its context (WithActiveTurn) and refuses to run without one; arguments
// never carry identity, and unknown argument members are refused. pol
// decides authority and admits content; nil means DefaultMemoryPolicy(nil).
//
// Errors: bad arguments are *schema.Error (or match ErrInvalid for a bad
// key); policy refusals and admit vetoes are *contract.ToolRefusal; a
// stale ifRevision is a *ConflictError carrying the current revision.
func MemoryTools(s Store, pol MemoryPolicy) []contract.Tool {
	if pol == nil {
		pol = DefaultMemoryPolicy(nil)
	}
	m := memoryTools{s: s, pol: pol}
	return []contract.Tool{
		rememberSpec.tool(m.remember),
		recallSpec.tool(m.recall),
		forgetSpec.tool(m.forget),
	}
}

type memoryTools struct {
	s   Store
	pol MemoryPolicy
}

func (m memoryTools) remember(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[rememberArgs](rememberSpec, raw)
	if err != nil {
		return nil, err
	}
	path, err := MemoryPath(turn, a.Scope, a.Key)
	if err != nil {
		return nil, err
	}
	if err := m.pol.Authorize(turn, Write, path); err != nil {
		return nil, refuse(ToolRemember, err)
	}
	content := []byte(a.Content)
	if len(content) > MaxMemoryBytes {
		return nil, fmt.Errorf("%w: a memory holds at most %d bytes, got %d", ErrInvalid, MaxMemoryBytes, len(content))
	}
	if err := m.pol.Admit(ctx, turn, path, content); err != nil {
		return nil, refuse(ToolRemember, err)
	}
	meta, err := m.s.Put(ctx, turn.Tenant, path, content, expectFrom(a.IfRevision), turn.Member)
	if err != nil {
		return nil, err
	}
	return memoryWritten{Scope: a.Scope, Key: a.Key, Path: path, Revision: meta.Revision}, nil
}

func (m memoryTools) recall(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[recallArgs](recallSpec, raw)
	if err != nil {
		return nil, err
	}
	limit := a.Limit
	if limit == 0 {
		limit = DefaultResultLimit
	}
	out := recallResult{Memories: []memoryItem{}}
	if a.Key != "" {
		path, err := MemoryPath(turn, a.Scope, a.Key)
		if err != nil {
			return nil, err
		}
		if err := m.pol.Authorize(turn, Read, path); err != nil {
			return nil, refuse(ToolRecall, err)
		}
		doc, err := m.s.Get(ctx, turn.Tenant, path)
		switch {
		case errors.Is(err, ErrNotFound):
			return out, nil
		case err != nil:
			return nil, err
		}
		item, err := memoryItemOf(doc)
		if err != nil {
			return nil, err
		}
		out.Memories = append(out.Memories, item)
		return out, nil
	}
	docs, truncated, err := readableMemories(ctx, m.s, m.pol, turn, a.Scope, a.Query, limit)
	if err != nil {
		return nil, err
	}
	for _, d := range docs {
		item, err := memoryItemOf(d)
		if err != nil {
			return nil, err
		}
		out.Memories = append(out.Memories, item)
	}
	out.Truncated = truncated
	return out, nil
}

func memoryItemOf(d Document) (memoryItem, error) {
	enc, text, err := encodeContent(d.Body, "")
	if err != nil {
		return memoryItem{}, err
	}
	scope, key := memoryScopeOf(d.Path)
	return memoryItem{Scope: scope, Key: key, Path: d.Path, Revision: d.Revision, Encoding: enc, Content: text}, nil
}

// readableMemories returns the live memories of scope ("" or "all" for
// both) that pol lets turn read, matching query when it is not empty,
// sorted by path, at most limit (0: all) and whether more were left out.
func readableMemories(ctx context.Context, s Store, pol MemoryPolicy, turn ActiveTurn, scope, query string, limit int) ([]Document, bool, error) {
	var prefixes []string
	if scope == ScopeMember || scope == "" || scope == scopeAll {
		prefixes = append(prefixes, RootMemories+"/members/"+turn.Member)
	}
	if scope == ScopeWorkspace || scope == "" || scope == scopeAll {
		prefixes = append(prefixes, RootMemories+"/workspace")
	}
	var metas []Meta
	for _, p := range prefixes {
		var got []Meta
		var err error
		if query != "" {
			got, err = s.Search(ctx, turn.Tenant, Query{Prefix: p, Text: query})
		} else {
			got, err = s.List(ctx, turn.Tenant, p)
		}
		if err != nil {
			return nil, false, err
		}
		metas = append(metas, got...)
	}
	sort.Slice(metas, func(i, j int) bool { return metas[i].Path < metas[j].Path })
	var docs []Document
	for _, meta := range metas {
		if pol.Authorize(turn, Read, meta.Path) != nil {
			continue
		}
		if limit > 0 && len(docs) == limit {
			return docs, true, nil
		}
		d, err := s.Get(ctx, turn.Tenant, meta.Path)
		if errors.Is(err, ErrNotFound) {
			continue // erased since it was listed
		}
		if err != nil {
			return nil, false, err
		}
		if query != "" && !Match(Query{Text: query}, d.Path, d.Body) {
			continue // rewritten since it was listed
		}
		docs = append(docs, d)
	}
	return docs, false, nil
}

func (m memoryTools) forget(ctx context.Context, turn ActiveTurn, raw canonjson.Value) (any, error) {
	a, err := parseArgs[forgetArgs](forgetSpec, raw)
	if err != nil {
		return nil, err
	}
	path, err := MemoryPath(turn, a.Scope, a.Key)
	if err != nil {
		return nil, err
	}
	if err := m.pol.Authorize(turn, Write, path); err != nil {
		return nil, refuse(ToolForget, err)
	}
	ts, err := m.s.Delete(ctx, turn.Tenant, path, ExpectRevision(a.IfRevision), turn.Member)
	if err != nil {
		return nil, err
	}
	return memoryForgotten{Scope: a.Scope, Key: a.Key, Path: path, Revision: ts.Revision, DeletedAt: timeText(ts.DeletedAt)}, nil
}
