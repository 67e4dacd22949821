package schema

import (
	"bytes"
	"sort"
	"unicode/utf8"
)

// Positions in the source text: where a scalar the parser reports with a
// wrong or missing position really is.

// offset returns the byte offset in src of a position (columns count
// runes), or -1 when it is not in src.
func (r *reader) offset(p Pos) int {
	r.indexLines()
	if p.Line < 1 || p.Line > len(r.lines) || p.Col < 1 {
		return -1
	}
	i := r.lines[p.Line-1]
	for col := 1; col < p.Col; col++ {
		if i >= len(r.src) || r.src[i] == '\n' {
			return -1
		}
		_, w := utf8.DecodeRune(r.src[i:])
		i += w
	}
	return i
}

func (r *reader) indexLines() {
	if r.lines == nil {
		r.lines = []int{0}
		for i, c := range r.src {
			if c == '\n' {
				r.lines = append(r.lines, i+1)
			}
		}
	}
}

// holds reports whether src has text at p.
func (r *reader) holds(p Pos, text string) bool {
	i := r.offset(p)
	return i >= 0 && bytes.HasPrefix(r.src[i:], []byte(text))
}

// find returns the position of the occurrence of text in src nearest to
// line.
func (r *reader) find(text string, line int) (Pos, bool) {
	r.indexLines()
	best, bestDist := Pos{}, -1
	for i := 0; i < len(r.src); {
		j := bytes.Index(r.src[i:], []byte(text))
		if j < 0 {
			break
		}
		at := i + j
		l := sort.SearchInts(r.lines, at+1) // lines starting at or before at
		p := Pos{File: r.file, Line: l, Col: utf8.RuneCount(r.src[r.lines[l-1]:at]) + 1}
		if d := max(p.Line-line, line-p.Line); bestDist < 0 || d < bestDist {
			best, bestDist = p, d
		}
		i = at + 1
	}
	return best, bestDist >= 0
}
