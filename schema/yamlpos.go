package schema

import (
	"bytes"
	"sort"
	"unicode/utf8"
)

// Positions in the source text: where a scalar the parser reports with a
// wrong or missing position really is.

// offset returns the byte offset in src of a position (columns count
// runes), or -1 when it is not in src. A column is found from the nearest
// point already known on its line (the last position asked for, when it
// stands before), so that the scalars of a long one-line flow-style list,
// asked for left to right, cost their length once, not once each: counting
// from the line's start every time made such a list quadratic.
func (r *reader) offset(p Pos) int {
	r.indexLines()
	if p.Line < 1 || p.Line > len(r.lines) || p.Col < 1 {
		return -1
	}
	i, col := r.lines[p.Line-1], 1
	if c := r.cursor; c.line == p.Line && c.col <= p.Col {
		i, col = c.off, c.col
	}
	for ; col < p.Col; col++ {
		if i >= len(r.src) || r.src[i] == '\n' {
			return -1
		}
		if r.src[i] < utf8.RuneSelf {
			i++
			continue
		}
		_, w := utf8.DecodeRune(r.src[i:])
		i += w
	}
	r.cursor = cursor{line: p.Line, col: p.Col, off: i}
	return i
}

// cursor is the last position offset found, and its byte offset.
type cursor struct{ line, col, off int }

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
// line, within findLines lines of it: the parser misplaces a scalar by a
// line or two, and searching the whole file for each scalar would make a
// file of many such scalars quadratic.
func (r *reader) find(text string, line int) (Pos, bool) {
	r.indexLines()
	line = min(max(line, 1), len(r.lines))
	from := r.lines[max(line-findLines, 1)-1]
	to := len(r.src)
	if end := line + findLines; end < len(r.lines) {
		to = r.lines[end]
	}
	best, bestDist := Pos{}, -1
	for i := from; i < to; {
		j := bytes.Index(r.src[i:to], []byte(text))
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

// findLines is how far from where the parser put a scalar find looks.
const findLines = 64
