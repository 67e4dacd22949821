package openai

import "github.com/flowrun/flow/engine"

// Spec describes the openai driver to an engine.Registry: the name
// `openai`, the keys it reads under drivers.openai. in the configuration,
// and a constructor that maps them onto Options. It returns a new value each
// time, so no caller can change another's.
func Spec() engine.DriverSpec {
	return engine.DriverSpec{
		Name: "openai",
		Keys: []string{"base_url", "api_key_env"},
		New: func(cfg engine.DriverConfig) (engine.Driver, error) {
			return New(Options{BaseURL: cfg.String("base_url"), APIKeyEnv: cfg.String("api_key_env")}), nil
		},
	}
}
