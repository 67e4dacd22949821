package schema

import (
	"encoding/json"
	"maps"
	"slices"
	"testing"
)

// TestJSONSchemaAgreesWithDecoder holds flow.schema.json to the keys the
// decoder accepts, so that an editor never suggests a key flow rejects or
// flags one it takes.
func TestJSONSchemaAgreesWithDecoder(t *testing.T) {
	var doc struct {
		Defs map[string]struct {
			Properties map[string]json.RawMessage `json:"properties"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatalf("decoding flow.schema.json: %v", err)
	}
	for name, keys := range Keys() {
		def, ok := doc.Defs[name]
		if !ok {
			t.Errorf("flow.schema.json has no $defs/%s", name)
			continue
		}
		// The YAML merge key is taken in every mapping the decoder reads.
		got := slices.DeleteFunc(slices.Sorted(maps.Keys(def.Properties)), func(k string) bool { return k == "<<" })
		want := slices.Sorted(slices.Values(keys))
		if !slices.Equal(got, want) {
			t.Errorf("$defs/%s properties differ from the decoder's keys:\n schema  %q\n decoder %q", name, got, want)
		}
	}
}

// TestJSONSchemaNodeKindsAgreeWithDecoder holds the per-kind key lists of
// $defs/node (the `if: {required: [kind]}` rules) to what the decoder lets
// each kind take.
func TestJSONSchemaNodeKindsAgreeWithDecoder(t *testing.T) {
	var doc struct {
		Defs struct {
			Node struct {
				AllOf []struct {
					If struct {
						Required []string `json:"required"`
					} `json:"if"`
					Then struct {
						PropertyNames struct {
							Enum []string `json:"enum"`
						} `json:"propertyNames"`
					} `json:"then"`
				} `json:"allOf"`
			} `json:"node"`
		} `json:"$defs"`
	}
	if err := json.Unmarshal(JSONSchema(), &doc); err != nil {
		t.Fatalf("decoding flow.schema.json: %v", err)
	}
	got := map[Kind][]string{}
	for _, rule := range doc.Defs.Node.AllOf {
		if len(rule.If.Required) == 1 {
			got[Kind(rule.If.Required[0])] = slices.Sorted(slices.Values(rule.Then.PropertyNames.Enum))
		}
	}
	for kind, keys := range kindKeys {
		// The YAML merge key is taken in every mapping: a node of every kind names it.
		want := slices.Sorted(slices.Values(append(slices.Clone(commonNodeKeys), append(keys, "<<")...)))
		if !slices.Equal(got[kind], want) {
			t.Errorf("$defs/node: keys of %s nodes differ from the decoder's:\n schema  %q\n decoder %q", kind, got[kind], want)
		}
		delete(got, kind)
	}
	for kind := range got {
		t.Errorf("$defs/node has rules for %q, which the decoder does not know", kind)
	}
}
