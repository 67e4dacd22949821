package agentcli

import (
	"github.com/flowrun/flow/steps/drivers"
)

// DefaultMaxRetries is how many times a CLI may retry a failed request on
// its own when the configuration leaves drivers.<name>.max_retries unset.
// flow's `retry:` is the retry policy; one retry of the CLI's own rides
// out a dropped connection, and a failing server still fails the turn
// within seconds instead of the CLI's own default (Claude Code's is ten
// retries, minutes against a failing server).
const DefaultMaxRetries = 1

// MaxRetries reads drivers.<name>.max_retries for a CLI driver's spec:
// DefaultMaxRetries when it is unset, an *drivers.ConfigError when it is not
// a whole number of zero or more.
func MaxRetries(cfg drivers.Config) (int, error) {
	n, err := cfg.Int("max_retries", DefaultMaxRetries)
	if err != nil {
		return 0, err
	}
	if n < 0 {
		return 0, &drivers.ConfigError{Key: "max_retries", Value: cfg.String("max_retries"), Want: "a whole number of 0 or more"}
	}
	return n, nil
}
