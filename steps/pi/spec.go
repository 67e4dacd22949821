package pi

import (
	"cmp"
	"context"
	"github.com/flowrun/flow/flows"
	"maps"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/drivers"
)

// Spec describes the pi driver to a drivers.Registry: the name `pi`, the
// keys it reads under drivers.pi. in the configuration, and a constructor
// that maps them onto Options (max_retries defaults to
// agentcli.DefaultMaxRetries). It returns a new value each time, so no
// caller can change another's.
func Spec() drivers.Spec {
	return drivers.Spec{
		Name:  "pi",
		Keys:  []string{"binary", "base_url", "api", "api_key_env", "max_retries", "agent_dir"},
		Tools: maps.Clone(toolNames),
		Preflight: func(ctx context.Context, cfg drivers.Config, _ *flows.Agent) (string, error) {
			return drivers.CLI{Driver: "pi", Binary: cmp.Or(cfg.String("binary"), "pi"), Install: "npm install -g @mariozechner/pi-coding-agent",
				BaseURL: cfg.String("base_url"), KeyEnv: cfg.String("api_key_env"), KeyFrom: "drivers.pi.api_key_env"}.Check(ctx)
		},
		New: func(cfg drivers.Config) (engine.Driver, error) {
			retries, err := agentcli.MaxRetries(cfg)
			if err != nil {
				return nil, err
			}
			return New(Options{Binary: cfg.String("binary"), BaseURL: cfg.String("base_url"), API: cfg.String("api"),
				APIKeyEnv: cfg.String("api_key_env"), MaxRetries: retries, AgentDir: cfg.String("agent_dir")}), nil
		},
	}
}
