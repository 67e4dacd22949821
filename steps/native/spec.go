package native

import (
	"cmp"
	"context"
	"slices"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/internal/sandbox"
	"github.com/flowrun/flow/steps/drivers"
	"github.com/flowrun/flow/steps/openai"
)

// Spec describes the native driver to a drivers.Registry: the name
// `native`, its keys under drivers.native., the tools its agents may list,
// and its preflight.
func Spec() drivers.Spec {
	return drivers.Spec{
		Name:      "native",
		Keys:      []string{"base_url", "api_key_env", "num_ctx"},
		Tools:     map[string]string{ToolBash: ToolBash, ToolRead: ToolRead, ToolEdit: ToolEdit},
		Preflight: preflight,
		New: func(cfg drivers.Config) (engine.Driver, error) {
			n, err := cfg.Int("num_ctx", 0)
			if err != nil {
				return nil, err
			}
			if n < 0 {
				return nil, &drivers.ConfigError{Key: "num_ctx", Value: cfg.String("num_ctx"), Want: "a whole number of 0 or more"}
			}
			return New(Options{BaseURL: cfg.String("base_url"), APIKeyEnv: cfg.String("api_key_env"), NumCtx: n}), nil
		},
	}
}

// preflight checks the agent's server takes connections, its key variable
// is set where one is needed (as the openai driver's), and, for an agent
// that runs bash confined, that a sandbox works here.
func preflight(ctx context.Context, cfg drivers.Config, a *flows.Agent) (string, error) {
	base := cmp.Or(a.BaseURL, cfg.String("base_url"), openai.DefaultBaseURL)
	if err := drivers.Reachable(ctx, base); err != nil {
		fix := "start the server, or correct the agent's base_url"
		if a.BaseURL == "" {
			fix = "start the server, or correct drivers.native.base_url (FLOW_DRIVERS_NATIVE_BASE_URL)"
		}
		return "", &drivers.Unready{Problem: err.Error(), Fix: fix}
	}
	keyEnv, from := a.APIKeyEnv, "api_key_env of agent "+a.Name
	if keyEnv == "" {
		keyEnv, from = cfg.String("api_key_env"), "drivers.native.api_key_env"
	}
	if keyEnv == "" && base == openai.DefaultBaseURL {
		keyEnv, from = openai.DefaultKeyEnv, "the default for "+openai.DefaultBaseURL
	}
	if err := drivers.KeySet(keyEnv, from); err != nil {
		return "", err
	}
	found := "server " + base + " takes connections"
	if a.Sandbox == "off" || !slices.Contains(tools(a.Tools), ToolBash) {
		return found, nil
	}
	kind, _, why := sandbox.Detect()
	if kind == sandbox.None {
		return "", &drivers.Unready{Problem: "its bash runs in a sandbox, and none works here: " + why,
			Fix: "install bubblewrap (apt-get install bubblewrap), or say sandbox: off in the agent file"}
	}
	return found + "; sandbox " + string(kind), nil
}
