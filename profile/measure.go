package profile

import (
	"strconv"

	"github.com/agentrt/agentrt/canonjson"
)

// Measurements is the reference's AgentProfileMeasurements: what a profile
// declares, measured without loading, resolving or tokenizing anything. It
// holds no prompt text, resource text, server configuration, permission
// values or secret references. Cache it by ProfileDigest; measure authored
// and effective profiles separately.
type Measurements struct {
	Version        int           `json:"version"`
	Basis          string        `json:"basis"`
	ProfileDigest  string        `json:"profileDigest"`
	CanonicalBytes int           `json:"canonicalBytes"`
	Prompt         []TextRow     `json:"prompt"`
	Tools          Declarations  `json:"tools"`
	MCP            Declarations  `json:"mcp"`
	Subagents      SubagentCount `json:"subagents"`
	Resources      []ResourceRow `json:"resources"`
	Coverage       Coverage      `json:"coverage"`
}

// TextRow measures one prompt text at a JSON pointer.
type TextRow struct {
	Path  string `json:"path"`
	Bytes int    `json:"bytes"`
	Lines int    `json:"lines"`
}

// Declarations counts declared, enabled and disabled entries.
type Declarations struct {
	Declared int `json:"declared"`
	Enabled  int `json:"enabled"`
	Disabled int `json:"disabled"`
}

// SubagentCount counts declared subagents.
type SubagentCount struct {
	Declared int `json:"declared"`
}

// ResourceRow measures one resource at a JSON pointer. Bytes and Lines are
// nil (JSON null) for GitHub resources, whose content is not resolved.
type ResourceRow struct {
	Path  string  `json:"path"`
	Kind  string  `json:"kind"`
	Name  *string `json:"name,omitzero"`
	Bytes *int    `json:"bytes"`
	Lines *int    `json:"lines"`
}

// Coverage states what a measurement did not assess.
type Coverage struct {
	Tokens          string `json:"tokens"`
	Materialization string `json:"materialization"`
	Usage           string `json:"usage"`
}

// MarshalValue implements canonjson.ValueMarshaler. Unknown Bytes and
// Lines are written as explicit nulls, never omitted and never 0.
func (r ResourceRow) MarshalValue() (canonjson.Value, error) {
	members := []canonjson.Member{
		{Name: "path", Value: canonjson.StringValue(r.Path)},
		{Name: "kind", Value: canonjson.StringValue(r.Kind)},
	}
	if r.Name != nil {
		members = append(members, canonjson.Member{Name: "name", Value: canonjson.StringValue(*r.Name)})
	}
	members = append(members, canonjson.Member{Name: "bytes", Value: nullableInt(r.Bytes)},
		canonjson.Member{Name: "lines", Value: nullableInt(r.Lines)})
	return canonjson.ObjectValue(members), nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *ResourceRow) UnmarshalValue(v canonjson.Value) error {
	var raw struct {
		Path  string          `json:"path"`
		Kind  string          `json:"kind"`
		Name  *string         `json:"name,omitzero"`
		Bytes canonjson.Value `json:"bytes"`
		Lines canonjson.Value `json:"lines"`
	}
	if err := canonjson.FromValue(v, &raw); err != nil {
		return err
	}
	*r = ResourceRow{Path: raw.Path, Kind: raw.Kind, Name: raw.Name}
	for _, f := range []struct {
		v   canonjson.Value
		dst **int
	}{{raw.Bytes, &r.Bytes}, {raw.Lines, &r.Lines}} {
		if f.v.Kind() == canonjson.Null {
			continue
		}
		var n int
		if err := canonjson.FromValue(f.v, &n); err != nil {
			return err
		}
		*f.dst = &n
	}
	return nil
}

func nullableInt(p *int) canonjson.Value {
	if p == nil {
		return canonjson.NullValue()
	}
	return canonjson.NumberValue(float64(*p))
}

// Measure validates p and measures its declaration (seed 000,
// measureAgentProfile): the canonical digest and byte size; UTF-8 bytes and
// logical lines of each prompt text (systemPrompt, appendSystemPrompt, then
// each instruction) and each inline resource; declared, enabled and
// disabled tools and MCP servers; and declared subagents. It loads nothing
// and estimates no tokens.
func Measure(p *Profile) (*Measurements, error) {
	v, err := p.Value()
	if err != nil {
		return nil, err
	}
	canonical, err := canonicalOf(v)
	if err != nil {
		return nil, err
	}
	m := &Measurements{
		Version:        1,
		Basis:          "profile-declaration",
		ProfileDigest:  canonjson.DigestBytes(canonical),
		CanonicalBytes: len(canonical),
		Prompt:         []TextRow{},
		Resources:      []ResourceRow{},
		Coverage:       Coverage{Tokens: "not-measured", Materialization: "not-assessed", Usage: "not-assessed"},
	}
	if pr := p.Prompt; pr != nil {
		if pr.SystemPrompt != nil {
			m.Prompt = append(m.Prompt, textRow("/prompt/systemPrompt", *pr.SystemPrompt))
		}
		if pr.AppendSystemPrompt != nil {
			m.Prompt = append(m.Prompt, textRow("/prompt/appendSystemPrompt", *pr.AppendSystemPrompt))
		}
		for i, s := range pr.Instructions {
			m.Prompt = append(m.Prompt, textRow("/prompt/instructions/"+strconv.Itoa(i), s))
		}
	}
	for _, enabled := range p.Tools {
		m.Tools.Declared++
		if enabled {
			m.Tools.Enabled++
		} else {
			m.Tools.Disabled++
		}
	}
	for _, s := range p.MCP {
		m.MCP.Declared++
		if s.IsDisabled() {
			m.MCP.Disabled++
		} else {
			m.MCP.Enabled++
		}
	}
	m.Subagents.Declared = len(p.Subagents)
	if r := p.Resources; r != nil {
		for i, f := range r.Files {
			m.Resources = append(m.Resources, resourceRow("/resources/files/"+strconv.Itoa(i)+"/resource", f.Resource))
		}
		for _, group := range []struct {
			name string
			refs []ResourceRef
		}{{"tools", r.Tools}, {"skills", r.Skills}, {"agents", r.Agents}, {"commands", r.Commands}} {
			for i, ref := range group.refs {
				m.Resources = append(m.Resources, resourceRow("/resources/"+group.name+"/"+strconv.Itoa(i), ref))
			}
		}
		if in := r.Instructions; in != nil {
			if in.Text != nil {
				bytes, lines := len(*in.Text), LogicalLines(*in.Text)
				m.Resources = append(m.Resources, ResourceRow{Path: "/resources/instructions", Kind: ResourceInline, Bytes: &bytes, Lines: &lines})
			} else if in.Ref != nil {
				m.Resources = append(m.Resources, resourceRow("/resources/instructions", *in.Ref))
			}
		}
	}
	return m, nil
}

func textRow(path, s string) TextRow {
	return TextRow{Path: path, Bytes: len(s), Lines: LogicalLines(s)}
}

func resourceRow(path string, ref ResourceRef) ResourceRow {
	row := ResourceRow{Path: path, Kind: ref.Kind, Name: ref.Name}
	if ref.Kind == ResourceInline && ref.Content != nil {
		bytes, lines := len(*ref.Content), LogicalLines(*ref.Content)
		row.Bytes, row.Lines = &bytes, &lines
	}
	return row
}

// LogicalLines counts lines the way the measurement does: "" has 0; else
// the number of line breaks (CRLF, a lone CR or a lone LF, each one break),
// plus one unless the text ends with a break.
func LogicalLines(s string) int {
	if s == "" {
		return 0
	}
	breaks := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\r':
			breaks++
			if i+1 < len(s) && s[i+1] == '\n' {
				i++
			}
		case '\n':
			breaks++
		}
	}
	if last := s[len(s)-1]; last == '\n' || last == '\r' {
		return breaks
	}
	return breaks + 1
}
