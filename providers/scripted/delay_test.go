package scripted

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/agentrt/agentrt/schema"
)

// TestDelayMSFitsDuration: a delayMs is accepted only if it converts to a
// time.Duration without wrapping around, in turn steps and in process
// output alike.
func TestDelayMSFitsDuration(t *testing.T) {
	tests := []struct {
		delay string
		ok    bool
	}{
		{"0", true},
		{"80", true},
		{fmt.Sprint(MaxDelayMS), true},
		{fmt.Sprint(MaxDelayMS + 1), false},
		{"9007199254740991", false}, // 2^53-1: a safe integer, but ×1e6 overflows int64
		{"1e19", false},
		{"1e300", false},
		{"-1", false},
		{"1.5", false},
	}
	for _, tc := range tests {
		for _, doc := range []struct{ text, pointer string }{
			{`{"turns":[{"steps":[{"delayMs":%s}]}]}`, "/turns/0/steps/0/delayMs"},
			{`{"turns":[],"processes":[{"executable":"/bin/x","output":[{"delayMs":%s}]}]}`, "/processes/0/output/0/delayMs"},
		} {
			s, err := ParseScript(fmt.Appendf(nil, doc.text, tc.delay))
			if tc.ok {
				if err != nil {
					t.Errorf("%s at %s: %v", tc.delay, doc.pointer, err)
					continue
				}
				d := s.Turns
				var ms int64
				if len(d) > 0 {
					ms = *d[0].Steps[0].DelayMS
				} else {
					ms = *s.Processes[0].Output[0].DelayMS
				}
				if dur := time.Duration(ms) * time.Millisecond; dur < 0 || dur/time.Millisecond != time.Duration(ms) {
					t.Errorf("%s at %s: accepted but converts to %v", tc.delay, doc.pointer, dur)
				}
				continue
			}
			var se *schema.Error
			if !errors.As(err, &se) || len(se.Issues) == 0 {
				t.Errorf("%s at %s: err = %v, want issues at that pointer", tc.delay, doc.pointer, err)
				continue
			}
			for _, is := range se.Issues {
				if is.Path != doc.pointer {
					t.Errorf("%s at %s: issue at %s: %s", tc.delay, doc.pointer, is.Path, is.Message)
				}
			}
		}
	}
}
