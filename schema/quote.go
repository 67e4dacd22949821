package schema

import (
	"bytes"
	"fmt"
	"strings"
	"unicode/utf8"
)

// The source line a diagnostic quotes is cut to a window of quoteWidth
// runes around its column, so that a one-line file of 200 KB quoted by a
// thousand diagnostics costs a thousand short strings, not a thousand copies
// of the file (docs/flow-files.md, Diagnostics).
const (
	quoteWidth  = 120
	quoteBefore = 60 // runes kept before the column when a line is cut
	ellipsis    = "…"
)

// Quote gives every diagnostic of ds in file that points at a line of src,
// and quotes none yet, that line as Source, with SourceCol the column in it
// the diagnostic points at. The loader calls it once per file it read, so
// a diagnostic quotes the text as the loader saw it.
func (ds Diagnostics) Quote(file string, src []byte) {
	var lines []int // start offsets, indexed on first use
	for i := range ds {
		d := &ds[i]
		if d.Source != "" || d.Pos.File != file || d.Pos.Line < 1 {
			continue
		}
		if lines == nil {
			src = stripBOM(src)
			lines = lineStarts(src)
		}
		if d.Pos.Line > len(lines) {
			continue
		}
		end := len(src)
		if d.Pos.Line < len(lines) {
			end = lines[d.Pos.Line] - 1
		}
		line := bytes.TrimSuffix(src[lines[d.Pos.Line-1]:end], []byte("\r"))
		d.Source, d.SourceCol = excerpt(line, d.Pos.Col)
	}
}

func lineStarts(src []byte) []int {
	starts := []int{0}
	for i, c := range src {
		if c == '\n' {
			starts = append(starts, i+1)
		}
	}
	return starts
}

// excerpt returns line, or a window of it around col marked … where cut,
// as valid UTF-8, and col's place in what it returns (0 when col is 0: no
// caret). A line of blanks only quotes nothing: there is nothing to see.
func excerpt(line []byte, col int) (string, int) {
	if len(bytes.TrimSpace(line)) == 0 {
		return "", 0
	}
	text := strings.ToValidUTF8(string(line), "\uFFFD")
	n := utf8.RuneCountInString(text)
	if col > n+1 {
		col = n + 1 // past the end: the caret stands just after the line
	}
	if n <= quoteWidth {
		return text, col
	}
	start := 0 // runes cut from the front
	if col > quoteBefore {
		start = col - quoteBefore
	}
	start = min(start, n-quoteWidth)
	runes := []rune(text)
	out := string(runes[start : start+quoteWidth])
	if start > 0 {
		out = ellipsis + out
		if col > 0 {
			col = col - start + 1
		}
	}
	if start+quoteWidth < n {
		out += ellipsis
	}
	return out, col
}

// writeQuote writes the diagnostic's source line under its header, after
// the line's number right-aligned in five columns and " | ", and under it
// a caret under the column (docs/flow-files.md, Diagnostics). A tab before
// the column is copied under it, so the caret lines up in a terminal
// however wide its tabs.
func (d Diagnostic) writeQuote(b *strings.Builder) {
	if d.Source == "" {
		return
	}
	num := fmt.Sprintf("%5d", d.Pos.Line)
	b.WriteString("\n")
	b.WriteString(num)
	b.WriteString(" | ")
	b.WriteString(d.Source)
	if d.SourceCol < 1 {
		return
	}
	b.WriteString("\n")
	b.WriteString(strings.Repeat(" ", len(num)))
	b.WriteString(" | ")
	i := 1
	for _, r := range d.Source {
		if i >= d.SourceCol {
			break
		}
		if r == '\t' {
			b.WriteByte('\t')
		} else {
			b.WriteByte(' ')
		}
		i++
	}
	for ; i < d.SourceCol; i++ { // the column just past the line's end
		b.WriteByte(' ')
	}
	b.WriteByte('^')
}
