package sweep

import (
	"strings"
	"testing"

	"github.com/flowrun/flow/engine/record"
)

// The cache hit ratio is cache_read / (input + cache_read), per
// assignment; re-runs and quotas are counted over its cells, ended or not.
func TestCacheHitRatioAndReruns(t *testing.T) {
	in, read := int64(300), int64(100)
	f := &File{Assignments: []Assignment{{Label: "m"}}, Cells: []*Cell{
		{Assignment: "m", Status: StatusSucceeded, Reruns: 2, Outcome: &Outcome{Status: record.StatusSucceeded, Success: true, Usage: record.Usage{Input: &in, CacheRead: &read}}},
		{Assignment: "m", Status: StatusQuota, Note: "quota exhausted: no credit", Outcome: &Outcome{Status: record.StatusFailed}},
	}}
	r := Build(f)
	row := r.Assignments[0]
	if row.CacheHitRatio == nil || *row.CacheHitRatio != 0.25 {
		t.Errorf("cache hit ratio %v, want 100/(300+100) = 0.25", row.CacheHitRatio)
	}
	if row.Reruns != 2 || row.Quota != 1 || row.N != 1 || r.Cells.Quota != 1 || len(r.Quota) != 1 {
		t.Errorf("row %+v, cells %+v, quota %q: want 2 re-runs, 1 quota cell not scored", row, r.Cells, r.Quota)
	}
	f.Providers = []ProviderRow{{Provider: "openai 127.0.0.1:1 m", Requests: 9, Refused: 2, Waits: 3, WaitedMS: 12500, PerMinute: 60}}
	page, err := htmlReport(Build(f))
	if err != nil || !strings.Contains(string(page), "<td>openai 127.0.0.1:1 m</td><td>9</td><td>2</td><td>3</td><td>12.5s</td>") ||
		!strings.Contains(string(page), "quota exhausted: no credit") {
		t.Errorf("report.html lacks the providers or the quota (%v):\n%s", err, page)
	}
	if cacheHitRatio(&in, nil) != nil {
		t.Error("a ratio from an unreported cache read")
	}
}
