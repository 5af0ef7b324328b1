package memory_test

import (
	"testing"
	"time"

	"github.com/agentrt/agentrt/workspace"
	"github.com/agentrt/agentrt/workspace/memory"
	"github.com/agentrt/agentrt/workspace/storetest"
)

func adapter() storetest.Adapter {
	return storetest.Adapter{
		Open: func(t *testing.T, clock func() time.Time) workspace.Store {
			s := memory.New(clock)
			t.Cleanup(func() { s.Close() })
			return s
		},
		RawContains: func(t *testing.T, s workspace.Store, needle []byte) bool {
			return s.(*memory.Store).RawContains(needle)
		},
	}
}

// WST-13: the in-memory store is the reference adapter and passes the
// contract cases.
func TestContract(t *testing.T) { storetest.Run(t, adapter()) }

// Issue 5: 32 writers × 500 compare-and-set increments, zero lost updates.
func TestContention(t *testing.T) {
	storetest.CheckContention(t, memory.New(nil), 32, 500)
}
