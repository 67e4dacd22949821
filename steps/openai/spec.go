package openai

import (
	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/drivers"
)

// Spec describes the openai driver to a drivers.Registry: the name
// `openai`, the keys it reads under drivers.openai. in the configuration,
// and a constructor that maps them onto Options. It returns a new value each
// time, so no caller can change another's.
func Spec() drivers.Spec {
	return drivers.Spec{
		Name:      "openai",
		Keys:      []string{"base_url", "api_key_env"},
		Preflight: preflight,
		New: func(cfg drivers.Config) (engine.Driver, error) {
			return New(Options{BaseURL: cfg.String("base_url"), APIKeyEnv: cfg.String("api_key_env")}), nil
		},
	}
}
