package anthropic

import (
	"sync"

	sdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// maxThoughts bounds how many turns' thinking blocks a Model keeps.
const maxThoughts = 256

// thought is one thinking or redacted_thinking block as the API sent it;
// it goes back unmodified, signature and all.
type thought struct {
	redacted  bool
	text      string // thinking text, or the redacted block's data
	signature string
}

// thoughts keeps the thinking blocks of the turns that called tools, keyed
// by the turn's first tool_use id. With extended thinking on, the API
// requires an assistant message that called tools to start with the
// thinking blocks that preceded the calls; the chat transcript the kernel
// keeps has no place for them, so the Model remembers its own. It keeps
// the newest maxThoughts turns; an older turn goes back without its
// thinking (the API accepts that for turns before the last).
type thoughts struct {
	mu    sync.Mutex
	byID  map[string][]thought
	order []string // insertion order, oldest first
}

func (t *thoughts) remember(id string, blocks []thought) {
	if id == "" || len(blocks) == 0 {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.byID == nil {
		t.byID = map[string][]thought{}
	}
	if _, ok := t.byID[id]; !ok {
		t.order = append(t.order, id)
	}
	t.byID[id] = blocks
	for len(t.order) > maxThoughts {
		delete(t.byID, t.order[0])
		t.order = t.order[1:]
	}
}

// replay returns the blocks remembered for the turn whose first call is
// id, as request blocks.
func (t *thoughts) replay(id string) []sdk.ContentBlockParamUnion {
	t.mu.Lock()
	blocks := t.byID[id]
	t.mu.Unlock()
	if len(blocks) == 0 {
		return nil
	}
	out := make([]sdk.ContentBlockParamUnion, len(blocks))
	for i, b := range blocks {
		if b.redacted {
			out[i] = sdk.NewRedactedThinkingBlock(b.text)
		} else {
			out[i] = sdk.NewThinkingBlock(b.signature, b.text)
		}
	}
	return out
}
