package candidate

import "github.com/agentrt/agentrt/canonjson"

// MarshalValue implements canonjson.ValueMarshaler.
func (r Revision) MarshalValue() (canonjson.Value, error) {
	if r.Number != nil {
		return canonjson.NumberValue(float64(*r.Number)), nil
	}
	if r.Text != nil {
		return canonjson.StringValue(*r.Text), nil
	}
	return canonjson.Value{}, nil
}

// UnmarshalValue implements canonjson.ValueUnmarshaler.
func (r *Revision) UnmarshalValue(v canonjson.Value) error {
	*r = Revision{}
	if v.Kind() == canonjson.String {
		s := v.Str()
		r.Text = &s
		return nil
	}
	n := new(int64)
	r.Number = n
	return canonjson.FromValue(v, n)
}
