package sweep

import (
	"testing"

	"github.com/flowrun/flow/internal/secret"
)

// TestFlowWordsKnowEverySweepKey: every JSON key of MinLen bytes or more
// that sweep.json and report.json carry is a word secret refuses to take
// for a secret, as the run directory's are (rundir's
// TestFlowWordsKnowEveryKey): a secret whose value is "overspend" must
// not be matched inside a sweep's own keys.
func TestFlowWordsKnowEverySweepKey(t *testing.T) {
	t.Parallel()
	for _, v := range []any{File{}, Report{}} {
		for _, k := range secret.UnknownKeys(v) {
			t.Errorf("%T writes the key %q, which secret.FlowWord does not know", v, k)
		}
	}
}
