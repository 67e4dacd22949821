package flows

import (
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// Aliases resolve to the anchored values: a default is the anchored number,
// not "*", and a run node given *argv runs the anchored argv.
func TestHostileAliasesResolve(t *testing.T) {
	p := hostilePlan(t, "yaml-alias-values")
	in := p.Root.Input
	for field, want := range map[string]any{"n": int64(3), "word": "hello", "again": "hello"} {
		if got := in.Field(field).Type.Default; got != want {
			t.Errorf("input.%s default = %#v, want %#v", field, got, want)
		}
	}
	first, second := p.Root.Nodes[0], p.Root.Nodes[1]
	if len(second.AsRun().Argv) != 2 || second.AsRun().Argv[0].Source != "echo" || second.AsRun().Argv[1].Source != first.AsRun().Argv[1].Source {
		t.Errorf("run: *argv = %v, want the anchored [echo, ${{ input.word }}]", second.AsRun().Argv)
	}
}

// A merge key adds the anchored mapping's keys that the node does not give.
func TestHostileMergeKeys(t *testing.T) {
	p := hostilePlan(t, "yaml-merge-keys")
	derived := p.Root.Nodes[1]
	if derived.ID != "derived" || derived.Timeout.String() != "1m0s" || len(derived.AsRun().Argv) != 2 || derived.AsRun().Argv[1].Source != "base" {
		t.Errorf("derived = id %q timeout %v argv %v, want id derived, timeout 1m and the base's argv", derived.ID, derived.Timeout, derived.AsRun().Argv)
	}
}

// A BOM does not become part of the first key.
func TestHostileBOM(t *testing.T) {
	if p := hostilePlan(t, "yaml-bom"); p.Root.Name != "yaml-bom" {
		t.Errorf("name = %q", p.Root.Name)
	}
}

// {type: T} is a field of type T; an object whose field is named type is
// written as a spec's type.
func TestHostileFieldSpecs(t *testing.T) {
	in := hostilePlan(t, "types-field-spec").Root.Input
	want := map[string]string{
		"file":      "string",
		"described": "integer",
		"defaulted": "integer",
		"inferred":  "[any]",
		"shape":     "{type: string}",
		"object":    "{type: string, kind: string}",
	}
	for field, w := range want {
		f := in.Field(field)
		if f == nil {
			t.Errorf("input has no field %s", field)
			continue
		}
		if got := f.Type.String(); got != w {
			t.Errorf("input.%s is %s, want %s", field, got, w)
		}
	}
	if d := in.Field("described").Type.Description; d != "how many" {
		t.Errorf("description = %q", d)
	}
	if f := in.Field("defaulted").Type; !f.HasDefault || f.Default != int64(2) {
		t.Errorf("defaulted: default %v (set %v)", f.Default, f.HasDefault)
	}
}

// Element types: a list of objects written in an expression types item as
// any (never int); a range as integers; a filtered typed list keeps the
// element's fields.
func TestHostileListTypes(t *testing.T) {
	p := hostilePlan(t, "types-list-literals")
	want := map[string]string{"literal": "any", "mapped": "any", "range": "integer", "spaced": "integer",
		"filtered": "{big: boolean, path: string}"}
	for _, n := range p.Root.Nodes {
		item := n.Output.Elem.Field("item").Type
		if got := item.String(); got != want[n.ID] {
			t.Errorf("map %s: item is %s, want %s", n.ID, got, want[n.ID])
		}
	}
}

// An agent in a Claude Code directory runs on claude with no model pin; one
// in pi's directory on pi.
func TestHostileAgentDrivers(t *testing.T) {
	p := hostilePlan(t, "agent-claude-code-file")
	for name, want := range map[string][2]string{"code-reviewer": {"claude", ""}, "scout": {"pi", ""}} {
		a := p.Agents[name]
		if a == nil {
			t.Fatalf("agent %s not in the plan", name)
		}
		if a.Driver != want[0] || a.Model != want[1] {
			t.Errorf("agent %s: driver %q model %q, want driver %q model %q", name, a.Driver, a.Model, want[0], want[1])
		}
	}
	if got := p.Agents["code-reviewer"].Tools; !reflect.DeepEqual(got, []string{"Read", "Grep", "Glob", "Bash"}) {
		t.Errorf("tools = %v", got)
	}
}

// dirDriver knows Claude Code's and pi's directories by their place.
func TestDirDriver(t *testing.T) {
	for dir, want := range map[string]string{
		"/home/u/.claude/agents":      "claude",
		"repo/.claude/agents/":        "claude",
		"/home/u/.pi/agent/agents":    "pi",
		"repo/.pi/agents":             "pi",
		"/home/u/.config/flow/agents": "",
		"flows/agents":                "",
		"repo/.claude/other":          "",
	} {
		if got := dirDriver(dir); got != want {
			t.Errorf("dirDriver(%q) = %q, want %q", dir, got, want)
		}
	}
}

// A YAML integer past 2^53 stays exact (it went through a float64 and
// 9007199254740993 became …992); one past int64 is refused at its column.
func TestHostileBigIntegers(t *testing.T) {
	src := "name: big\ninput: {n: {type: integer, default: 9007199254740993}, l: {type: [integer], default: [-9223372036854775807]}}\nnodes:\n  - {id: a, run: [echo]}\n"
	p, diags := LoadSource("big.yaml", []byte(src), Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if diags.HasErrors() {
		t.Fatal(diags.Error())
	}
	if got := p.Root.Input.Field("n").Type.Default; got != int64(9007199254740993) {
		t.Errorf("default = %#v, want 9007199254740993", got)
	}
	if got := p.Root.Input.Field("l").Type.Default.([]any)[0]; got != int64(-9223372036854775807) {
		t.Errorf("list default = %#v", got)
	}
	_, diags = LoadSource("big.yaml", []byte("name: big\ninput: {n: {type: any, default: 18446744073709551615}}\nnodes:\n  - {id: a, run: [echo]}\n"), Options{Disk: osdisk.OS, UserAgentDirs: []string{}})
	if !strings.Contains(diags.Error(), "big.yaml:2:33: range: 18446744073709551615 is a whole number too large to keep exactly") {
		t.Errorf("a whole number past int64: %s", diags.Error())
	}
}
