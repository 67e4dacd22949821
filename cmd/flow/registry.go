package main

import (
	"context"

	"github.com/spf13/viper"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/steps/claude"
	"github.com/flowrun/flow/steps/codex"
	"github.com/flowrun/flow/steps/drivers"
	"github.com/flowrun/flow/steps/exec"
	"github.com/flowrun/flow/steps/native"
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
		native.Spec(),
		exec.Spec(),
	)
	return r
}

// driverConfig is drivers.<name>.<key> in cfg (e.g.
// FLOW_DRIVERS_CLAUDE_BASE_URL) for the keys each spec reads, which the
// runner builds every registered driver from (runner.New). A key left
// unset keeps the driver's default: with nothing configured each CLI runs
// with its own configuration and login.
func driverConfig(reg *drivers.Registry, cfg *viper.Viper) map[string]drivers.Config {
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
	return config
}

// preflight checks every driver the plan's agents use before anything
// runs (drivers.Registry.Preflight): a missing CLI, a server that takes no
// connections or an unset key is exit 2, naming the agent, the driver and
// the fix, before the first node has spent anything. It returns the
// checks, for flow validate --preflight to print.
func (a *app) preflight(ctx context.Context, plan *flows.Plan) ([]drivers.Check, error) {
	r, err := a.runner()
	if err != nil {
		return nil, err
	}
	checks, err := r.Preflight(ctx, plan)
	if err != nil {
		return checks, &exitError{code: exitInvalid, msg: err.Error() + "\nnothing ran"}
	}
	return checks, nil
}
