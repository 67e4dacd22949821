package engine

import (
	"fmt"
	"unicode/utf8"
)

// AnswerLimit is the most of an answer that is held in memory and handed
// on: the journal, the events, output.json, report.html, the next turn's
// reads and the expressions (x.output) get at most this many bytes, cut
// on a UTF-8 boundary. A longer answer is stored once, whole, in a file
// in the visit's home, whose path goes with the prefix (docs/drivers.md).
const AnswerLimit = 50 << 10

// TypedLimit is the largest typed answer that is parsed: a typed output
// is held and journaled whole, so an answer longer than this fails the
// visit `schema` instead of filling memory.
const TypedLimit = 1 << 20

// reply is a turn's answer as the engine holds it: at most AnswerLimit
// bytes of text, and the file with the whole answer when it is longer.
type reply struct {
	text string
	file string
	size int64
}

// whole returns the whole answer, for parsing a typed output: a typed
// answer comes whole (keep), unless it was longer than TypedLimit — kept
// in a file by the local leaves, or whole from a host that keeps none.
func (rp reply) whole() (string, error) {
	if rp.file == "" && len(rp.text) > TypedLimit {
		return "", fmt.Errorf("the answer is %d bytes, more than the %d a typed output may have", len(rp.text), TypedLimit)
	}
	if rp.file == "" {
		return rp.text, nil
	}
	return "", fmt.Errorf("the answer is %d bytes, more than the %d a typed output may have (it is in %s)", rp.size, TypedLimit, rp.file)
}

// shown is the answer as a prompt quotes it: the text, and where the rest
// is when there is more.
func (rp reply) shown() string {
	if rp.file == "" {
		return rp.text
	}
	return rp.text + fmt.Sprintf("\n\n[… the whole answer, %d bytes, is in %s]", rp.size, rp.file)
}

// UTF8Prefix is at most n bytes of s, cut where a rune starts: an answer's
// prefix for every host.
func UTF8Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
