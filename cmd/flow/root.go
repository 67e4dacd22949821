package main

import (
	"fmt"

	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/runner"
)

// runner is the process's composition root (package runner), built from
// the configuration on first use, once: every run this process walks or
// hands to Temporal, and every visit its worker runs, comes from it.
func (a *app) runner() (*runner.Runner, error) {
	if a.root != nil {
		return a.root, nil
	}
	r, err := runner.New(runner.Config{Registry: a.drivers, Drivers: driverConfig(a.drivers, a.cfg), Load: a.loadOptions(),
		Concurrency: a.cfg.GetInt("concurrency"), TurnTimeout: a.cfg.GetDuration("timeout"), Snapshot: a.config(),
		Secrets: func() *secret.Redactor { return a.secrets },
		Warn:    func(msg string) { fmt.Fprintf(a.stderr, "warning: %s\n", safeText(msg)) }})
	if err != nil {
		return nil, invalid("%v", err)
	}
	a.root = r
	return r, nil
}

// local is the backend that walks runs in this process, its leaves
// answered as opts say.
func (a *app) local(opts ...runner.LeafOption) (runner.Backend, error) {
	r, err := a.runner()
	if err != nil {
		return nil, err
	}
	return r.Local(opts...), nil
}
