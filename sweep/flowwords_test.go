package sweep

import (
	"reflect"
	"strings"
	"testing"

	"github.com/flowrun/flow/internal/secret"
)

// TestFlowWordsKnowEverySweepKey: every JSON key of MinLen bytes or more
// that sweep.json and report.json carry is a word secret refuses to take
// for a secret, as the run directory's are (rundir's
// TestFlowWordsKnowEveryKey): a secret whose value is "overspend" must
// not be matched inside a sweep's own keys.
func TestFlowWordsKnowEverySweepKey(t *testing.T) {
	t.Parallel()
	for _, v := range []any{File{}, Report{}} {
		for _, k := range jsonKeys(reflect.TypeOf(v)) {
			if len(k) >= secret.MinLen && !secret.FlowWord(k) {
				t.Errorf("%T writes the key %q, which secret.FlowWord does not know", v, k)
			}
		}
	}
}

// jsonKeys returns the JSON keys of the struct type t and of the structs
// it holds.
func jsonKeys(t reflect.Type) []string {
	seen := map[reflect.Type]bool{}
	var keys []string
	var walk func(reflect.Type)
	walk = func(t reflect.Type) {
		for t.Kind() == reflect.Pointer || t.Kind() == reflect.Slice || t.Kind() == reflect.Map || t.Kind() == reflect.Array {
			t = t.Elem()
		}
		if t.Kind() != reflect.Struct || seen[t] {
			return
		}
		seen[t] = true
		for i := range t.NumField() {
			f := t.Field(i)
			if !f.IsExported() {
				continue
			}
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			if name == "-" {
				continue
			}
			if name == "" && !f.Anonymous {
				name = f.Name
			}
			if name != "" {
				keys = append(keys, name)
			}
			walk(f.Type)
		}
	}
	walk(t)
	return keys
}
