package schema

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/santhosh-tekuri/jsonschema/v6"
)

const flowSchemaURL = "https://github.com/flowrun/flow/schema/flow.schema.json"

func compileFlowSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(JSONSchema()))
	if err != nil {
		t.Fatalf("decoding flow.schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource(flowSchemaURL, doc); err != nil {
		t.Fatalf("adding flow.schema.json: %v", err)
	}
	sch, err := c.Compile(flowSchemaURL)
	if err != nil {
		t.Fatalf("compiling flow.schema.json: %v", err)
	}
	return sch
}

// yamlInstance converts a YAML document into a value the validator accepts.
func yamlInstance(t *testing.T, src []byte) any {
	t.Helper()
	js, err := yaml.YAMLToJSON(src)
	if err != nil {
		t.Fatalf("converting YAML to JSON: %v", err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if err != nil {
		t.Fatalf("decoding JSON: %v", err)
	}
	return v
}

func TestJSONSchemaCompiles(t *testing.T) {
	compileFlowSchema(t)
}

func TestJSONSchemaIsACopy(t *testing.T) {
	b := JSONSchema()
	b[0] = 'x'
	if JSONSchema()[0] == 'x' {
		t.Fatal("JSONSchema returns the embedded bytes themselves")
	}
}

func TestJSONSchemaAcceptsExamples(t *testing.T) {
	sch := compileFlowSchema(t)
	files, err := filepath.Glob(filepath.Join("..", "examples", "*.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Skip("no examples/*.yaml yet")
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			src, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(yamlInstance(t, src)); err != nil {
				t.Errorf("%s does not fit flow.schema.json:\n%v", f, err)
			}
		})
	}
}

func TestJSONSchemaDocuments(t *testing.T) {
	sch := compileFlowSchema(t)
	tests := []struct {
		name string
		src  string
		ok   bool
	}{
		{"minimal", `
name: m
nodes: [{id: a, run: [go, version]}]`, true},
		{"every shape", `
name: all
description: d
input: {goal: string, focus?: [string], n: {type: integer, default: 3}}
model: ""
models: {scout: m1, writer: m2}
timeout: 1h30m
budget: {tokens: 2000000, cost: 5.00}
concurrency: 4
agents: [./agents, {name: x, description: d, driver: exec, command: [./x.sh], instructions: hi}]
project_agents: false
schedule: {cron: "@every 10m", input: {goal: g}, overlap: queue}
sweep: {models: [a, b], assign: {scout: [c, d], writer: e}, inputs: tasks.jsonl, params: {n: [1, 2]}, repeat: 3, score: review.ok, baseline: a scout=c}
nodes:
  - id: look
    map: input.focus
    max: 8
    concurrency: 3
    fail_fast: true
    do: [{id: scout, agent: scout, prompt: "Find ${{ item }}.", retry: 2, timeout: 90s}]
  - id: review
    loop: {until: verdict.output.approved, max: 3}
    on_fail: continue
    budget: {tokens: 1000}
    do:
      - {id: code, agent: {name: c, description: d, tools: "read, grep"}, memory: review, reads: [input], prompt: p}
      - {id: tests, run: "go test ./...", env: {GOFLAGS: -mod=mod, N: 3}}
      - {id: verdict, agent: reviewer, output: {approved: boolean, remarks: [string]}, prompt: p}
  - id: report
    choice:
      - {when: review.ok, do: [{id: done, agent: writer, prompt: p}]}
      - else: [{id: stuck, agent: writer, prompt: p}]
  - id: checks
    parallel:
      lint: [{id: vet, run: [go, vet, ./...]}]
    fail_fast: true
  - {id: ship, ask: Ship it?, options: [ship, hold], default: hold}
  - {id: notes, flow: release-notes, input: checks.output}`, true},
		{"no nodes", `name: x`, false},
		{"no name", `nodes: [{id: a, run: x}]`, false},
		{"unknown flow key", `
name: x
node: []`, false},
		{"two kinds", `
name: x
nodes: [{id: a, run: x, ask: y}]`, false},
		{"no kind", `
name: x
nodes: [{id: a, prompt: p}]`, false},
		{"bad id", `
name: x
nodes: [{id: 1a, run: x}]`, false},
		{"map without max", `
name: x
nodes: [{id: m, map: input, do: [{id: a, run: x}]}]`, false},
		{"loop without max", `
name: x
nodes: [{id: l, loop: {until: a.ok}, do: [{id: a, run: x}]}]`, false},
		{"loop without do", `
name: x
nodes: [{id: l, loop: {until: a.ok, max: 2}}]`, false},
		{"agent without prompt", `
name: x
nodes: [{id: a, agent: writer}]`, false},
		{"prompt on a run node", `
name: x
nodes: [{id: a, run: x, prompt: p}]`, false},
		{"else with when", `
name: x
nodes: [{id: c, choice: [{when: a, else: [{id: b, run: x}]}]}]`, false},
		{"bad duration", `
name: x
timeout: 10 minutes
nodes: [{id: a, run: x}]`, false},
		{"bad type", `
name: x
input: {n: int}
nodes: [{id: a, run: x}]`, false},
		{"two-item list type", `
name: x
input: [string, number]
nodes: [{id: a, run: x}]`, false},
		{"bad overlap", `
name: x
schedule: {cron: "* * * * *", overlap: never}
nodes: [{id: a, run: x}]`, false},
		{"exec agent without command", `
name: x
nodes: [{id: a, agent: {name: n, description: d, driver: exec}, prompt: p}]`, false},
		{"sweep with an unknown key", `
name: x
sweep: {model: [a]}
nodes: [{id: a, run: x}]`, false},
		{"sweep repeat 0", `
name: x
sweep: {repeat: 0}
nodes: [{id: a, run: x}]`, false},
		{"negative budget", `
name: x
budget: {cost: -1}
nodes: [{id: a, run: x}]`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := sch.Validate(yamlInstance(t, []byte(strings.TrimSpace(tt.src))))
			switch {
			case tt.ok && err != nil:
				t.Errorf("rejected a valid document:\n%v", err)
			case !tt.ok && err == nil:
				t.Error("accepted an invalid document")
			}
		})
	}
}
