package main

import (
	"github.com/spf13/viper"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/claude"
	"github.com/flowrun/flow/steps/codex"
	"github.com/flowrun/flow/steps/drivers"
	"github.com/flowrun/flow/steps/exec"
	"github.com/flowrun/flow/steps/openai"
	"github.com/flowrun/flow/steps/pi"
)

// registry returns the agent drivers this build provides. Adding a driver
// is a package with a Spec and one entry here: the loader learns its name
// and the configuration its keys from the registry.
func registry() *drivers.Registry {
	r := &drivers.Registry{}
	r.Register(
		pi.Spec(),
		claude.Spec(),
		codex.Spec(),
		openai.Spec(),
		exec.Spec(),
	)
	return r
}

// buildDrivers builds every registered driver from drivers.<name>.<key> in
// cfg (e.g. FLOW_DRIVERS_CLAUDE_BASE_URL), for the keys its spec reads. A
// key left unset keeps the driver's default: with nothing configured each
// CLI runs with its own configuration and login.
func buildDrivers(reg *drivers.Registry, cfg *viper.Viper) (map[string]engine.Driver, error) {
	config := map[string]drivers.Config{}
	for _, s := range reg.Specs() {
		dc := drivers.Config{}
		for _, k := range s.Keys {
			if key := "drivers." + s.Name + "." + k; cfg.IsSet(key) {
				dc[k] = cfg.GetString(key)
			}
		}
		config[s.Name] = dc
	}
	return reg.Build(config)
}
