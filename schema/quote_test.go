package schema

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// TestQuoteCaret pins the quoted form of a diagnostic: the source line
// after its number, and the caret under the column, not one off on
// either side, whatever stands before it (tabs, runes of several bytes,
// a cut of a long line).
func TestQuoteCaret(t *testing.T) {
	long := strings.Repeat("abcdefghij", 100) // 1,000 runes
	for _, tc := range []struct {
		name string
		src  string
		pos  Pos
		want string // what follows the header line, up to the hint
	}{{
		name: "ascii",
		src:  "name: f\nnodes:\n  - id: a\n    agent: reviwer\n",
		pos:  Pos{Line: 4, Col: 12},
		want: "    4 |     agent: reviwer\n      |            ^",
	}, {
		name: "first column",
		src:  "nodes: []\n",
		pos:  Pos{Line: 1, Col: 1},
		want: "    1 | nodes: []\n      | ^",
	}, {
		name: "tabs are copied under",
		src:  "run: \"a\tb\tc\"\n",
		pos:  Pos{Line: 1, Col: 11},
		want: "    1 | run: \"a\tb\tc\"\n      |        \t \t^",
	}, {
		name: "runes count as one column",
		src:  "prompt: \"Résumé — ${{ nada }}\"\n",
		pos:  Pos{Line: 1, Col: 23},
		want: "    1 | prompt: \"Résumé — ${{ nada }}\"\n      |                       ^",
	}, {
		name: "past the end of the line",
		src:  "a: b\n",
		pos:  Pos{Line: 1, Col: 9},
		want: "    1 | a: b\n      |     ^",
	}, {
		name: "CRLF and a byte order mark",
		src:  "\uFEFFname: f\r\nnodes: x\r\n",
		pos:  Pos{Line: 2, Col: 8},
		want: "    2 | nodes: x\n      |        ^",
	}, {
		name: "a wide line number",
		src:  strings.Repeat("\n", 123456) + "x: y\n",
		pos:  Pos{Line: 123457, Col: 4},
		want: "123457 | x: y\n       |    ^",
	}, {
		name: "a blank line quotes nothing",
		src:  "a: b\n   \n",
		pos:  Pos{Line: 2, Col: 2},
	}, {
		name: "past the last line quotes nothing",
		src:  "a: b\n",
		pos:  Pos{Line: 7, Col: 1},
	}, {
		name: "a long line is cut around the column",
		src:  long + "\n",
		pos:  Pos{Line: 1, Col: 505}, // the e of the 51st abcdefghij
		want: "    1 | …" + long[445:565] + "…\n      | " + strings.Repeat(" ", 60) + "^",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			tc.pos.File = "f.yaml"
			ds := Diagnostics{{Pos: tc.pos, Code: CodeKey, Summary: "s", Detail: "d"}}
			ds.Quote("f.yaml", []byte(tc.src))
			got := ds[0].String()
			head := tc.pos.String() + ": " + string(CodeKey) + ": s"
			want := head + "\n\thint: d"
			if tc.want != "" {
				want = head + "\n" + tc.want + "\n\thint: d"
			}
			if got != want {
				t.Errorf("got:\n%s\nwant:\n%s", got, want)
			}
		})
	}
}

// TestQuoteOtherFile checks that a file's quote reaches only its own
// diagnostics and keeps a quote already made.
func TestQuoteOtherFile(t *testing.T) {
	ds := Diagnostics{
		{Pos: Pos{File: "a.yaml", Line: 1, Col: 1}},
		{Pos: Pos{File: "b.yaml", Line: 1, Col: 1}},
	}
	ds.Quote("a.yaml", []byte("from a\n"))
	ds.Quote("b.yaml", []byte("from b\n"))
	ds.Quote("a.yaml", []byte("again\n"))
	if ds[0].Source != "from a" || ds[1].Source != "from b" {
		t.Errorf("sources %q, %q; want from a, from b", ds[0].Source, ds[1].Source)
	}
}

// TestQuoteBounded checks that a one-line file of 200 KB quoted by many
// diagnostics keeps each quote short and valid UTF-8, even cut through
// an invalid byte.
func TestQuoteBounded(t *testing.T) {
	line := strings.Repeat("é\xff", 100_000)
	var ds Diagnostics
	for col := 1; col < 200_000; col += 997 {
		ds = append(ds, Diagnostic{Pos: Pos{File: "f.yaml", Line: 1, Col: col}})
	}
	ds.Quote("f.yaml", []byte(line))
	for _, d := range ds {
		if n := utf8.RuneCountInString(d.Source); n > quoteWidth+2 || !utf8.ValidString(d.Source) {
			t.Fatalf("col %d: quote of %d runes (valid %v)", d.Pos.Col, n, utf8.ValidString(d.Source))
		}
		if d.SourceCol < 1 || d.SourceCol > quoteWidth+2 {
			t.Fatalf("col %d: caret at %d of the quote", d.Pos.Col, d.SourceCol)
		}
	}
}
