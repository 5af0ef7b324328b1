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
// expression over known license and exception identifiers and names no
// LicenseRef (custom terms must be content-pinned instead).
func isStandardSPDXExpression(s string) bool {
	p := spdxParser{tokens: spdxTokens(s)}
	if p.tokens == nil || !p.expr() {
		return false
	}
	return p.pos == len(p.tokens)
}

type spdxParser struct {
	tokens []string
	pos    int
}

func spdxTokens(s string) []string {
	var out []string
	for _, f := range strings.Fields(s) {
		for f != "" {
			switch {
			case f[0] == '(' || f[0] == ')':
				out = append(out, f[:1])
				f = f[1:]
			default:
				i := strings.IndexAny(f, "()")
				if i < 0 {
					i = len(f)
				}
				out = append(out, f[:i])
				f = f[i:]
			}
		}
	}
	if len(out) == 0 {
		return nil
	}
	return out
}

func (p *spdxParser) peek() string {
	if p.pos < len(p.tokens) {
		return p.tokens[p.pos]
	}
	return ""
}

func (p *spdxParser) expr() bool {
	if !p.and() {
		return false
	}
	for p.peek() == "OR" {
		p.pos++
		if !p.and() {
			return false
		}
	}
	return true
}

func (p *spdxParser) and() bool {
	if !p.with() {
		return false
	}
	for p.peek() == "AND" {
		p.pos++
		if !p.with() {
			return false
		}
	}
	return true
}

func (p *spdxParser) with() bool {
	if p.peek() == "(" {
		p.pos++
		if !p.expr() || p.peek() != ")" {
			return false
		}
		p.pos++
		return true
	}
	id := strings.TrimSuffix(p.peek(), "+")
	if !spdxLicenses[id] {
		return false
	}
	p.pos++
	if p.peek() == "WITH" {
		p.pos++
		if !spdxExceptions[p.peek()] {
			return false
		}
		p.pos++
	}
	return true
}
