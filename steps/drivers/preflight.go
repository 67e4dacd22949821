package drivers

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/flows"
)

// Unready is what a driver's Preflight finds wrong: the problem and how to
// fix it, both for a person who has not read the driver's code.
type Unready struct {
	Problem string
	Fix     string
}

func (e *Unready) Error() string {
	if e.Fix == "" {
		return e.Problem
	}
	return e.Problem + "; fix: " + e.Fix
}

// Check is the preflight of one driver setup and the agents that use it.
type Check struct {
	Driver string
	Agents []*flows.Agent
	// Ready says what was found when the check passed ("claude 2.1.197").
	Ready string
	Err   error
}

// PreflightError lists the checks that failed.
type PreflightError struct{ Failed []Check }

func (e *PreflightError) Error() string {
	var b strings.Builder
	for i, c := range e.Failed {
		if i > 0 {
			b.WriteString("\n")
		}
		b.WriteString(c.Line())
	}
	return b.String()
}

// Line is the check as one line of text: the agents, the driver, and what
// was found or is wrong.
func (c Check) Line() string {
	names := make([]string, len(c.Agents))
	for i, a := range c.Agents {
		names[i] = a.Name
		if a.Source != "" {
			names[i] += " (" + a.Source + ")"
		}
	}
	who := "agent " + strings.Join(names, ", ")
	if len(names) > 1 {
		who = "agents " + strings.Join(names, ", ")
	}
	if c.Err != nil {
		return fmt.Sprintf("preflight: %s, driver %s: %v", who, c.Driver, c.Err)
	}
	return fmt.Sprintf("preflight: %s, driver %s: %s", who, c.Driver, c.Ready)
}

// PreflightTimeout bounds each check: a version to be read, a server to
// take a connection. A Node CLI's --version loads all of it (pi's takes 5 s
// on a busy machine), hence the margin; readVersion mostly avoids it.
const PreflightTimeout = 30 * time.Second

// Preflight checks, before anything runs, every driver that agents use:
// what each driver's Spec.Preflight looks at (its CLI found and its
// version read, its server taking connections, its key variable set).
// Agents of one driver with the same server, key and command are checked
// once; the checks run at once. It returns every check, and an error
// (*PreflightError) when one failed; a driver without a Preflight passes.
func (r *Registry) Preflight(ctx context.Context, config map[string]Config, agents []*flows.Agent) ([]Check, error) {
	type key struct{ driver, base, keyEnv, command string }
	var checks []Check
	index := map[key]int{}
	for _, a := range agents {
		k := key{a.Driver, a.BaseURL, a.APIKeyEnv, strings.Join(a.Command, "\x00")}
		if i, ok := index[k]; ok {
			checks[i].Agents = append(checks[i].Agents, a)
			continue
		}
		index[k] = len(checks)
		checks = append(checks, Check{Driver: a.Driver, Agents: []*flows.Agent{a}})
	}
	var wg sync.WaitGroup
	for i := range checks {
		c := &checks[i]
		s, ok := r.Lookup(c.Driver)
		switch {
		case !ok:
			c.Err = &Unready{Problem: "no such driver", Fix: "drivers are " + strings.Join(r.Names(), ", ")}
			continue
		case s.Preflight == nil:
			c.Ready = "nothing to check"
			continue
		}
		wg.Go(func() {
			cctx, cancel := context.WithTimeout(ctx, PreflightTimeout)
			defer cancel()
			c.Ready, c.Err = s.Preflight(cctx, config[s.Name], c.Agents[0])
		})
	}
	wg.Wait()
	var failed []Check
	for _, c := range checks {
		if c.Err != nil {
			failed = append(failed, c)
		}
	}
	if failed != nil {
		return checks, &PreflightError{Failed: failed}
	}
	return checks, nil
}

// CLI is the preflight of a driver that runs a program: the program is
// found and answers --version, the server it is pointed at (if any) takes
// connections, and the key variable it is given (if any) is set.
type CLI struct {
	Driver  string // its name, for the configuration keys in a fix
	Binary  string // drivers.<name>.binary, else the program's name
	Install string // how to install it, e.g. "npm install -g @anthropic-ai/claude-code"
	BaseURL string // "" when it runs with its own configuration
	KeyEnv  string // "" when no key variable is named
	KeyFrom string // where KeyEnv was named, for the fix
}

// Check runs the CLI's checks; the text is the version it reported.
func (c CLI) Check(ctx context.Context) (string, error) {
	upper := strings.ToUpper(c.Driver)
	path, err := exec.LookPath(c.Binary)
	if err != nil {
		return "", &Unready{Problem: fmt.Sprintf("%s is not on PATH", c.Binary),
			Fix: fmt.Sprintf("install it (%s), or set drivers.%s.binary (FLOW_DRIVERS_%s_BINARY) to where it is", c.Install, c.Driver, upper)}
	}
	version, err := readVersion(ctx, path)
	if ur := (*Unready)(nil); errors.As(err, &ur) {
		return "", err
	} else if err != nil {
		return "", &Unready{Problem: err.Error(), Fix: fmt.Sprintf("reinstall it (%s)", c.Install)}
	}
	if c.BaseURL != "" {
		if err := Reachable(ctx, c.BaseURL); err != nil {
			return "", &Unready{Problem: err.Error(),
				Fix: fmt.Sprintf("start the server, or correct drivers.%s.base_url (FLOW_DRIVERS_%s_BASE_URL)", c.Driver, upper)}
		}
	}
	if err := KeySet(c.KeyEnv, c.KeyFrom); err != nil {
		return "", err
	}
	ready := fmt.Sprintf("%s %s", c.Binary, version)
	if c.BaseURL != "" {
		ready += " at " + c.BaseURL
	}
	return ready, nil
}

// KeySet checks that the variable name, named as from says, is set to
// something; an empty name passes.
func KeySet(name, from string) error {
	if name == "" {
		return nil
	}
	if v, ok := os.LookupEnv(name); ok && v != "" {
		return nil
	}
	return &Unready{Problem: fmt.Sprintf("the key variable %s (%s) is not set", name, from),
		Fix: fmt.Sprintf("export %s=<your key>, or name another variable", name)}
}

// Reachable checks that the server of a base URL takes a TCP connection.
func Reachable(ctx context.Context, base string) error {
	u, err := url.Parse(base)
	if err != nil || u.Host == "" {
		return fmt.Errorf("base_url %q is not a URL (http://host:port/…)", base)
	}
	port := u.Port()
	if port == "" {
		port = "80"
		if u.Scheme == "https" {
			port = "443"
		}
	}
	d := net.Dialer{Timeout: 3 * time.Second}
	conn, err := d.DialContext(ctx, "tcp", net.JoinHostPort(u.Hostname(), port))
	if err != nil {
		var op *net.OpError
		if errors.As(err, &op) && op.Err != nil {
			err = op.Err
		}
		return fmt.Errorf("base_url %s does not take connections: %v", base, err)
	}
	_ = conn.Close()
	return nil
}

// Agents are the agents a plan can reach, sorted by name: the ones to
// check before it runs.
func Agents(p *flows.Plan) []*flows.Agent {
	out := make([]*flows.Agent, 0, len(p.Agents))
	for _, a := range p.Agents {
		out = append(out, a)
	}
	slices.SortFunc(out, func(a, b *flows.Agent) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// readVersion reads the version of the program at path: for a CLI
// installed by npm (a file under node_modules), the "version" of its
// package.json, which costs no Node start; else the first line of what
// `path --version` prints.
func readVersion(ctx context.Context, path string) (string, error) {
	if v := npmVersion(path); v != "" {
		if real, _ := filepath.EvalSymlinks(path); strings.HasSuffix(real, ".js") || strings.HasSuffix(real, ".mjs") {
			if _, err := exec.LookPath("node"); err != nil {
				return "", &Unready{Problem: fmt.Sprintf("%s is a Node program and node is not on PATH", path), Fix: "install Node.js, or put its bin directory on PATH"}
			}
		}
		return v, nil
	}
	out, err := exec.CommandContext(ctx, path, "--version").CombinedOutput()
	version := strings.TrimSpace(string(out))
	if i := strings.IndexByte(version, '\n'); i >= 0 {
		version = version[:i]
	}
	switch {
	case ctx.Err() != nil:
		return "", fmt.Errorf("%s --version did not answer within %s", path, PreflightTimeout)
	case err != nil:
		return "", fmt.Errorf("%s --version failed: %v: %s", path, err, version)
	}
	return version, nil
}

// npmVersion is the version of the npm package the program at path
// belongs to, or "": the nearest package.json above the file a
// node_modules/.bin link points at, within node_modules.
func npmVersion(path string) string {
	real, err := filepath.EvalSymlinks(path)
	if err != nil || !strings.Contains(real, string(filepath.Separator)+"node_modules"+string(filepath.Separator)) {
		return ""
	}
	for dir := filepath.Dir(real); filepath.Base(dir) != "node_modules" && dir != filepath.Dir(dir); dir = filepath.Dir(dir) {
		b, err := os.ReadFile(filepath.Join(dir, "package.json"))
		if err != nil {
			continue
		}
		var pkg struct {
			Name    string `json:"name"`
			Version string `json:"version"`
		}
		if json.Unmarshal(b, &pkg) != nil || pkg.Version == "" {
			return ""
		}
		return pkg.Version + " (" + pkg.Name + ")"
	}
	return ""
}

// Unavailable wraps err as engine.ErrUnavailable without adding the word
// to its text: the failure's kind says it already, and "unavailable:
// starting x: unavailable: …" says it twice. Drivers and the command
// runner use it for a program that could not be started.
func Unavailable(err error) error { return unavailableError{err} }

type unavailableError struct{ error }

func (e unavailableError) Unwrap() []error { return []error{engine.ErrUnavailable, e.error} }
