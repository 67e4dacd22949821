package record

import (
	"encoding/json"
	"reflect"
	"testing"
	"time"

	"github.com/flowrun/flow/schema"
)

// typed is every fact struct, with the fact type it writes.
var typed = []struct {
	fact interface{ Fact() *Fact }
	typ  FactType
}{
	{RunStarted{}, FactRun}, {RunEnded{}, FactRun}, {VisitStarted{}, FactStart}, {VisitEnded{}, FactEnd},
	{WorktreeMade{}, FactWorktree}, {WorktreeRemoved{}, FactWorktree}, {ScopeLanded{}, FactLand},
	{ToolCalled{}, FactTool}, {VisitWaiting{}, FactWaiting},
}

// factField is the Fact field a typed fact's field is written to.
func factField(name string) string {
	if name == "Run" {
		return "RunID"
	}
	return name
}

// fill sets every field of the struct v points to to a value that is not
// its zero, distinct per field where the type allows.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	for i := 0; i < v.NumField(); i++ {
		f, name := v.Field(i), v.Type().Field(i).Name
		switch f.Interface().(type) {
		case time.Time:
			f.Set(reflect.ValueOf(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)))
		case string:
			f.SetString("s-" + name)
		case schema.Kind:
			f.Set(reflect.ValueOf(schema.KindAgent))
		case Status:
			f.Set(reflect.ValueOf(StatusFailed))
		case bool:
			f.SetBool(true)
		case int, int64:
			f.SetInt(int64(7 + i))
		case any:
			if f.Kind() == reflect.Interface {
				f.Set(reflect.ValueOf(map[string]any{"x": name}))
				continue
			}
			switch f.Kind() {
			case reflect.Pointer:
				f.Set(reflect.New(f.Type().Elem()))
			case reflect.Slice:
				f.Set(reflect.MakeSlice(f.Type(), 1, 1))
			case reflect.Struct: // a payload of its own (ToolCalled's Tool)
				fill(t, f)
			default:
				t.Fatalf("fill: no value for %s %s", name, f.Type())
			}
		}
	}
}

// TestTypedFactsWriteTheOneEncoding checks that each fact struct writes
// every field it has to the Fact field of its name, with its fact type,
// and that the Fact reads back as the same line: one struct per fact
// type, one encoding.
func TestTypedFactsWriteTheOneEncoding(t *testing.T) {
	covered := map[string]bool{"Type": true}
	for _, c := range typed {
		v := reflect.New(reflect.TypeOf(c.fact)).Elem()
		fill(t, v)
		f := v.Interface().(interface{ Fact() *Fact }).Fact()
		if f.Type != c.typ {
			t.Errorf("%T writes a %q fact, want %q", c.fact, f.Type, c.typ)
		}
		fv := reflect.ValueOf(f).Elem()
		for i := 0; i < v.NumField(); i++ {
			name := v.Type().Field(i).Name
			if c.typ == FactWorktree && v.Type().Name() == "WorktreeRemoved" && name == "Scope" {
				if f.Worktree == nil || f.Worktree.Scope != v.Field(i).String() || !f.Worktree.Removed {
					t.Errorf("WorktreeRemoved writes %+v", f.Worktree)
				}
				continue
			}
			got := fv.FieldByName(factField(name))
			if !got.IsValid() {
				t.Errorf("%T.%s has no Fact field", c.fact, name)
				continue
			}
			covered[factField(name)] = true
			want := v.Field(i)
			if got.Kind() == reflect.Pointer && want.Kind() != reflect.Pointer {
				got = got.Elem() // OK: a *bool in the encoding
			}
			if !reflect.DeepEqual(got.Interface(), want.Interface()) {
				t.Errorf("%T.%s = %v is written as %v", c.fact, name, want, got)
			}
		}
		b, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		var back Fact
		if err := json.Unmarshal(b, &back); err != nil {
			t.Fatal(err)
		}
		again, _ := json.Marshal(&back)
		if string(again) != string(b) {
			t.Errorf("%T: the line does not read back as itself:\n%s\n%s", c.fact, b, again)
		}
	}
	// Every field of the encoding is some fact struct's (Status is
	// RunEnded's; a run start's is always running).
	ft := reflect.TypeOf(Fact{})
	for i := 0; i < ft.NumField(); i++ {
		if name := ft.Field(i).Name; !covered[name] {
			t.Errorf("Fact.%s is no fact struct's field: add it to the struct of the fact type that carries it", name)
		}
	}
}
