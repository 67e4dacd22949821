package flows

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"
	"github.com/rogpeppe/go-internal/txtar"
	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/flowrun/flow/flows/osdisk"
	"github.com/flowrun/flow/schema"
)

func flowSchema(t *testing.T) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(schema.JSONSchema()))
	if err != nil {
		t.Fatal(err)
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	if err := c.AddResource("flow.schema.json", doc); err != nil {
		t.Fatal(err)
	}
	s, err := c.Compile("flow.schema.json")
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// schemaAccepts validates src (YAML) against flow schema; ok false when it
// is not YAML the converter reads.
func schemaAccepts(t *testing.T, s *jsonschema.Schema, src []byte) (accepted bool, err error) {
	js, cerr := yaml.YAMLToJSON(src)
	if cerr != nil {
		return false, cerr
	}
	v, cerr := jsonschema.UnmarshalJSON(bytes.NewReader(js))
	if cerr != nil {
		return false, cerr
	}
	err = s.Validate(v)
	return err == nil, err
}

// TestSchemaAgreesWithValidateOnGoldens: over every golden archive, a flow
// the decoder reads with no structural fault (no unknown key, no value of
// the wrong type) is accepted by flow schema, and one it refuses for such a
// fault is refused by the schema too.
func TestSchemaAgreesWithValidateOnGoldens(t *testing.T) {
	s := flowSchema(t)
	archives, _ := filepath.Glob(filepath.Join("testdata", "*.txtar"))
	for _, path := range archives {
		name := strings.TrimSuffix(filepath.Base(path), ".txtar")
		ar, err := txtar.ParseFile(path)
		if err != nil {
			t.Fatal(err)
		}
		dir := t.TempDir()
		writeArchive(t, ar, dir)
		file := filepath.Join(dir, name+".yaml")
		src, err := os.ReadFile(file)
		if err != nil {
			continue
		}
		_, diags := Load(file, Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: testDrivers})
		text := diags.Error()
		structural := strings.Contains(text, ": unknown-key: ") || strings.Contains(text, ": type: ") || strings.Contains(text, ": yaml: ")
		ok, verr := schemaAccepts(t, s, src)
		switch {
		case structural && ok:
			t.Errorf("%s: flow validate refuses it for its structure, the schema accepts it:\n%s", name, text)
		case !structural && !ok && !strings.Contains(text, ": yaml: "):
			if strings.Contains(text, ": kind-key: ") || strings.Contains(text, ": kind: ") || strings.Contains(text, ": key: ") ||
				strings.Contains(text, ": bound: ") || strings.Contains(text, ": branch: ") || strings.Contains(text, ": missing: ") || strings.Contains(text, ": value: ") ||
				strings.Contains(text, ": range: ") || strings.Contains(text, ": duration: ") || strings.Contains(text, ": empty: ") || strings.Contains(text, ": id: ") {
				continue // faults the schema may see too
			}
			t.Errorf("%s: the schema refuses what the decoder reads without a structural fault:\n%v\n--- flow validate:\n%s", name, verr, text)
		}
	}
}

// TestSchemaAgreesWithValidate: a hand set of files, each accepted or
// refused alike by flow schema and flow validate.
func TestSchemaAgreesWithValidate(t *testing.T) {
	s := flowSchema(t)
	cases := []struct {
		name, src string
		ok        bool
	}{
		{"merge key", "name: m\nnodes:\n  - &t {id: unit, run: [go, test], timeout: 10m}\n  - <<: *t\n    id: race\n", true},
		{"empty model and timeout", "name: m\nmodel:\ntimeout:\nnodes:\n  - {id: a, run: [echo], timeout: }\n", true},
		{"number description", "name: m\ndescription: 42\nnodes:\n  - {id: a, run: [echo]}\n", true},
		{"number options", "name: m\nnodes:\n  - {id: a, ask: Which?, options: [1, 2, yes]}\n", true},
		{"unknown key", "name: m\nnodes:\n  - {id: a, run: [echo], tiemout: 5m}\n", false},
		{"string concurrency", "name: m\nconcurrency: two\nnodes:\n  - {id: a, run: [echo]}\n", false},
		{"list description", "name: m\ndescription: [a]\nnodes:\n  - {id: a, run: [echo]}\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			file := filepath.Join(dir, "m.yaml")
			if err := os.WriteFile(file, []byte(c.src), 0o644); err != nil {
				t.Fatal(err)
			}
			_, diags := Load(file, Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: testDrivers})
			if got := diags.Error() == ""; got != c.ok {
				t.Errorf("flow validate: accepted %v, want %v:\n%s", got, c.ok, diags.Error())
			}
			if got, err := schemaAccepts(t, s, []byte(c.src)); got != c.ok {
				t.Errorf("flow schema: accepted %v, want %v: %v", got, c.ok, err)
			}
		})
	}
	// What an editor's YAML language server sees: the merge key itself,
	// not merged.
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(`{"name": "m", "nodes": [{"id": "a", "run": ["go"]}, {"<<": {"id": "a", "run": ["go"]}, "id": "b", "run": ["go", "vet"]}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Validate(v); err != nil {
		t.Errorf("the schema refuses a merge key as a language server sees it: %v", err)
	}
}
