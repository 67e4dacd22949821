package engine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/schema"
)

// The hand-written event encoder must produce what encoding/json would.
func TestAppendEventMatchesEncodingJSON(t *testing.T) {
	ok, in := true, int64(12)
	events := []*Event{
		{Time: time.Date(2026, 11, 29, 1, 2, 3, 456789, time.UTC), Type: "visit.start", Run: "r", Visit: "look[3]/scout", Node: "scout", Kind: "agent"},
		{Time: time.Now(), Type: "progress", Visit: "a", Driver: "pi", Model: "m/x", Activity: "using \"grep\" <&> \n\t\x01 é \u2028 \xff", Tokens: 42},
		{Time: time.Now(), Type: "visit.end", Visit: "a", OK: &ok, Usage: &Usage{Input: &in, WallMS: 5}, WallMS: 7,
			Error: &Failure{Kind: schema.FailTimeout, Message: "slow", Visit: "a"}},
		{Time: time.Now(), Type: "run.end", Status: "failed", Dir: "/tmp/x"},
		{Time: time.Now(), Type: "visit.end", Usage: &Usage{Input: &in, Output: &in, CacheRead: &in, CacheWrite: &in, Turns: &in, Cost: func() *float64 { c := 0.0123; return &c }(), WallMS: 3, BusyMS: 2}},
	}
	for _, e := range events {
		want, err := json.Marshal(e)
		if err != nil {
			t.Fatal(err)
		}
		if got := appendEvent(nil, e); string(got) != string(want)+"\n" {
			t.Errorf("appendEvent:\n got %s\nwant %s", got, want)
		}
	}
}

// Times are formatted as encoding/json formats them, in any zone, with any
// nanoseconds, also when the same second comes back in another zone.
func TestAppendTimeMatchesEncodingJSON(t *testing.T) {
	east := time.FixedZone("east", 5*3600+30*60)
	west := time.FixedZone("west", -7*3600)
	base := time.Date(2026, 11, 29, 23, 59, 59, 0, time.UTC)
	var times []time.Time
	for _, ns := range []int{0, 1, 10, 120, 123456789, 100000000, 999999999, 5000} {
		for _, loc := range []*time.Location{time.UTC, east, west, time.Local, time.UTC} {
			times = append(times, base.Add(time.Duration(ns)).In(loc), base.Add(time.Second+time.Duration(ns)).In(loc))
		}
	}
	times = append(times, time.Now(), time.Date(12000, 1, 1, 0, 0, 0, 0, time.UTC), time.Date(-3, 1, 1, 0, 0, 0, 7, time.UTC))
	for _, tm := range times {
		want, err := json.Marshal(tm)
		if err != nil {
			want = []byte(`"` + tm.Format(time.RFC3339Nano) + `"`)
		}
		if got := appendTime(nil, tm); string(got) != string(want) {
			t.Errorf("appendTime(%v) = %s, want %s", tm, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	long := strings.Repeat("look[12]/check ", 4)
	for _, s := range []string{"", "plain", "\"quoted\"", "<b>&</b>", "\x00\x1f", "é\u2028\u2029", "\xff\xfe", long, long + "\n", "\t" + long} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		want, _ := json.Marshal(s)
		// Appended to nothing, and after bytes already there, with room
		// for the string and without.
		for _, b := range [][]byte{nil, []byte(`{"a":`), make([]byte, 3, 8), make([]byte, 1, 1<<10)} {
			prefix := string(b)
			if got := appendString(b, s); string(got) != prefix+string(want) {
				t.Fatalf("appendString(%q, %q) = %s, want %s", prefix, s, got, prefix+string(want))
			}
		}
	})
}

func TestAppendFactMatchesEncodingJSON(t *testing.T) {
	ok, no := true, false
	in := int64(3)
	facts := []*Fact{
		{Type: "start", Time: time.Now(), Visit: "a/b", Node: "b", Kind: "run"},
		{Type: "end", Time: time.Now(), Visit: "a", Node: "a", OK: &ok, Output: "text <b>", Usage: &Usage{Input: &in}, Model: "m", Timeout: "30m0s", Attempts: 2, Session: "s", Scope: "x\x00y", WallMS: 9},
		{Type: "end", Time: time.Now(), Visit: "m[2]/x", OK: &no, Output: map[string]any{"passed": false, "exit": 1, "report": "red"}, Skipped: true,
			Error: &Failure{Kind: schema.FailChild, Message: "below", Visit: "m", Cause: &Failure{Kind: schema.FailProvider, Message: "x", Visit: "m[2]/x"}}},
		{Type: "run", Time: time.Now(), RunID: "r1", Flow: "f", Status: "running", Input: map[string]any{"goal": "g"}, Resumed: true},
		{Type: "end", Time: time.Now(), Visit: "e", OK: &ok, Output: ""},
		{Type: "end", Time: time.Now(), Visit: "n1", Node: "n1", Kind: "agent", OK: &ok, Output: "ok", Usage: &Usage{Turns: &in, WallMS: 1}, Timeout: "30m0s", Attempts: 1, WallMS: 1},
		{Type: "end", Time: time.Unix(1e9, 0), Visit: "q\"[1]", Node: "n<&>", Kind: "run\u2028", OK: &no, Usage: &Usage{}},
	}
	for _, f := range facts {
		want, err := json.Marshal(f)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendFact(nil, f)
		if err != nil || string(got) != string(want)+"\n" {
			t.Errorf("appendFact: %v\n got %s\nwant %s", err, got, want)
		}
	}
}

func TestAppendAnyMatchesEncodingJSON(t *testing.T) {
	values := []any{
		nil, "s", true, 0, -12, int64(1 << 40), 1.5, 0.1, 1e21, 1e-7, 123456789.0, -0.0, 3.0,
		[]any{}, []any{1, "a", nil, []any{false}},
		map[string]any{}, map[string]any{"b": 1, "a": map[string]any{"z": []any{"<&>"}, "y": 2.25}},
		map[string]any{"passed": true, "exit": 0, "report": "ok\n"},
		[]string{"typed", "slice"}, map[string]int{"other": 1},
		noError, map[string]any{"kind": "", "message": "", "visit": "x"}, // the shared error value, and one that is not it
		map[string]any{"ok": true, "error": noError, "output": map[string]any{"ok": true, "error": noError}},
	}
	for _, v := range values {
		want, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		got, err := appendAny(nil, v)
		if err != nil || string(got) != string(want) {
			t.Errorf("appendAny(%#v) = %s, %v; want %s", v, got, err, want)
		}
	}
}

func FuzzAppendFloat(f *testing.F) {
	for _, x := range []float64{0, 1, -1, 0.1, 1e20, 1e21, 1e-6, 1e-7, 123.456, 5e-324} {
		f.Add(x)
	}
	f.Fuzz(func(t *testing.T, x float64) {
		want, err := json.Marshal(x)
		got, gerr := appendFloat(nil, x)
		if (err != nil) != (gerr != nil) || (err == nil && string(got) != string(want)) {
			t.Fatalf("appendFloat(%v) = %s, %v; want %s, %v", x, got, gerr, want, err)
		}
	})
}

// usage.json is the object encoding/json would write for the same totals.
func TestUsageJSONMatchesEncodingJSON(t *testing.T) {
	book := newUsageBook(3)
	in, out := int64(100), int64(7)
	cost := 0.25
	turns, cached := int64(2), int64(40)
	book.add("a#1/x", "x", "coder", Usage{Input: &in, Output: &out, Cost: &cost, Turns: &turns, CacheRead: &cached, WallMS: 5, BusyMS: 4})
	book.add("a#2/x", "x", "coder", Usage{Input: &in, WallMS: 3})
	book.add("b", "b", "tool <&>", Usage{WallMS: 1})
	book.add("a#1/x", "x", "coder", Usage{Output: &out, WallMS: 2}) // the same visit again counts once, summed
	for i := range 600 {                                            // enough to fill several chunks
		book.add(fmt.Sprintf("m[%d]/w", i), "w", "coder", Usage{Turns: &turns, WallMS: int64(i)})
	}
	if len(book.visits) < 3 {
		t.Fatalf("%d chunks of visits, want several", len(book.visits))
	}
	visits := map[string]*tally{}
	for _, v := range book.allVisits() {
		if visits[v.visit] == nil {
			visits[v.visit] = &tally{}
		}
		visits[v.visit].merge(&v.tally)
	}
	want, err := json.Marshal(map[string]any{"total": book.overall.usage(), "visits": usages(visits), "nodes": usages(book.nodes), "agents": usages(book.agents)})
	if err != nil {
		t.Fatal(err)
	}
	var got bytes.Buffer
	sp := &spool{w: &got}
	book.encode(sp)
	sp.write()
	if got.String() != string(want)+"\n" {
		t.Fatalf("usage.json:\n got %s\nwant %s", got.String(), want)
	}
}

func usages(m map[string]*tally) map[string]Usage {
	out := map[string]Usage{}
	for k, t := range m {
		out[k] = t.usage()
	}
	return out
}

// sortStrings orders keys as slices.Sort does, NUL bytes, shared prefixes
// and keys shorter than eight bytes included.
func FuzzSortStrings(f *testing.F) {
	f.Add("n1,n10,n2,n1\x00,review#2/check,review#2/code,,a,\xff,\x00")
	f.Fuzz(func(t *testing.T, list string) {
		keys := strings.Split(list, ",")
		want := slices.Clone(keys)
		slices.Sort(want)
		sortStrings(keys)
		if !slices.Equal(keys, want) {
			t.Fatalf("sortStrings = %q, want %q", keys, want)
		}
	})
}

// appendMS writes what time.Duration's String does for whole milliseconds.
func TestAppendMSMatchesDurationString(t *testing.T) {
	for _, ms := range []int64{-1500, 0, 1, 9, 10, 999, 1000, 1001, 1010, 1100, 1500, 59999, 60000, 61500, 3599999, 3600000, 3723004, 90061001} {
		want := (time.Duration(ms) * time.Millisecond).String()
		if got := string(appendMS(nil, ms)); got != want {
			t.Errorf("appendMS(%d) = %q, want %q", ms, got, want)
		}
	}
}
