package openai

import (
	"cmp"
	"context"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/drivers"
)

// preflight checks that an agent's server takes connections and that its
// key variable is set where one is needed: when a variable is named (by
// the agent or drivers.openai.api_key_env), or the server is
// DefaultBaseURL, which takes no request without a key. A local server
// given no variable is asked with no key, as Turn does.
func preflight(ctx context.Context, cfg drivers.Config, a *flows.Agent) (string, error) {
	base := cmp.Or(a.BaseURL, cfg.String("base_url"), DefaultBaseURL)
	if err := drivers.Reachable(ctx, base); err != nil {
		fix := "start the server, or correct the agent's base_url"
		if a.BaseURL == "" {
			fix = "start the server, or correct drivers.openai.base_url (FLOW_DRIVERS_OPENAI_BASE_URL)"
		}
		return "", &drivers.Unready{Problem: err.Error(), Fix: fix}
	}
	keyEnv, from := a.APIKeyEnv, "api_key_env of agent "+a.Name
	if keyEnv == "" {
		keyEnv, from = cfg.String("api_key_env"), "drivers.openai.api_key_env"
	}
	if keyEnv == "" && base == DefaultBaseURL {
		keyEnv, from = DefaultKeyEnv, "the default for "+DefaultBaseURL
	}
	if err := drivers.KeySet(keyEnv, from); err != nil {
		return "", err
	}
	return "server " + base + " takes connections", nil
}
