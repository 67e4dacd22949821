// Package drivers is the registry of agent drivers: each driver package
// (steps/pi, steps/claude, …) describes itself with a Spec — its name in
// agent files, the configuration keys it reads under drivers.<name>., the
// tool names it knows and a constructor of one shape — and the command
// line registers the ones this build provides in a Registry value (no
// init() side effects) and builds engine.Drivers from the configuration.
// The loader learns the driver names and tools from it.
//
// The engine defines the Driver contract and takes the built drivers; it
// does not need the registry, which is why the registry lives here, beside
// the drivers, and not in the engine. Adding a driver is one new package
// and one line in cmd/flow/registry.go.
package drivers
