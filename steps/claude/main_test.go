package claude

import (
	"os"
	"testing"

	"github.com/flowrun/flow/internal/delegatetest"
)

// TestMain removes the flow command the delegate tests build.
func TestMain(m *testing.M) {
	code := m.Run()
	delegatetest.RemoveFlowBinary()
	os.Exit(code)
}
