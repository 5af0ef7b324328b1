package remote_test

import (
	"os"
	"testing"

	"github.com/agentrt/agentrt/internal/servetest"
)

// TestMain removes the agentrt binary the tests built once they ran.
func TestMain(m *testing.M) { os.Exit(servetest.Run(m)) }
