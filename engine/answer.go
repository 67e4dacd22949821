package engine

import (
	"fmt"
	"os"
	"unicode/utf8"

	"github.com/flowrun/flow/internal/secret"
	"github.com/flowrun/flow/rundir"
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

// bound makes res's answer a reply. A driver that stored a long answer
// gives its file; an Output longer than AnswerLimit without one is written
// to a file here, through secrets.
func bound(res *TurnResult, home, agent string, secrets *secret.Redactor) (reply, error) {
	if res.File != "" {
		size := res.Size
		if size <= 0 {
			if st, err := os.Stat(res.File); err == nil {
				size = st.Size()
			}
		}
		return reply{text: utf8Prefix(res.Output, AnswerLimit), file: res.File, size: size}, nil
	}
	if len(res.Output) <= AnswerLimit {
		return reply{text: res.Output}, nil
	}
	rp := reply{text: utf8Prefix(res.Output, AnswerLimit), size: int64(len(res.Output))}
	var err error
	rp.file, err = rundir.StoreAnswer(home, agent, res.Output, secrets)
	return rp, err
}

// settleAnswer makes a completed turn's answer what the walker takes: at most
// AnswerLimit bytes and the file that holds it whole (bound), or, for a
// typed answer, the whole answer up to TypedLimit — read back from the
// driver's file if it stored one — so that it can be parsed wherever the
// walk happens. A longer typed answer keeps its file, and the walker
// refuses it.
func settleAnswer(res *TurnResult, t *Turn) error {
	if t.OutputSchema != nil && res.File != "" && res.Size <= TypedLimit {
		b, err := os.ReadFile(res.File)
		if err != nil {
			return fmt.Errorf("reading the answer: %w", err)
		}
		res.Output, res.File, res.Size = string(b), "", 0
	}
	if t.OutputSchema != nil && res.File == "" && len(res.Output) <= TypedLimit {
		return nil
	}
	rp, err := bound(res, t.Home, t.Agent.Name, t.Secrets)
	res.Output, res.File, res.Size = rp.text, rp.file, rp.size
	return err
}

// whole returns the whole answer, for parsing a typed output: a typed
// answer comes whole (keep), unless it was longer than TypedLimit.
func (rp reply) whole() (string, error) {
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

func utf8Prefix(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
