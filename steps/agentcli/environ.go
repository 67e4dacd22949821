package agentcli

import (
	"os"
	"strings"
)

// Environ returns the flow process's environment without the variables
// named in drop, followed by set ("NAME=value" entries, in order, so that a
// later one wins). A CLI reads some settings from its environment first
// (a configuration directory, a retry bound); dropping the inherited value
// keeps a stale one out of the child's sight.
func Environ(drop []string, set ...string) []string {
	env := os.Environ()
	out := make([]string, 0, len(env)+len(set))
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		if !contains(drop, name) {
			out = append(out, kv)
		}
	}
	return append(out, set...)
}

func contains(names []string, name string) bool {
	for _, n := range names {
		if n == name {
			return true
		}
	}
	return false
}

// Lookup finds the variable name in env ("NAME=value" entries, the last
// one winning, as for a child process), then in the flow process's
// environment. Drivers use it for a key given to them in their options.
func Lookup(env []string, name string) (string, bool) {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], name+"="); ok {
			return v, true
		}
	}
	return os.LookupEnv(name)
}
