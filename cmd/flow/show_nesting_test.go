package main

import (
	"strings"
	"testing"
	"time"

	"github.com/flowrun/flow/engine/record"
)

// TestShowNestsVisitsByPath: map items that ran at once interleave in the
// journal; flow show still puts each visit under its own parent
// (fix[1]/rounds#1/mark under fix[1]/rounds, not under fix[2]/rounds,
// which started just before it).
func TestShowNestsVisitsByPath(t *testing.T) {
	ok := true
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var facts []*record.Fact
	start := func(v string) { facts = append(facts, &record.Fact{Type: record.FactStart, Visit: v, Time: at}) }
	end := func(v string) {
		facts = append(facts, &record.Fact{Type: record.FactEnd, Visit: v, Time: at, OK: &ok, Output: "x"})
	}
	start("fix")
	start("fix[1]/rounds")
	start("fix[2]/rounds")
	start("fix[1]/rounds#1/mark")
	start("fix[2]/rounds#1/mark")
	end("fix[2]/rounds#1/mark")
	end("fix[1]/rounds#1/mark")
	start("fix[1]/rounds#2/mark")
	end("fix[2]/rounds")
	end("fix[1]/rounds#2/mark")
	end("fix[1]/rounds")
	end("fix")
	start("par")
	start("par/left/a")
	start("par/right/b")
	end("par/left/a")
	end("par/right/b")
	end("par")
	var got []string
	for _, row := range visitRows(facts) {
		indent, f := row[:len(row)-len(strings.TrimLeft(row, " "))], strings.Fields(row)
		got = append(got, indent+f[0]+" "+f[1]) // the mark and the visit
	}
	want := []string{
		"✓ fix",
		"  ✓ fix[1]/rounds",
		"    ✓ fix[1]/rounds#1/mark",
		"    ✓ fix[1]/rounds#2/mark",
		"  ✓ fix[2]/rounds",
		"    ✓ fix[2]/rounds#1/mark",
		"✓ par",
		"  ✓ par/left/a",
		"  ✓ par/right/b",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("flow show's rows:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
