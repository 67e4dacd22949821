package schema

import (
	_ "embed"
	"slices"
)

//go:embed flow.schema.json
var flowJSONSchema []byte

// JSONSchema returns the JSON Schema (draft 2020-12) of a flow file, for
// editors and `flow schema`. It describes what the decoder accepts; a test
// holds its properties to Keys. The caller owns the returned slice.
func JSONSchema() []byte { return slices.Clone(flowJSONSchema) }
