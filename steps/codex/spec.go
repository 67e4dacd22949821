package codex

import (
	"cmp"
	"context"
	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/agentcli"
	"github.com/flowrun/flow/steps/drivers"
)

// Spec describes the codex driver to a drivers.Registry: the name `codex`,
// the keys it reads under drivers.codex. in the configuration, and a
// constructor that maps them onto Options (max_retries defaults to
// agentcli.DefaultMaxRetries). It returns a new value each time, so no
// caller can change another's.
func Spec() drivers.Spec {
	return drivers.Spec{
		Name: "codex",
		Keys: []string{"binary", "base_url", "api_key_env", "max_retries", "codex_home"},
		Preflight: func(ctx context.Context, cfg drivers.Config, a *flows.Agent) (string, error) {
			// An agent's base_url and api_key_env win over the configuration's, as in Turn.
			keyEnv, from := a.APIKeyEnv, "api_key_env of agent "+a.Name
			if keyEnv == "" {
				keyEnv, from = cfg.String("api_key_env"), "drivers.codex.api_key_env"
			}
			return drivers.CLI{Driver: "codex", Binary: cmp.Or(cfg.String("binary"), "codex"), Install: "npm install -g @openai/codex",
				BaseURL: cmp.Or(a.BaseURL, cfg.String("base_url")), KeyEnv: keyEnv, KeyFrom: from}.Check(ctx)
		},
		New: func(cfg drivers.Config) (engine.Driver, error) {
			retries, err := agentcli.MaxRetries(cfg)
			if err != nil {
				return nil, err
			}
			return New(Options{Binary: cfg.String("binary"), BaseURL: cfg.String("base_url"),
				APIKeyEnv: cfg.String("api_key_env"), MaxRetries: retries, CodexHome: cfg.String("codex_home")}), nil
		},
	}
}
