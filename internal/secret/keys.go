package secret

import (
	"reflect"
	"strings"
)

// UnknownKeys returns the JSON keys of v's type, and of the structs it
// holds, that are MinLen bytes or more and not flow's own words
// (FlowWord). The packages that write flow's files test that it returns
// none for what they write, so that flowWords stays complete and no
// secret's value is matched inside flow's own keys.
func UnknownKeys(v any) []string {
	seen := map[reflect.Type]bool{}
	var unknown []string
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
			if len(name) >= MinLen && !FlowWord(name) {
				unknown = append(unknown, name)
			}
			walk(f.Type)
		}
	}
	walk(reflect.TypeOf(v))
	return unknown
}
