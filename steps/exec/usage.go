package exec

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/flowrun/flow/engine"
)

// usagePrefix starts the stderr line a program reports its usage on.
const usagePrefix = "FLOW_USAGE "

// reported is the usage a program may report; absent fields stay nil.
type reported struct {
	Input      *int64   `json:"input"`
	Output     *int64   `json:"output"`
	CacheRead  *int64   `json:"cache_read"`
	CacheWrite *int64   `json:"cache_write"`
	Cost       *float64 `json:"cost"`
	Turns      *int64   `json:"turns"`
}

// usage reads a FLOW_USAGE report from the last non-blank line of stderr.
// Turns is 1 unless the program says otherwise; a malformed report is
// ignored with a diagnostic.
func usage(stderr string) (engine.Usage, []string) {
	one := int64(1)
	u := engine.Usage{Turns: &one}
	line := lastNonBlank(stderr)
	body, found := strings.CutPrefix(line, usagePrefix)
	if !found {
		return u, nil
	}
	var r reported
	if err := json.Unmarshal([]byte(body), &r); err != nil {
		return u, []string{fmt.Sprintf("ignoring the malformed usage report %q: %v", line, err)}
	}
	u.Input, u.Output, u.CacheRead, u.CacheWrite, u.Cost = r.Input, r.Output, r.CacheRead, r.CacheWrite, r.Cost
	if r.Turns != nil {
		u.Turns = r.Turns
	}
	return u, nil
}
