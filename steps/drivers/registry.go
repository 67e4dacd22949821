package drivers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
)

// Spec is what a driver package tells a Registry about itself: the
// name agent files give as `driver:`, the configuration keys it reads under
// `drivers.<Name>.`, and how to build it from their values. One spec per
// driver keeps the loader's list of names, the configuration and the
// constructors from drifting apart.
type Spec struct {
	// Name is the driver's name in agent files and in the configuration.
	Name string
	// Keys are the configuration keys the driver reads, without the
	// `drivers.<Name>.` prefix, e.g. "binary", "base_url", "max_retries".
	Keys []string
	// New builds the driver from the keys that are set. It returns an error,
	// typically a *ConfigError, for a value it cannot use; an unset key means
	// the driver's own default.
	New func(cfg Config) (engine.Driver, error)
	// Tools are the tool names an agent run by this driver may list, in
	// lower case, each with the driver's own name for it (pi runs Claude
	// Code's Glob as find). nil means the driver takes any name (Claude
	// Code, whose tools include MCP servers'), or ignores tools.
	Tools map[string]string
	// Preflight checks, before a run's first node, that the driver can
	// serve agent with the configuration cfg: its CLI found and its
	// version read, its server taking connections, its key variable set.
	// It returns what it found ("claude 2.1.197"), or an error, typically
	// an *Unready saying what to fix. nil means there is nothing to check.
	Preflight func(ctx context.Context, cfg Config, agent *flows.Agent) (string, error)
}

// Config holds the configuration keys that are set for one driver,
// without the `drivers.<name>.` prefix, each as the text it was given in (an
// environment variable is text, a YAML number is not). A key that is absent
// is unset; a key set to "" is set. A nil Config is an empty one.
type Config map[string]string

// String returns the value of key, or "" when it is unset.
func (c Config) String(key string) string { return c[key] }

// Int returns the value of key as an integer, or def when it is unset. A
// value that is not a whole number is a *ConfigError.
func (c Config) Int(key string, def int) (int, error) {
	v, ok := c[key]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(strings.TrimSpace(v))
	if err != nil {
		return 0, &ConfigError{Key: key, Value: v, Want: "a whole number"}
	}
	return n, nil
}

// ConfigError is a configuration value a driver cannot use. A Registry sets
// Driver when it builds the driver, so that the error names the key as the
// user writes it: drivers.<driver>.<key>.
type ConfigError struct {
	Driver string // the driver's name; "" until a Registry sets it
	Key    string // the key without the drivers.<name>. prefix
	Value  string // the value as given
	Want   string // what the key takes, e.g. "a whole number"
}

func (e *ConfigError) Error() string {
	key := e.Key
	if e.Driver != "" {
		key = "drivers." + e.Driver + "." + e.Key
	}
	return fmt.Sprintf("%s is %q, not %s", key, e.Value, e.Want)
}

// Registry is the set of agent drivers a program provides. It is a value
// that the program builds (cmd/flow registers the drivers it ships), not a
// global that packages fill from init, so a test or an embedding program can
// provide drivers of its own.
//
// The zero value is an empty registry ready to use. Register is not safe
// for concurrent use; once filled, a Registry may be read from many
// goroutines. Do not copy a non-empty Registry.
type Registry struct {
	specs []Spec
}

// Register adds drivers to r. A spec with no name or no New, or a name
// already registered, is a programming error and panics, as a second
// flag.Var of the same name does.
func (r *Registry) Register(specs ...Spec) {
	for _, s := range specs {
		switch {
		case s.Name == "":
			panic("engine: registering a driver with no name")
		case s.New == nil:
			panic("engine: registering driver " + s.Name + " with no New")
		case r.has(s.Name):
			panic("engine: driver " + s.Name + " is registered twice")
		}
		r.specs = append(r.specs, s)
	}
}

// Names returns the registered drivers' names in the order they were
// registered: the names the loader accepts as `driver:` (flows.Options).
func (r *Registry) Names() []string {
	names := make([]string, len(r.specs))
	for i, s := range r.specs {
		names[i] = s.Name
	}
	return names
}

// Tools returns, by driver name, the tool names each driver's agents may
// list (Spec.Tools), for drivers that say; the loader refuses other
// names (flows.Options.DriverTools).
func (r *Registry) Tools() map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, s := range r.specs {
		if s.Tools != nil {
			out[s.Name] = maps.Clone(s.Tools)
		}
	}
	return out
}

// Specs returns the registered specs in the order they were registered, so
// that a caller can gather each driver's configuration keys.
func (r *Registry) Specs() []Spec { return slices.Clone(r.specs) }

// Lookup returns the spec registered under name, if there is one.
func (r *Registry) Lookup(name string) (Spec, bool) {
	i := slices.IndexFunc(r.specs, func(s Spec) bool { return s.Name == name })
	if i < 0 {
		return Spec{}, false
	}
	return r.specs[i], true
}

func (r *Registry) has(name string) bool {
	_, ok := r.Lookup(name)
	return ok
}

// Build builds every registered driver from its configuration, by driver
// name; a driver config leaves out has every key unset. The result is what
// Options.Drivers takes. A key the driver does not read, or a value it
// cannot use, is an error naming the key (drivers.<name>.<key>).
func (r *Registry) Build(config map[string]Config) (map[string]engine.Driver, error) {
	for _, name := range slices.Sorted(maps.Keys(config)) {
		if !r.has(name) {
			return nil, fmt.Errorf("configuring drivers: no driver is named %q (drivers are %s)", name, strings.Join(r.Names(), ", "))
		}
	}
	out := make(map[string]engine.Driver, len(r.specs))
	for _, s := range r.specs {
		cfg := config[s.Name]
		for _, k := range slices.Sorted(maps.Keys(cfg)) {
			if !slices.Contains(s.Keys, k) {
				return nil, fmt.Errorf("configuring driver %s: drivers.%s.%s is not a key it reads (%s)", s.Name, s.Name, k, keysText(s))
			}
		}
		d, err := s.New(cfg)
		if err != nil {
			if ce := (*ConfigError)(nil); errors.As(err, &ce) && ce.Driver == "" {
				ce.Driver = s.Name
			}
			return nil, fmt.Errorf("configuring driver %s: %w", s.Name, err)
		}
		if d == nil {
			return nil, fmt.Errorf("configuring driver %s: its New returned no driver", s.Name)
		}
		out[s.Name] = d
	}
	return out, nil
}

// keysText lists a spec's keys for an error message.
func keysText(s Spec) string {
	if len(s.Keys) == 0 {
		return "it reads none"
	}
	return "its keys are " + strings.Join(s.Keys, ", ")
}
