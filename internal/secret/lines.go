package secret

import (
	"bytes"
	"encoding/json"
	"strings"
)

// HoldFrom is the length of a secret's start from which Lines holds a
// line back: a field whose text so far ends with HoldFrom or more bytes of
// a secret's start keeps its line (and every later line) out of the file
// until the next text of that field says whether the secret follows. A
// shorter start is written at once, so the structure of a stream (a type
// name that happens to end like a secret begins) never stalls the file;
// at most HoldFrom-1 bytes of a secret's start can thus reach it, never
// joined to the rest.
const HoldFrom = 4

// Lines redacts a stream of JSON lines — an agent CLI's event stream, a
// model server's server-sent events — as the stream of text each field
// carries, not line by line only: the string values at one path (as
// choices.0.delta.content or assistantMessageEvent.delta) are joined in
// the order the lines come, and a secret split over any number of them is
// cut out of every one. A field whose joined text ends with the start of
// a secret holds its line back (HoldFrom) until the rest arrives: when the
// secret completes, the value where it starts says Mask and the others
// lose their part; when it does not, or the stream ends first (Flush), the
// start held is masked all the same, so a snapshot that ends in the
// middle of a key (a CLI that repeats the whole message so far) gives
// nothing of it away. Each line as written is also redacted as JSON
// (Redactor.JSON).
//
// Object keys never join, and a line that no secret touches is written
// byte for byte as it came. Lines are written in order, each one
// whole, by emit. A Lines belongs to one stream and one goroutine at a
// time; its zero value is not usable: call Redactor.Lines.
type Lines struct {
	r     *Redactor
	emit  func([]byte)
	queue []*heldLine
	bytes int // held in queue
	paths map[string]*pendingText
}

// maxHeld bounds the bytes Lines holds back: past it every held line is
// written, its held starts masked.
const maxHeld = 8 << 20

type heldLine struct {
	src  []byte
	vals []*lineValue
	refs int  // pending starts of HoldFrom bytes or more that lie in it
	done bool // written
}

type lineValue struct {
	line       *heldLine
	start, end int    // the string literal in line.src, quotes included
	text       []byte // its text, decoded
	cuts       []cut
}

// cut is a part of a value's text to replace: with Mask where a secret (or
// a held start) begins in this value, with nothing where it goes on.
type cut struct {
	from, to int
	mask     bool
}

// pendingText is the end of a field's joined text that begins a secret,
// as the parts of values it lies in.
type pendingText struct {
	segs []seg
	n    int
}

type seg struct {
	v        *lineValue
	from, to int
}

// Lines returns a Lines that hands each line, redacted, to emit.
func (r *Redactor) Lines(emit func(line []byte)) *Lines {
	return &Lines{r: r, emit: emit, paths: map[string]*pendingText{}}
}

// SetRedactor makes later lines redact r's secrets (a Log learns a key
// after it opens). What is held stays held.
func (l *Lines) SetRedactor(r *Redactor) { l.r = r }

// Line takes one line: a JSON value, without its newline. A line that is
// not JSON is redacted whole and joined to nothing.
func (l *Lines) Line(line []byte) {
	line = bytes.Clone(line)
	h := &heldLine{src: line}
	if !l.r.Empty() {
		for _, sp := range stringValues(line) {
			text := line[sp.start+1 : sp.end-1 : sp.end-1] // as it is, when nothing is escaped
			if bytes.IndexByte(text, '\\') >= 0 {
				var s string
				if json.Unmarshal(line[sp.start:sp.end], &s) != nil {
					continue
				}
				text = []byte(s)
			}
			v := &lineValue{line: h, start: sp.start, end: sp.end, text: text}
			h.vals = append(h.vals, v)
			l.join(sp.path, v)
		}
	}
	l.queue = append(l.queue, h)
	l.bytes += len(line)
	if l.bytes > maxHeld {
		l.Flush()
		return
	}
	l.release()
}

// Flush writes every line held back, masking the secret starts they end
// with: the stream has ended (or is cut), so no rest will come.
func (l *Lines) Flush() {
	for path, p := range l.paths {
		if p.n >= HoldFrom {
			markCut(p.segs, 0, p.n)
		}
		delete(l.paths, path)
	}
	for _, h := range l.queue {
		h.refs = 0
	}
	l.release()
}

// join adds v to the joined text of its field at path.
func (l *Lines) join(path string, v *lineValue) {
	old := l.paths[path]
	segs := []seg{{v: v, to: len(v.text)}}
	oldN := 0
	if old != nil {
		segs = append(old.segs, segs...)
		oldN = old.n
		if oldN >= HoldFrom {
			refLines(old.segs, -1)
		}
	}
	joined := v.text
	if old != nil {
		joined = nil
		for _, s := range segs {
			joined = append(joined, s.v.text[s.from:s.to]...)
		}
	}
	// Secrets that end in v: found before in what was held they cannot
	// be, held text being a secret's start only.
	for _, f := range l.r.forms {
		for at := max(oldN-len(f)+1, 0); at <= len(joined)-len(f); {
			i := bytes.Index(joined[at:], f)
			if i < 0 {
				break
			}
			markCut(segs, at+i, at+i+len(f))
			at += i + 1
		}
	}
	keep := l.r.pending(joined)
	if oldN >= HoldFrom && len(joined)-keep > 0 {
		// The held start did not go on into a secret: it goes masked.
		markCut(segs, 0, min(oldN, len(joined)-keep))
	}
	if keep == 0 {
		delete(l.paths, path)
		return
	}
	p := &pendingText{segs: cutSegs(segs, len(joined)-keep, len(joined)), n: keep}
	l.paths[path] = p
	if keep >= HoldFrom {
		refLines(p.segs, 1)
	}
}

// release writes the lines at the front of the queue that nothing holds.
func (l *Lines) release() {
	for len(l.queue) > 0 && l.queue[0].refs <= 0 {
		h := l.queue[0]
		l.queue[0] = nil
		l.queue = l.queue[1:]
		l.bytes -= len(h.src)
		h.done = true
		l.emit(l.r.JSON(h.render()))
	}
	if len(l.queue) == 0 {
		l.queue = nil
	}
}

// refLines adds d to the holds of the unwritten lines segs lie in, once
// per line.
func refLines(segs []seg, d int) {
	var last *heldLine
	for _, s := range segs {
		if h := s.v.line; h != last && !h.done {
			h.refs += d
			last = h
		}
	}
}

// cutSegs returns the parts of segs that make up bytes [from, to) of their
// joined text.
func cutSegs(segs []seg, from, to int) []seg {
	var out []seg
	off := 0
	for _, s := range segs {
		n := s.to - s.from
		lo, hi := max(from-off, 0), min(to-off, n)
		if lo < hi {
			out = append(out, seg{v: s.v, from: s.from + lo, to: s.from + hi})
		}
		off += n
	}
	return out
}

// markCut marks bytes [from, to) of the joined text of segs to be cut from
// the values not yet written: Mask in the first of them, nothing in the
// rest.
func markCut(segs []seg, from, to int) {
	first := true
	for _, s := range cutSegs(segs, from, to) {
		if s.v.line.done {
			continue
		}
		s.v.cuts = append(s.v.cuts, cut{from: s.from, to: s.to, mask: first})
		first = false
	}
}

// render returns the line with its values' cuts made.
func (h *heldLine) render() []byte {
	var out []byte
	at := 0
	for _, v := range h.vals {
		if len(v.cuts) == 0 {
			continue
		}
		out = append(out, h.src[at:v.start]...)
		out = append(out, quote(v.cutText())...)
		at = v.end
	}
	if out == nil {
		return h.src
	}
	return append(out, h.src[at:]...)
}

// cutText returns the value's text with its cuts made: overlapping cuts
// are one, masked if any of them is.
func (v *lineValue) cutText() string {
	masked := make([]int8, len(v.text)) // 0 kept, 1 dropped, 2 masked
	for _, c := range v.cuts {
		for i := c.from; i < c.to; i++ {
			if c.mask {
				masked[i] = 2
			} else if masked[i] == 0 {
				masked[i] = 1
			}
		}
	}
	var b strings.Builder
	for i := 0; i < len(v.text); {
		if masked[i] == 0 {
			b.WriteByte(v.text[i])
			i++
			continue
		}
		mask := false
		for ; i < len(v.text) && masked[i] != 0; i++ {
			mask = mask || masked[i] == 2
		}
		if mask {
			b.WriteString(Mask)
		}
	}
	return b.String()
}
