package schema

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml/ast"
)

// TypeKind is the kind of a declared type.
type TypeKind string

// The type kinds of the flow language.
const (
	TString  TypeKind = "string"
	TNumber  TypeKind = "number"
	TInteger TypeKind = "integer"
	TBoolean TypeKind = "boolean"
	TAny     TypeKind = "any"
	TList    TypeKind = "list"
	TObject  TypeKind = "object"
)

var scalarKinds = []string{"string", "number", "integer", "boolean", "any"}

// Type is a declared type: of a flow's input or a node's typed output.
// Written as a scalar name (`string`), a one-item list (`[string]`), a
// mapping of field → type where a name ending in `?` is optional, or a field
// spec. The language has one reading of a mapping: it is a field spec
// `{type: T, default: v, description: text}` when its keys are among type,
// default and description and it has type or default; any other mapping is
// an object. The value of a spec's type: is read as an object whatever its
// keys, so an object whose only field is named type is written
// `{type: {type: string}}`.
type Type struct {
	Kind        TypeKind
	Elem        *Type    // for lists
	Fields      []*Field // for objects, in file order
	Default     any
	HasDefault  bool
	Description string
	Pos         Pos
}

// Field is one field of an object type.
type Field struct {
	Name     string
	Optional bool
	Type     *Type
	Pos      Pos
}

// Field returns the named field, or nil.
func (t *Type) Field(name string) *Field {
	for _, f := range t.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// String renders the type in the flow syntax.
func (t *Type) String() string {
	switch t.Kind {
	case TList:
		return "[" + t.Elem.String() + "]"
	case TObject:
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			opt := ""
			if f.Optional {
				opt = "?"
			}
			parts[i] = f.Name + opt + ": " + f.Type.String()
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	return string(t.Kind)
}

// Scalar types shared by the checker.
var (
	StringType  = &Type{Kind: TString}
	AnyType     = &Type{Kind: TAny}
	BooleanType = &Type{Kind: TBoolean}
	IntegerType = &Type{Kind: TInteger}
	NumberType  = &Type{Kind: TNumber}
)

// ListOf returns the list type of elem.
func ListOf(elem *Type) *Type { return &Type{Kind: TList, Elem: elem} }

// ObjectOf returns an object type with the given required fields, in order.
func ObjectOf(fields ...*Field) *Type { return &Type{Kind: TObject, Fields: fields} }

// F is a required field, for building types in code.
func F(name string, t *Type) *Field { return &Field{Name: name, Type: t} }

func (r *reader) typeExpr(n ast.Node, what string) *Type { return r.typeOf(n, what, false) }

// typeOf reads a type. A mapping is a field spec when its keys are among
// type, default and description and it has type or default (see Type);
// any other mapping is an object. asObject reads a mapping as an object
// whatever its keys: the value of a spec's type: is never a spec itself.
func (r *reader) typeOf(n ast.Node, what string, asObject bool) *Type {
	n = unwrap(n)
	pos := r.pos(n)
	switch v := n.(type) {
	case nil, *ast.NullNode:
		r.errorf(n, CodeType, "write a type: string, number, integer, boolean, any, [T] or {field: T}", "%s has no type", what)
		return &Type{Kind: TAny, Pos: pos}
	case *ast.SequenceNode:
		if len(v.Values) != 1 {
			r.errorf(n, CodeType, "a list type has exactly one item type, e.g. [string]", "%s: a list type needs one item type, not %d", what, len(v.Values))
			return &Type{Kind: TList, Elem: AnyType, Pos: pos}
		}
		return &Type{Kind: TList, Elem: r.typeExpr(v.Values[0], what+" item"), Pos: pos}
	case *ast.MappingNode, *ast.MappingValueNode:
		es, _ := r.mapping(v, what, nil)
		if !asObject && isSpec(es) {
			return r.spec(es, what, pos)
		}
		t := &Type{Kind: TObject, Pos: pos}
		for _, e := range es {
			name, opt := strings.CutSuffix(e.key, "?")
			if !validFieldName(name) {
				r.errorf(e.keyN, CodeName, "field names are letters, digits and _, not starting with a digit", "%q is not a valid field name", e.key)
				continue
			}
			t.Fields = append(t.Fields, &Field{Name: name, Optional: opt, Type: r.typeExpr(e.value, what+"."+name), Pos: r.pos(e.keyN)})
		}
		return t
	}
	name := scalarText(n)
	if !contains(scalarKinds, name) {
		hint := DidYouMean(name, scalarKinds)
		if hint == "" {
			hint = "types are string, number, integer, boolean, any, [T] and {field: T}"
		}
		r.errorf(n, CodeType, hint, "%s: unknown type %q", what, name)
		return &Type{Kind: TAny, Pos: pos}
	}
	return &Type{Kind: TypeKind(name), Pos: pos}
}

// isSpec reports whether a mapping's keys make it a field spec: only type,
// default and description, with type or default among them.
func isSpec(es []entry) bool {
	typed := false
	for _, e := range es {
		switch e.key {
		case "type", "default":
			typed = true
		case "description":
		default:
			return false
		}
	}
	return typed
}

// spec reads `{type: T, default: v, description: text}`.
func (r *reader) spec(es []entry, what string, pos Pos) *Type {
	var t *Type
	var def any
	var defN ast.Node
	hasDefault := false
	desc := ""
	for _, e := range es {
		switch e.key {
		case "type":
			t = r.typeOf(e.value, what, true)
		case "default":
			def, defN, hasDefault = r.plainValue(e.value), e.value, true
		case "description":
			desc = r.str(e.value, what+".description").Value
		}
	}
	if t == nil {
		t = inferType(def)
	}
	cp := *t
	cp.Pos, cp.Description = pos, desc
	if hasDefault {
		cp.Default, cp.HasDefault = def, true
		if err := cp.Check(def); err != nil {
			r.errorf(defN, CodeType, "make the default fit the declared type", "%s: default %v", what, err)
		}
	}
	return &cp
}

func inferType(v any) *Type {
	switch v.(type) {
	case bool:
		return BooleanType
	case int64:
		return IntegerType
	case float64:
		return NumberType
	case string:
		return StringType
	case []any:
		return ListOf(AnyType)
	}
	return AnyType
}

func validFieldName(s string) bool {
	if s == "" {
		return false
	}
	for i, c := range s {
		if c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (i > 0 && c >= '0' && c <= '9') {
			continue
		}
		return false
	}
	return true
}

// Check reports whether v, a value decoded from JSON or YAML, fits t. The
// error, a *ValueError, says where inside v it does not.
func (t *Type) Check(v any) error { return t.check(v, &valuePath{}) }

// ValueError is a value that does not fit its type. At names the place
// inside the value ("goal", "files[2].path"; "" for the value itself), so
// that an API can name the field it rejects.
type ValueError struct {
	At  string
	Msg string // the reason, with At in it
}

func (e *ValueError) Error() string { return e.Msg }

func mismatch(at *valuePath, format string, args ...any) error {
	return &ValueError{At: at.String(), Msg: fmt.Sprintf(format, args...)}
}

// valuePath is where in a value check is: a stack of fields and list
// items, turned into text only for an error. Checking a run's input of
// 10,000 items must not format 10,000 paths.
type valuePath []pathStep

type pathStep struct {
	field string // a field's name; "" for a list's item
	index int
}

// String gives the path as "a.b[2].c".
func (p valuePath) String() string {
	var b strings.Builder
	for _, step := range p {
		switch {
		case step.field == "":
			b.WriteString("[" + strconv.Itoa(step.index) + "]")
		case b.Len() > 0:
			b.WriteString("." + step.field)
		default:
			b.WriteString(step.field)
		}
	}
	return b.String()
}

// in checks v against t one step further down the path.
func (t *Type) in(v any, at *valuePath, step pathStep) error {
	*at = append(*at, step)
	err := t.check(v, at)
	*at = (*at)[:len(*at)-1]
	return err
}

func (t *Type) check(v any, at *valuePath) error {
	where := func() string {
		if len(*at) == 0 {
			return ""
		}
		return " at " + at.String()
	}
	switch t.Kind {
	case TAny:
		return nil
	case TString:
		if _, ok := v.(string); !ok {
			return mismatch(at, "want a string%s, got %s", where(), jsonKind(v))
		}
	case TBoolean:
		if _, ok := v.(bool); !ok {
			return mismatch(at, "want a boolean%s, got %s", where(), jsonKind(v))
		}
	case TNumber:
		switch v.(type) {
		case float64, int64, int:
		default:
			return mismatch(at, "want a number%s, got %s", where(), jsonKind(v))
		}
	case TInteger:
		switch x := v.(type) {
		case int64, int:
		case float64:
			if x != float64(int64(x)) {
				return mismatch(at, "want a whole number%s, got %v", where(), x)
			}
		default:
			return mismatch(at, "want a whole number%s, got %s", where(), jsonKind(v))
		}
	case TList:
		items, ok := v.([]any)
		if !ok {
			return mismatch(at, "want a list%s, got %s", where(), jsonKind(v))
		}
		for i, it := range items {
			if err := t.Elem.in(it, at, pathStep{index: i}); err != nil {
				return err
			}
		}
	case TObject:
		m, ok := v.(map[string]any)
		if !ok {
			return mismatch(at, "want an object%s, got %s", where(), jsonKind(v))
		}
		for _, f := range t.Fields {
			fv, ok := m[f.Name]
			if !ok || fv == nil {
				if f.Optional || f.Type.HasDefault {
					continue
				}
				msg := fmt.Sprintf("missing field %q%s", f.Name, where())
				*at = append(*at, pathStep{field: f.Name})
				defer func() { *at = (*at)[:len(*at)-1] }()
				return mismatch(at, "%s", msg)
			}
			if err := f.Type.in(fv, at, pathStep{field: f.Name}); err != nil {
				return err
			}
		}
	}
	return nil
}

// goTypes are Go's names for the kinds of JSON values, as the expression
// engine's messages give them, and the names the flow file format uses.
var goTypes = strings.NewReplacer("map[string]interface {}", "object", "[]interface {}", "list",
	"interface {}", "any", "float64", "number", "int64", "integer")

// PlainTypes rewrites the Go type names in a message (an expression
// engine's error) as the flow file format names them: []interface {} is a
// list.
func PlainTypes(msg string) string { return goTypes.Replace(msg) }

// KindOf names the kind of a JSON value as a person says it ("a list", "a
// string"), for messages: never a Go type name like []interface {}.
func KindOf(v any) string { return jsonKind(v) }

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case float64, int64, int, int32, float32, uint, uint64, json.Number:
		return "a number"
	case []any, []string:
		return "a list"
	case map[string]any:
		return "an object"
	}
	return "a value of no JSON kind"
}

// WithDefaults returns v with declared defaults filled in for absent fields.
func (t *Type) WithDefaults(v any) any {
	if v == nil && t.HasDefault {
		return t.Default
	}
	if t.Kind != TObject {
		return v
	}
	m, ok := v.(map[string]any)
	if !ok {
		if v != nil {
			return v
		}
		m = map[string]any{}
	}
	out := make(map[string]any, len(m)+len(t.Fields))
	//workflowcheck:ignore a copy of a map into a map: the same in any order
	for k, x := range m {
		out[k] = x
	}
	for _, f := range t.Fields {
		if out[f.Name] == nil && f.Type.Kind == TObject && !f.Type.HasDefault && f.Type.needsValue() {
			continue // an absent object stays absent unless defaults make all of it
		}
		out[f.Name] = f.Type.WithDefaults(out[f.Name])
	}
	return out
}

// needsValue reports whether an object has a required field without a
// default, which defaults alone cannot fill.
func (t *Type) needsValue() bool {
	for _, f := range t.Fields {
		if !f.Optional && !f.Type.HasDefault && (f.Type.Kind != TObject || f.Type.needsValue()) {
			return true
		}
	}
	return false
}

// JSONSchema renders t as a JSON Schema (as a plain value for encoding), for
// drivers' native structured output and for validating answers.
func (t *Type) JSONSchema() map[string]any {
	switch t.Kind {
	case TList:
		return map[string]any{"type": "array", "items": t.Elem.JSONSchema()}
	case TObject:
		props := map[string]any{}
		req := []string{}
		for _, f := range t.Fields {
			props[f.Name] = f.Type.JSONSchema()
			if !f.Optional && !f.Type.HasDefault {
				req = append(req, f.Name)
			}
		}
		return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
	case TAny:
		return map[string]any{}
	}
	return map[string]any{"type": string(t.Kind)}
}
