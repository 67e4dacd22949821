package rundir

import (
	"encoding/json"
	"github.com/flowrun/flow/engine/record"
	"strings"
	"testing"
)

// Tokens counts what the provider billed, cache included; a sum with a
// partial part is partial, and partial is left out of the JSON otherwise.
func TestUsageTokensAndPartial(t *testing.T) {
	t.Parallel()
	n := func(v int64) *int64 { return &v }
	var sum record.Usage
	sum.Add(record.Usage{Input: n(100), Output: n(10), CacheRead: n(400), CacheWrite: n(20)})
	if sum.Tokens() != 530 || sum.Partial {
		t.Errorf("sum = %+v (%d tokens), want 530, whole", sum, sum.Tokens())
	}
	if b, _ := json.Marshal(sum); strings.Contains(string(b), "partial") {
		t.Errorf("a whole usage says partial: %s", b)
	}
	sum.Add(record.Usage{CacheRead: n(5), Partial: true})
	sum.Add(record.Usage{Input: n(1)})
	if sum.Tokens() != 536 || !sum.Partial || TokensText(sum) != "536 (partial)" {
		t.Errorf("sum = %+v (%q), want 536, partial", sum, TokensText(sum))
	}
	if b, _ := json.Marshal(sum); !strings.Contains(string(b), `"partial":true`) {
		t.Errorf("a partial usage does not say so: %s", b)
	}
	if TokensText(record.Usage{}) != "—" || TokensText(record.Usage{CacheRead: n(3)}) != "3" {
		t.Errorf("TokensText = %q, %q", TokensText(record.Usage{}), TokensText(record.Usage{CacheRead: n(3)}))
	}
}
