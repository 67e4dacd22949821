package schema

import (
	"bytes"
	"unicode/utf8"
)

// mappingKeys is the most keys one mapping may hold. goccy/go-yaml parses a
// block mapping by recursing once per key and copying the keys parsed so
// far: 10,000 keys take half a second, 40,000 nine. No flow comes near it;
// a generated one splits its mappings.
const mappingKeys = 10_000

// pathBytesPerNode is the share of limits.nodes that bounds the key paths
// the parser keeps: goccy/go-yaml stores with every node the text of its
// path from the root ($.nodes[3].run), so a long key enclosing many nodes
// costs its length once per node.
const pathBytesPerNode = 64

// prescan reads the text once, before the parser, and refuses what would
// make the parser's time or memory grow faster than the file: nesting
// (goccy/go-yaml takes 97 s and 16 GB for 200 KB of `[`), a mapping of
// very many keys, or long keys enclosing many nodes. It reports the first
// such place and returns false.
//
// It is an estimate, linear in the text, that follows YAML only as far as
// these costs need: quotes, comments, block scalars, flow brackets, and the
// indentation of block lines. The nesting it estimates is never far below
// the true one and rarely above twice it, so it is held to twice
// limits.depth; the exact depth is checked on the parsed tree.
func (r *reader) prescan(l Limits) bool {
	s := prescan{r: r, l: l, blockIndent: -1, plainIndent: -1, budget: l.Nodes * pathBytesPerNode}
	text := r.src
	quoteLine := 0
	for lineNo := 1; len(text) > 0; lineNo++ {
		end := bytes.IndexByte(text, '\n')
		if end < 0 {
			end = len(text)
		}
		quoted := s.quote != 0
		if !s.line(lineNo, text[:end]) {
			return false
		}
		if !quoted && s.quote != 0 {
			quoteLine = lineNo
		}
		text = text[min(end+1, len(text)):]
	}
	if s.quote != 0 {
		// A quote that never closes is either a YAML error, which the
		// parser reports at once, or a quote this scan saw where YAML has
		// none; lest what follows escape the scan, count its brackets and
		// dashes with no regard for quotes.
		return s.roughly(quoteLine)
	}
	return true
}

// roughly estimates the nesting of the text from line on by its brackets and
// its lines' leading dashes alone.
func (s *prescan) roughly(from int) bool {
	text := s.r.src
	for i := 1; i < from; i++ {
		text = text[bytes.IndexByte(text, '\n')+1:]
	}
	depth := 0
	for lineNo := from; len(text) > 0; lineNo++ {
		end := bytes.IndexByte(text, '\n')
		if end < 0 {
			end = len(text)
		}
		line, dashes := text[:end], 0
		for i, c := range line {
			switch {
			case c == '[' || c == '{':
				depth++
			case (c == ']' || c == '}') && depth > 0:
				depth--
			case c == '-' && (i+1 == len(line) || line[i+1] == ' ') && bytes.Count(line[:i], []byte("- ")) == dashes && len(bytes.TrimLeft(line[:i], " -")) == 0:
				dashes++
			}
			if depth+dashes > 2*s.l.Depth+8 {
				return s.fail(lineNo, line, i, "depth")
			}
		}
		text = text[min(end+1, len(text)):]
	}
	return true
}

type prescan struct {
	r           *reader
	l           Limits
	flow        []flowLevel // open [ and {
	quote       byte        // the quote of a quoted scalar that goes on past the line, or 0
	blockIndent int         // the indentation of a block scalar's header line, or -1
	plainIndent int         // the indentation of a line that ended in a plain scalar, which may go on, or -1
	valueStart  bool        // at the end of the last line in a flow collection: a value may start
	content     int         // where the current block line's content starts, after its - and ?
	block       []blockLevel
	inline      int // block indicators so far on this line
	path        int // the length of the path to the current line
	budget      int // path bytes the parser may still keep
}

type blockLevel struct {
	indent int
	keys   int // lines at this indentation that start with a key
	seg    int // the path text this level adds: its key's length, or an index
}

type flowLevel struct {
	mapping bool
	entries int
	start   int // where the current entry's first scalar starts on its line
	seg     int // the path text the current entry's key adds
}

func (s *prescan) depth() int { return len(s.flow) + len(s.block) + s.inline }

// fail reports a limit passed at byte i of line.
func (s *prescan) fail(lineNo int, line []byte, i int, what string) bool {
	p := Pos{File: s.r.file, Line: lineNo, Col: utf8.RuneCount(line[:min(i, len(line))]) + 1}
	switch what {
	case "depth":
		s.r.diags.tooDeep(p, s.l)
	case "keys":
		s.r.diags.Add(p, CodeLimit, "split the mapping: the YAML parser's time grows with the square of a mapping's keys",
			"a mapping holds more than %d keys by here", mappingKeys)
	case "path":
		s.r.diags.Add(p, CodeLimit, raise("limits.nodes", s.l.Nodes)+"; or shorten the keys that enclose this part",
			"the keys enclosing the nodes up to here are so long that parsing would keep more than limits.nodes × %d bytes of them", pathBytesPerNode)
	}
	return false
}

// line scans one line; it returns false once a limit is passed.
func (s *prescan) line(lineNo int, l []byte) bool {
	l = bytes.TrimSuffix(l, []byte("\r"))
	i := 0
	valueStart := s.quote == 0
	if len(s.flow) > 0 {
		valueStart = s.quote == 0 && s.valueStart // a flow scalar may go on past the line
	}
	if s.quote == 0 && len(s.flow) == 0 {
		for i < len(l) && l[i] == ' ' {
			i++
		}
		rest := bytes.TrimSpace(l[i:])
		if s.blockIndent >= 0 {
			if len(rest) == 0 || i > s.blockIndent {
				return true // a block scalar's text
			}
			s.blockIndent = -1
		}
		if len(rest) == 0 || rest[0] == '#' {
			return true
		}
		if s.plainIndent >= 0 && i > s.plainIndent {
			return true // the next line of a plain scalar: text, whatever it holds
		}
		s.plainIndent = -1
		s.content = i
		if !s.enter(i, rest) {
			return s.fail(lineNo, l, i, "keys")
		}
		if s.depth() > 2*s.l.Depth+8 {
			return s.fail(lineNo, l, i, "depth")
		}
	}
	for ; i < len(l); i++ {
		c := l[i]
		if s.quote != 0 {
			switch {
			case c == '\\' && s.quote == '"':
				i++
			case c == '\'' && s.quote == '\'' && i+1 < len(l) && l[i+1] == '\'':
				i++
			case c == s.quote:
				s.quote, valueStart = 0, false
			}
			continue
		}
		if c == '#' && (i == 0 || l[i-1] == ' ' || l[i-1] == '\t') {
			break
		}
		blankAfter := i+1 == len(l) || l[i+1] == ' ' || l[i+1] == '\t'
		node := false // c starts a node, which the parser gives a path
		switch {
		case c == ' ' || c == '\t':
		case (c == '[' || c == '{') && (len(s.flow) > 0 || valueStart):
			s.flow = append(s.flow, flowLevel{mapping: c == '{'})
			valueStart, node = true, true
			if s.depth() > 2*s.l.Depth+8 {
				return s.fail(lineNo, l, i, "depth")
			}
		case (c == ']' || c == '}') && len(s.flow) > 0:
			s.flow = s.flow[:len(s.flow)-1]
			valueStart = false
		case len(s.flow) > 0 && c == ',':
			f := &s.flow[len(s.flow)-1]
			if f.entries++; f.mapping && f.entries >= mappingKeys {
				return s.fail(lineNo, l, i, "keys")
			}
			f.seg = 0
			valueStart = true
		case len(s.flow) > 0 && c == ':':
			f := &s.flow[len(s.flow)-1]
			f.seg = max(i-f.start, 0) + 2
			valueStart = true
		case (c == '"' || c == '\'') && valueStart:
			s.quote, node = c, true
			if len(s.flow) > 0 {
				s.flow[len(s.flow)-1].start = i
			}
		case len(s.flow) == 0 && valueStart && (c == '-' || c == '?') && blankAfter:
			s.inline++
			node = true
			s.content = i + 2
			if s.depth() > 2*s.l.Depth+8 {
				return s.fail(lineNo, l, i, "depth")
			}
		case len(s.flow) == 0 && valueStart && (c == '|' || c == '>'):
			s.blockIndent = 0 // its text is indented more than this line
			if len(s.block) > 0 {
				s.blockIndent = s.block[len(s.block)-1].indent
			}
			return s.spend(lineNo, l, i)
		case valueStart && (c == '&' || c == '!'):
			for i+1 < len(l) && l[i+1] != ' ' && l[i+1] != '\t' {
				i++ // an anchor or a tag before the value
			}
		case len(s.flow) == 0 && c == ':' && blankAfter:
			s.inline++
			valueStart = true
			if s.depth() > 2*s.l.Depth+8 {
				return s.fail(lineNo, l, i, "depth")
			}
		default:
			node = valueStart
			if node && len(s.flow) > 0 {
				s.flow[len(s.flow)-1].start = i
			}
			valueStart = false
		}
		if node && !s.spend(lineNo, l, i) {
			return false
		}
	}
	s.valueStart = valueStart
	if s.quote == 0 && len(s.flow) == 0 && !valueStart {
		s.plainIndent = s.content // this line's value may go on below, indented more than its key
	}
	return true
}

// enter opens or continues the block level of a line indented by indent
// whose text is rest, and counts a key line among its siblings.
func (s *prescan) enter(indent int, rest []byte) bool {
	for len(s.block) > 0 && s.block[len(s.block)-1].indent > indent {
		s.block = s.block[:len(s.block)-1]
	}
	if len(s.block) == 0 || s.block[len(s.block)-1].indent < indent {
		s.block = append(s.block, blockLevel{indent: indent})
	}
	s.inline = 0
	top := &s.block[len(s.block)-1]
	// The path text this level adds: an index ([123]) and the key the line
	// opens, if any.
	key := bytes.Index(rest, []byte(": "))
	if key < 0 && bytes.HasSuffix(rest, []byte(":")) {
		key = len(rest) - 1
	}
	top.seg = 8 + max(key, 0)
	if key > 0 && rest[0] != '-' && rest[0] != '?' {
		if top.keys++; top.keys > mappingKeys {
			return false
		}
	}
	s.path = 0
	for _, b := range s.block {
		s.path += b.seg
	}
	return true
}

// spend counts the path the parser keeps for one more node.
func (s *prescan) spend(lineNo int, l []byte, i int) bool {
	cost := s.path + 8
	for _, f := range s.flow {
		cost += 8 + f.seg
	}
	s.budget -= cost
	if s.budget < 0 {
		return s.fail(lineNo, l, i, "path")
	}
	return true
}
