package drivers_test

import (
	"context"
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/local"
	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/steps/drivers"
)

// echo is a driver defined outside steps/: it answers each turn with its
// configured prefix and the turn's first line.
type echo struct{ prefix string }

func (e echo) Turn(_ context.Context, t *engine.Turn) (*engine.TurnResult, error) {
	first, _, _ := strings.Cut(t.Prompt, "\n")
	return &engine.TurnResult{Status: engine.Completed, Output: e.prefix + first}, nil
}

func echoSpec() drivers.Spec {
	return drivers.Spec{
		Name: "echo",
		Keys: []string{"prefix", "repeat"},
		New: func(cfg drivers.Config) (engine.Driver, error) {
			n, err := cfg.Int("repeat", 1)
			if err != nil {
				return nil, err
			}
			return echo{prefix: strings.Repeat(cfg.String("prefix"), n)}, nil
		},
	}
}

// TestRegisteredDriverRuns registers a driver that neither schema nor flows
// has heard of, loads a flow whose agent names it with the registry's names,
// and runs the flow with the drivers the registry built.
func TestRegisteredDriverRuns(t *testing.T) {
	var reg drivers.Registry
	reg.Register(echoSpec())
	drivers, err := reg.Build(map[string]drivers.Config{"echo": {"prefix": "echo: "}})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	src := []byte(`name: hello
agents:
  - {name: parrot, description: repeats, driver: echo}
nodes:
  - {id: say, agent: parrot, prompt: "hello ${{ input }}"}
`)
	plan, diags := flows.LoadSource(filepath.Join(dir, "hello.yaml"), src,
		flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, Drivers: reg.Names()})
	if diags.HasErrors() {
		t.Fatal(diags)
	}
	res, err := local.Execute(context.Background(), plan, local.Config{Drivers: drivers, RunsDir: filepath.Join(dir, "runs"), WorkDir: dir}, engine.Options{
		Input: "ada"})
	if err != nil {
		t.Fatal(err)
	}
	if !res.OK || res.Output != "echo: hello ada" {
		t.Errorf("run = %s, output %#v; want succeeded, \"echo: hello ada\"", res.Status(), res.Output)
	}
}

// TestUnregisteredDriverIsPositioned checks that a flow naming a driver the
// registry lacks is refused by the loader at the `driver:`, with the
// registry's names.
func TestUnregisteredDriverIsPositioned(t *testing.T) {
	var reg drivers.Registry
	reg.Register(echoSpec(), drivers.Spec{Name: "shout", New: func(drivers.Config) (engine.Driver, error) { return echo{}, nil }})
	src := []byte("name: f\nnodes:\n  - {id: a, agent: {name: x, description: d, driver: whisper}, prompt: p}\n")
	_, diags := flows.LoadSource("f.yaml", src, flows.Options{Disk: osdisk.OS, UserAgentDirs: []string{}, Drivers: reg.Names()})
	got := diags.Error()
	if want := "f.yaml:3:54: driver: unknown driver \"whisper\"\n" +
		"    3 |   - {id: a, agent: {name: x, description: d, driver: whisper}, prompt: p}\n" +
		"      |                                                      ^\n\thint: drivers are echo, shout"; !strings.Contains(got, want) {
		t.Errorf("diagnostics:\n%s\nwant among them:\n%s", got, want)
	}
}

func TestRegistryNamesAndLookup(t *testing.T) {
	var reg drivers.Registry
	if len(reg.Names()) != 0 {
		t.Errorf("the zero Registry has names %q", reg.Names())
	}
	reg.Register(echoSpec())
	reg.Register(drivers.Spec{Name: "alpha", New: echoSpec().New})
	if got := reg.Names(); !slices.Equal(got, []string{"echo", "alpha"}) {
		t.Errorf("Names = %q, want registration order", got)
	}
	if s, ok := reg.Lookup("echo"); !ok || !slices.Equal(s.Keys, []string{"prefix", "repeat"}) {
		t.Errorf("Lookup(echo) = %+v, %v", s, ok)
	}
	if _, ok := reg.Lookup("nope"); ok {
		t.Error("Lookup(nope) found a spec")
	}
	specs := reg.Specs()
	specs[0].Name = "changed"
	if reg.Names()[0] != "echo" {
		t.Error("changing Specs' result changed the registry")
	}
}

func TestRegisterRefusesBadSpecs(t *testing.T) {
	for name, s := range map[string]drivers.Spec{
		"no name":   {New: echoSpec().New},
		"no New":    {Name: "x"},
		"duplicate": echoSpec(),
	} {
		t.Run(name, func(t *testing.T) {
			var reg drivers.Registry
			reg.Register(echoSpec())
			defer func() {
				if recover() == nil {
					t.Error("Register did not panic")
				}
			}()
			reg.Register(s)
		})
	}
}

func TestBuildErrorsNameTheKey(t *testing.T) {
	var reg drivers.Registry
	reg.Register(echoSpec(), drivers.Spec{Name: "plain", New: func(drivers.Config) (engine.Driver, error) { return echo{}, nil }})
	for _, tc := range []struct {
		config map[string]drivers.Config
		want   string
	}{
		{map[string]drivers.Config{"echo": {"repeat": "twice"}},
			`configuring driver echo: drivers.echo.repeat is "twice", not a whole number`},
		{map[string]drivers.Config{"echo": {"prefx": "x"}},
			`configuring driver echo: drivers.echo.prefx is not a key it reads (its keys are prefix, repeat)`},
		{map[string]drivers.Config{"plain": {"binary": "x"}},
			`configuring driver plain: drivers.plain.binary is not a key it reads (it reads none)`},
		{map[string]drivers.Config{"ehco": {}},
			`configuring drivers: no driver is named "ehco" (drivers are echo, plain)`},
	} {
		_, err := reg.Build(tc.config)
		if err == nil || err.Error() != tc.want {
			t.Errorf("Build(%v) = %v, want %s", tc.config, err, tc.want)
		}
	}
	_, err := reg.Build(map[string]drivers.Config{"echo": {"repeat": "2x"}})
	if ce := (*drivers.ConfigError)(nil); !errors.As(err, &ce) || ce.Driver != "echo" || ce.Key != "repeat" {
		t.Errorf("Build's error %v is not a *ConfigError for drivers.echo.repeat", err)
	}
	drivers, err := reg.Build(nil)
	if err != nil || len(drivers) != 2 || drivers["echo"] == nil || drivers["plain"] == nil {
		t.Errorf("Build(nil) = %v, %v; want every driver with its defaults", drivers, err)
	}
}

func TestDriverConfigInt(t *testing.T) {
	cfg := drivers.Config{"n": " 3 ", "bad": "3.5", "empty": ""}
	if n, err := cfg.Int("n", 1); n != 3 || err != nil {
		t.Errorf("Int(n) = %d, %v", n, err)
	}
	if n, err := cfg.Int("unset", 7); n != 7 || err != nil {
		t.Errorf("Int(unset) = %d, %v; want the default", n, err)
	}
	for _, k := range []string{"bad", "empty"} {
		if _, err := cfg.Int(k, 1); err == nil || !strings.Contains(err.Error(), k+" is ") {
			t.Errorf("Int(%s) = %v, want an error naming the key", k, err)
		}
	}
}
