package candidate

import (
	"math/big"
	"regexp"

	"github.com/agentrt/agentrt/canonjson"
	"github.com/agentrt/agentrt/profile"
	"github.com/agentrt/agentrt/schema"
)

// Certified context bounds (CAND §19).
const (
	maxInlineContextBytes      = 65536
	maxTotalInlineContextBytes = 131072
	maxFileContextBytes        = 1048576
	maxCertifiedContextBytes   = 16777216
	maxCertifiedContextLifeMs  = 900000
)

var (
	revisionPattern = regexp.MustCompile(`^(?:0|[1-9][0-9]{0,18})$`)
	maxInt64        = big.NewInt(9223372036854775807)

	contextID = schema.String(schema.NonBlank, schema.MaxLen(256))

	utf8Max = func(n int, label string) schema.Rule[string] {
		return schema.Rule[string]{Code: schema.CodeCustom, Message: label, Test: func(s string) bool { return len(s) <= n }}
	}

	contextDeliveryNode = schema.Discriminated("kind", map[string]schema.Node{
		"inline": schema.Object(
			schema.Req("kind", schema.LiteralString("inline")),
			schema.Req("content", schema.String(schema.MaxLen(maxInlineContextBytes), utf8Max(maxInlineContextBytes, "inline content exceeds 65536 UTF-8 bytes"))),
		),
		"file": schema.Object(
			schema.Req("kind", schema.LiteralString("file")),
			schema.Req("path", schema.String(schema.NonBlank, schema.MaxLen(1024), schema.Rule[string]{Code: schema.CodeCustom,
				Message: "value must be a canonical relative path", Test: func(s string) bool { return isRelPath(s) }})),
			schema.Req("content", schema.String(schema.MaxLen(maxFileContextBytes), utf8Max(maxFileContextBytes, "file content exceeds 1048576 UTF-8 bytes"))),
		),
	})

	// CertifiedContextEntrySchema is CertifiedContextEntry: one prompt,
	// skill or instructions entry whose provenance hash covers its id,
	// kind, name and delivery.
	CertifiedContextEntrySchema = schema.Object(
		schema.Req("id", contextID),
		schema.Req("kind", schema.Enum("prompt", "skill", "instructions")),
		schema.Req("name", contextID),
		schema.Req("delivery", contextDeliveryNode),
		schema.Req("provenance", schema.Object(
			schema.Req("contentHash", digestNode),
			schema.Req("version", schema.Union(schema.Literal(canonjson.NullValue()), positiveInt)),
			schema.Req("promotedAt", schema.String(schema.ISODateTime)),
		)),
	).Refine(func(c *schema.Context, v canonjson.Value) {
		kind, delivery := member(v, "kind"), at(v, "delivery")
		dk := member(delivery, "kind")
		if kind == "skill" && dk != "file" {
			c.Custom("skills must be delivered as files", "delivery", "kind")
		}
		if kind != "skill" && dk != "inline" {
			c.Custom("prompts and instructions must be delivered inline", "delivery", "kind")
		}
		if dk == "inline" && canonjson.TrimJS(member(delivery, "content")) == "" {
			c.Custom("inline context cannot be blank", "delivery", "content")
		}
		if h, err := CertifiedContextEntryHash(v); err != nil || h != member(at(v, "provenance"), "contentHash") {
			c.Custom("entry content hash does not match the delivered context", "provenance", "contentHash")
		}
	})

	// CertifiedContextSchema is CertifiedContext: tenant-bound,
	// short-lived, content-hashed context (CAND §19).
	CertifiedContextSchema = schema.Object(
		schema.Req("tenantId", contextID),
		schema.Req("target", contextID),
		schema.Req("state", schema.Enum("active", "revoked")),
		schema.Req("revision", schema.String(
			schema.Matches("must be a decimal revision", revisionPattern.MatchString),
			schema.Rule[string]{Code: schema.CodeCustom, Message: "revision exceeds signed 64-bit range", Test: func(s string) bool {
				n, ok := new(big.Int).SetString(s, 10)
				return !revisionPattern.MatchString(s) || ok && n.Cmp(maxInt64) <= 0
			}})),
		schema.Req("generatedAt", schema.String(schema.ISODateTime)),
		schema.Req("expiresAt", schema.String(schema.ISODateTime)),
		schema.Req("entries", schema.Array(CertifiedContextEntrySchema).MaxItems(128)),
		schema.Req("contentHash", digestNode),
	).Refine(checkCertifiedContext)
)

func isRelPath(s string) bool { return profile.IsSafeRelativePath(s, false) }

// CertifiedContextEntryHash returns an entry's provenance content hash:
// the content digest of {id, kind, name, delivery}.
func CertifiedContextEntryHash(entry canonjson.Value) (string, error) {
	return ContentDigest(pick(entry, "id", "kind", "name", "delivery"))
}

// CertifiedContextHash returns a context's content hash: the content
// digest of {tenantId, target, state, revision, entries}.
func CertifiedContextHash(ctx canonjson.Value) (string, error) {
	return ContentDigest(pick(ctx, "tenantId", "target", "state", "revision", "entries"))
}

// pick returns the named members of object v that are present.
func pick(v canonjson.Value, names ...string) canonjson.Value {
	var out []canonjson.Member
	for _, n := range names {
		if m, ok := v.Get(n); ok {
			out = append(out, canonjson.Member{Name: n, Value: m})
		}
	}
	return canonjson.ObjectValue(out)
}

func checkCertifiedContext(c *schema.Context, v canonjson.Value) {
	generated, _ := isoMillis(member(v, "generatedAt"))
	expires, _ := isoMillis(member(v, "expiresAt"))
	if expires <= generated {
		c.Custom("expiresAt must be after generatedAt", "expiresAt")
	} else if expires-generated > maxCertifiedContextLifeMs {
		c.Custom("certified context cannot live longer than 15 minutes", "expiresAt")
	}
	if len(canonjson.Marshal(v)) > maxCertifiedContextBytes {
		c.Check(schema.CodeTooBig, "serialized context exceeds 16777216 UTF-8 bytes")
	}
	ids, paths := map[string]bool{}, map[string]bool{}
	inline := 0
	entries := at(v, "entries").Items()
	for i, e := range entries {
		idx := canonjson.IndexToken(i)
		id := member(e, "id")
		if ids[id] {
			c.Custom("duplicate context id: "+id, "entries", idx, "id")
		}
		ids[id] = true
		d := at(e, "delivery")
		if member(d, "kind") == "file" {
			if paths[member(d, "path")] {
				c.Custom("duplicate file path: "+member(d, "path"), "entries", idx, "delivery", "path")
			}
			paths[member(d, "path")] = true
		} else {
			inline += len(member(d, "content"))
		}
		if promoted, _ := isoMillis(member(at(e, "provenance"), "promotedAt")); promoted > generated {
			c.Custom("context cannot be promoted after bundle generation", "entries", idx, "provenance", "promotedAt")
		}
	}
	if inline > maxTotalInlineContextBytes {
		c.Custom("inline context exceeds 131072 UTF-8 bytes", "entries")
	}
	if active := member(v, "state") == "active"; active == (len(entries) == 0) {
		c.Custom("active context requires entries and revoked context requires none", "entries")
	}
	if h, err := CertifiedContextHash(v); err != nil || h != member(v, "contentHash") {
		c.Custom("context content hash does not match the delivered context", "contentHash")
	}
}

// isoMillis converts a timestamp accepted by schema.ISODateTime to
// milliseconds since the epoch, as Date.parse does (fraction truncated
// to milliseconds).
func isoMillis(s string) (int64, bool) {
	if !schema.IsISODateTime(s) {
		return 0, false
	}
	d := func(a, b int) int64 {
		var n int64
		for i := a; i < b; i++ {
			n = n*10 + int64(s[i]-'0')
		}
		return n
	}
	y, mo, day := d(0, 4), d(5, 7), d(8, 10)
	h, mi := d(11, 13), d(14, 16)
	var sec, ms int64
	rest := s[16 : len(s)-1]
	if len(rest) >= 3 {
		sec = d(17, 19)
		if len(rest) > 4 {
			frac := rest[4:]
			for i := 0; i < 3; i++ {
				ms *= 10
				if i < len(frac) {
					ms += int64(frac[i] - '0')
				}
			}
		}
	}
	return daysFromCivil(y, mo, day)*86400000 + h*3600000 + mi*60000 + sec*1000 + ms, true
}

// daysFromCivil counts days from 1970-01-01 to a proleptic Gregorian
// date.
func daysFromCivil(y, m, d int64) int64 {
	if m <= 2 {
		y--
	}
	era := y / 400
	if y < 0 && y%400 != 0 {
		era--
	}
	yoe := y - era*400
	mp := (m + 9) % 12
	doy := (153*mp+2)/5 + d - 1
	doe := yoe*365 + yoe/4 - yoe/100 + doy
	return era*146097 + doe - 719468
}
