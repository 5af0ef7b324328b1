package candidate

import (
	"regexp"
	"strings"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// trimmedText is the reference's trimmed provenance text (CAND §2.3,
// §4.3): a public string of at most max UTF-16 units, trimmed of JS
// whitespace, then non-blank. The accepted value is the trimmed string, so
// digests are computed over it exactly as the reference does (decision
// CAND §25.3: trimming follows the reference).
func trimmedText(max int, label string) schema.Node {
	base := publicSourceText(max, label)
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		before := len(c.Issues())
		out := base.Check(c, v)
		if len(c.Issues()) > before {
			return out
		}
		t := canonjson.TrimJS(v.Str())
		if t == "" {
			c.Check(schema.CodeTooSmall, label+" cannot be blank")
		}
		if t == v.Str() {
			return v
		}
		return canonjson.StringValue(t)
	})
}

// publicSourceText is a well-formed, non-credential string of at most max
// UTF-16 units.
func publicSourceText(max int, label string) schema.StringNode {
	return schema.String(schema.MaxLen(max),
		schema.Rule[string]{Code: schema.CodeCustom, Message: label + " must be well-formed Unicode", Test: canonjson.IsWellFormed},
		schema.Rule[string]{Code: schema.CodeCustom, Message: label + " cannot carry credentials", Test: func(s string) bool { return !profile.LooksLikeCredential(s) }},
	)
}

// trimThen trims a string (zod's .trim()) and checks the result with n.
func trimThen(n schema.Node) schema.Node {
	return schema.NodeFunc(func(c *schema.Context, v canonjson.Value) canonjson.Value {
		if v.Kind() == canonjson.String {
			if t := canonjson.TrimJS(v.Str()); t != v.Str() {
				v = canonjson.StringValue(t)
			}
		}
		return n.Check(c, v)
	})
}

var (
	sourceKindPattern = regexp.MustCompile(`^[a-z][a-z0-9-]*$`)

	sourceIdentityNode = trimmedText(256, "source identity")
	sourceRevisionNode = schema.Union(trimmedText(256, "source revision"), safeCount)

	statementsNode = schema.Refined(schema.Array(schema.Refined(publicSourceText(16384, "source statement"),
		func(c *schema.Context, v canonjson.Value) {
			if canonjson.TrimJS(v.Str()) == "" {
				c.Custom("statement cannot be blank")
			}
		})).MinItems(1).MaxItems(128),
		func(c *schema.Context, v canonjson.Value) {
			seen := map[string]bool{}
			for _, s := range itemStrings(v) {
				if seen[s] {
					c.Custom("statements must be unique")
					return
				}
				seen[s] = true
			}
		})

	licenseNode = schema.Discriminated("kind", map[string]schema.Node{
		"spdx": schema.Object(
			schema.Req("kind", schema.LiteralString("spdx")),
			schema.Req("expression", trimThen(schema.String(schema.MinLen(1), schema.MaxLen(1024), schema.Rule[string]{
				Code:    schema.CodeCustom,
				Message: "license expression must use standard SPDX identifiers; content-pin custom terms with kind=custom",
				Test:    isStandardSPDXExpression,
			}))),
		),
		"custom": schema.Object(
			schema.Req("kind", schema.LiteralString("custom")),
			schema.Req("name", sourceIdentityNode),
			schema.Req("reference", trimmedText(2048, "license reference")),
			schema.Req("termsDigest", digestNode),
		),
	})

	transformationNode = schema.Object(
		schema.Req("kind", schema.Enum("normalization", "transformation")),
		schema.Req("identity", sourceIdentityNode),
		schema.Req("revision", sourceRevisionNode),
		schema.Req("procedureDigest", digestNode),
		schema.Req("inputDigest", digestNode),
		schema.Req("outputDigest", digestNode),
	)

	// SourceSchema is AgentImprovementSource, the provenance of an
	// imported resource (CAND §4.3): its kind and identities are trimmed,
	// its licence is standard SPDX or content-pinned custom terms, and
	// its transformation chain joins and ends at sourceDigest.
	SourceSchema = schema.Object(
		schema.Req("kind", trimThen(schema.String(schema.MinLen(1), schema.MaxLen(100), schema.Matches("must match ^[a-z][a-z0-9-]*$", sourceKindPattern.MatchString)))),
		schema.Req("sourceIdentity", sourceIdentityNode),
		schema.Req("sourceDigest", digestNode),
		schema.Req("sourceRevision", sourceRevisionNode),
		schema.Opt("license", licenseNode),
		schema.Opt("attribution", statementsNode),
		schema.Opt("notices", statementsNode),
		schema.Opt("transformations", schema.Array(transformationNode).MinItems(1).MaxItems(128)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		steps, ok := v.Get("transformations")
		if !ok {
			return
		}
		items := steps.Items()
		for i := 1; i < len(items); i++ {
			if member(items[i], "inputDigest") != member(items[i-1], "outputDigest") {
				c.Custom("transformation input must equal the previous output", "transformations", canonjson.IndexToken(i), "inputDigest")
			}
		}
		if len(items) == 0 || member(items[len(items)-1], "outputDigest") != member(v, "sourceDigest") {
			c.Custom("source digest must equal the final transformation output", "sourceDigest")
		}
	})
)

// isStandardSPDXExpression reports whether s parses as an SPDX license
// expression (the grammar and tokens of spdx-expression-parse 5.0.0: case
// insensitive AND/OR/WITH, parentheses, "+", DocumentRef/LicenseRef) over
// known identifiers, and names no LicenseRef: custom terms must be
// content-pinned with kind "custom" instead (CAND §4.3, CND-18).
func isStandardSPDXExpression(s string) bool {
	tokens, ok := spdxScan(s)
	if !ok {
		return false
	}
	p := spdxParser{tokens: tokens}
	if !p.expression() || p.pos != len(tokens) || p.failed {
		return false
	}
	for _, t := range tokens {
		if t.kind == spdxLicenseRef {
			return false
		}
	}
	return true
}

type spdxKind int

const (
	spdxOperator spdxKind = iota
	spdxDocumentRef
	spdxLicenseRef
	spdxLicense
	spdxException
)

type spdxToken struct {
	kind spdxKind
	text string
}

var (
	spdxLicenseSet   = setOf(spdxLicenseIDs)
	spdxExceptionSet = setOf(spdxExceptionIDs)
)

func setOf(ids []string) map[string]bool {
	m := make(map[string]bool, len(ids))
	for _, id := range ids {
		m[id] = true
	}
	return m
}

func isIDByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.'
}

// spdxScan splits an expression into tokens; it fails where the
// reference's scanner throws.
func spdxScan(s string) ([]spdxToken, bool) {
	var out []spdxToken
	i := 0
	idstring := func() string {
		j := i
		for j < len(s) && isIDByte(s[j]) {
			j++
		}
		id := s[i:j]
		i = j
		return id
	}
	for i < len(s) {
		for i < len(s) && s[i] == ' ' {
			i++
		}
		if i >= len(s) {
			break
		}
		rest := s[i:]
		switch {
		case hasFoldPrefix(rest, "WITH"), hasFoldPrefix(rest, "AND"), hasFoldPrefix(rest, "OR"):
			n := 2
			if hasFoldPrefix(rest, "WITH") {
				n = 4
			} else if hasFoldPrefix(rest, "AND") {
				n = 3
			}
			out = append(out, spdxToken{spdxOperator, strings.ToUpper(rest[:n])})
			i += n
		case rest[0] == '(' || rest[0] == ')' || rest[0] == ':' || rest[0] == '+':
			if rest[0] == '+' && i > 0 && s[i-1] == ' ' {
				return nil, false // space before "+"
			}
			out = append(out, spdxToken{spdxOperator, rest[:1]})
			i++
		case strings.HasPrefix(rest, "DocumentRef-"), strings.HasPrefix(rest, "LicenseRef-"):
			kind := spdxDocumentRef
			if rest[0] == 'L' {
				kind = spdxLicenseRef
			}
			i += strings.IndexByte(rest, '-') + 1
			id := idstring()
			if id == "" {
				return nil, false
			}
			out = append(out, spdxToken{kind, id})
		default:
			id := idstring()
			switch {
			case spdxLicenseSet[id]:
				out = append(out, spdxToken{spdxLicense, id})
			case spdxExceptionSet[id]:
				out = append(out, spdxToken{spdxException, id})
			default:
				return nil, false
			}
		}
	}
	return out, true
}

func hasFoldPrefix(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// spdxParser is the reference's precedence parser: OR over AND over
// atoms (parenthesized expression, license reference, license).
type spdxParser struct {
	tokens []spdxToken
	pos    int
	failed bool
}

func (p *spdxParser) operator(op string) bool {
	if p.pos < len(p.tokens) && p.tokens[p.pos].kind == spdxOperator && p.tokens[p.pos].text == op {
		p.pos++
		return true
	}
	return false
}

func (p *spdxParser) is(kind spdxKind) bool {
	return p.pos < len(p.tokens) && p.tokens[p.pos].kind == kind
}

func (p *spdxParser) with() {
	if p.operator("WITH") {
		if !p.is(spdxException) {
			p.failed = true
			return
		}
		p.pos++
	}
}

func (p *spdxParser) atom() bool {
	if p.failed {
		return false
	}
	if p.operator("(") {
		if !p.expression() || !p.operator(")") {
			p.failed = true
			return false
		}
		return true
	}
	if p.pos >= len(p.tokens) {
		p.failed = true
		return false
	}
	begin := p.pos
	if p.is(spdxDocumentRef) {
		p.pos++
		if !p.operator(":") {
			p.failed = true
			return false
		}
		if p.pos >= len(p.tokens) {
			p.failed = true
			return false
		}
	}
	if p.is(spdxLicenseRef) {
		p.pos++
		p.with()
		return !p.failed
	}
	p.pos = begin
	if p.is(spdxLicense) {
		p.pos++
		p.operator("+")
		p.with()
		return !p.failed
	}
	return false
}

// binary parses next (op next)* right-recursively, as the reference does.
func (p *spdxParser) binary(op string, next func() bool) bool {
	if !next() {
		return false
	}
	if !p.operator(op) {
		return true
	}
	if !p.binary(op, next) {
		p.failed = true
		return false
	}
	return true
}

func (p *spdxParser) and() bool        { return p.binary("AND", p.atom) }
func (p *spdxParser) expression() bool { return p.binary("OR", p.and) }
