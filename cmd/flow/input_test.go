package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/flowrun/flow/flows"
	"github.com/flowrun/flow/flows/osdisk"
)

// inputFlows are flows of each kind of input, for the input parsing tests.
var inputFlows = map[string]string{
	"object": "name: object\ninput: {name: string, count: {type: integer, default: 1}, tags: {type: [string], default: []}}\nnodes:\n  - {id: a, run: [echo]}\n",
	"text":   "name: text\nnodes:\n  - {id: a, run: [echo]}\n",
	"list":   "name: list\ninput: [integer]\nnodes:\n  - {id: a, run: [echo]}\n",
}

func loadInputFlows(t testing.TB) map[string]*flows.Flow {
	t.Helper()
	dir := t.TempDir()
	out := map[string]*flows.Flow{}
	for name, src := range inputFlows {
		path := filepath.Join(dir, name+".yaml")
		if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
			t.Fatal(err)
		}
		plan, diags := flows.Load(path, flows.Options{Disk: osdisk.OS, Drivers: registry().Names()})
		if diags.HasErrors() {
			t.Fatalf("%s: %v", name, diags)
		}
		out[name] = plan.Root
	}
	return out
}

// FuzzParseInput: whatever --input, --input-file and -i hold, parsing the
// command line's input never panics, and every error names the flag it is
// about.
func FuzzParseInput(f *testing.F) {
	f.Add("object", `{"name":"a"}`, "", "count=2")
	f.Add("object", `{"nmae":"a"}`, "", "")
	f.Add("object", `[1]`, "", "name=x")
	f.Add("object", "", `{"name":`, "tags=[\"a\"]")
	f.Add("text", "plain words", "", "k=v")
	f.Add("list", "[1,2]", "", "=")
	f.Add("list", "{", "", "a")
	fl := loadInputFlows(f)
	dir := f.TempDir()
	f.Fuzz(func(t *testing.T, kind, input, file, kv string) {
		flow := fl[kind]
		if flow == nil {
			return
		}
		rf := runFlags{input: input}
		if file != "" {
			rf.inputFile = filepath.Join(dir, "in.json")
			if err := os.WriteFile(rf.inputFile, []byte(file), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if kv != "" {
			rf.inputKV = strings.Split(kv, "\n")
		}
		_, err := parseInput(flow, rf)
		if err == nil {
			return
		}
		if msg := err.Error(); !strings.Contains(msg, "--input") && !strings.HasPrefix(msg, "-i") {
			t.Errorf("the error %q names no flag", msg)
		}
	})
}

// TestParseInputAgreesWithTheDeclaration: a key the input declares is
// taken, one it does not is refused by the flag that brought it.
func TestParseInputAgreesWithTheDeclaration(t *testing.T) {
	fl := loadInputFlows(t)
	for _, tt := range []struct {
		kind string
		rf   runFlags
		err  string // "" for none
	}{
		{kind: "object", rf: runFlags{input: `{"name":"a","count":2}`}},
		{kind: "object", rf: runFlags{inputKV: []string{"name=a", "tags=[\"x\"]"}}},
		{kind: "object", rf: runFlags{input: `{"name":"a","cuont":2}`}, err: `--input: flow object has no input "cuont"; did you mean "count"?`},
		{kind: "object", rf: runFlags{inputKV: []string{"name=a", "tag=x"}}, err: `-i tag: flow object has no input "tag"; did you mean "tags"?`},
		{kind: "object", rf: runFlags{input: `{"name":"a"}`, inputKV: []string{"zzz=1"}}, err: `-i zzz: flow object has no input "zzz" (its inputs are name, count, tags)`},
		{kind: "text", rf: runFlags{inputKV: []string{"a=b"}}, err: "-i: flow text takes a string input"},
	} {
		_, err := parseInput(fl[tt.kind], tt.rf)
		if got := errText(err); tt.err == "" && err != nil || tt.err != "" && !strings.HasPrefix(got, tt.err) {
			t.Errorf("parseInput(%s, %+v) = %q, want %q", tt.kind, tt.rf, got, tt.err)
		}
	}
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// Integers in --input and -i stay exact past 2^53 (9007199254740993 became
// …992 through a float64), and a whole number past int64 is refused, naming
// where it stands, rather than rounded (issue 23).
func TestInputIntegersAreExact(t *testing.T) {
	fl := loadInputFlows(t)
	in, err := parseInput(fl["list"], runFlags{input: "[9007199254740993, -9223372036854775807, 2.5]"})
	if err != nil {
		t.Fatal(err)
	}
	if got := in.([]any); got[0] != int64(9007199254740993) || got[1] != int64(-9223372036854775807) || got[2] != 2.5 {
		t.Errorf("--input read %#v", got)
	}
	in, err = parseInput(fl["object"], runFlags{inputKV: []string{"count=9007199254740993"}})
	if err != nil || in.(map[string]any)["count"] != int64(9007199254740993) {
		t.Errorf("-i count= read %#v (%v)", in, err)
	}
	_, err = parseInput(fl["object"], runFlags{input: `{"name": "a", "tags": [1, 18446744073709551616]}`})
	if err == nil || !strings.Contains(err.Error(), "18446744073709551616 at tags[1] is a whole number too large") || !strings.HasPrefix(err.Error(), "--input") {
		t.Errorf("a whole number past int64: %v", err)
	}
	if _, err := parseInput(fl["list"], runFlags{input: "[1] [2]"}); err == nil {
		t.Error("two JSON values were taken as one input")
	}
}
