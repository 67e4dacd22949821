package main

import (
	"strings"
	"time"

	"github.com/spf13/viper"

	"github.com/flowrun/flow/internal/ratelimit"
)

// applyRateLimit sets the cap of every wait a provider's header asks for
// (ratelimit.max_wait, docs/drivers.md#rate-limits-and-retries) on the
// process-wide limiters; a value that is not a positive duration is exit 2.
func applyRateLimit(v *viper.Viper) error {
	v.SetDefault("ratelimit.max_wait", ratelimit.DefaultMaxWait.String())
	raw := strings.TrimSpace(v.GetString("ratelimit.max_wait"))
	d, err := time.ParseDuration(raw)
	if err != nil || d <= 0 {
		return invalid("ratelimit.max_wait is %q, not a positive duration; fix: set it to a wait such as 10m (in .flow/config.yaml or FLOW_RATELIMIT_MAX_WAIT)", raw)
	}
	ratelimit.Default.SetMaxWait(d)
	return nil
}
