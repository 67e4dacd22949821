package claude

import (
	"cmp"
	"context"
	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/drivers"
)

// Spec describes the claude driver to a drivers.Registry: the name
// `claude`, the keys it reads under drivers.claude. in the configuration,
// and a constructor that maps them onto Options (max_retries defaults to
// agentcli.DefaultMaxRetries). It returns a new value each time, so no
// caller can change another's.
func Spec() drivers.Spec {
	return drivers.Spec{
		Name: "claude",
		Keys: []string{"binary", "base_url", "api_key_env", "max_retries"},
		Preflight: func(ctx context.Context, cfg drivers.Config, _ *flows.Agent) (string, error) {
			return drivers.CLI{Driver: "claude", Binary: cmp.Or(cfg.String("binary"), "claude"), Install: "npm install -g @anthropic-ai/claude-code",
				BaseURL: cfg.String("base_url"), KeyEnv: cfg.String("api_key_env"), KeyFrom: "drivers.claude.api_key_env"}.Check(ctx)
		},
		New: func(cfg drivers.Config) (engine.Driver, error) {
			retries, err := agentcli.MaxRetries(cfg)
			if err != nil {
				return nil, err
			}
			return New(Options{Binary: cfg.String("binary"), BaseURL: cfg.String("base_url"),
				APIKeyEnv: cfg.String("api_key_env"), MaxRetries: retries}), nil
		},
	}
}
