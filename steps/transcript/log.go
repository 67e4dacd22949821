package transcript

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/internal/secret"
)

// Header opens a turn in the JSONL transcript, as the line
// {"flow_turn_start": {...}}, so that a reader of the raw file (`flow tail`)
// can tell the turns of a memory scope apart, and see the prompt, while a
// turn still runs.
type Header struct {
	Visit  string `json:"visit"`
	Driver string `json:"driver"`
	Model  string `json:"model,omitempty"`
	// Session is the session the turn continues, if any.
	Session string    `json:"session,omitempty"`
	Started time.Time `json:"started"`
	// System is the agent's instructions.
	System string `json:"system,omitempty"`
	Prompt string `json:"prompt"`
}

// Turn summarises one turn for the readable transcript: its Header's
// fields, then how it ended.
type Turn struct {
	Visit   string    `json:"visit"`
	Driver  string    `json:"driver"`
	Model   string    `json:"model,omitempty"`
	Session string    `json:"session,omitempty"`
	Started time.Time `json:"started"`
	WallMS  int64     `json:"wall_ms"`
	Status  string    `json:"status"`
	System  string    `json:"system,omitempty"`
	Prompt  string    `json:"prompt"`
	Steps   []Step    `json:"steps,omitempty"`
	// Answer is the answer, or its first engine.AnswerLimit bytes when
	// AnswerFile holds it whole.
	Answer      string       `json:"answer"`
	AnswerFile  string       `json:"answer_file,omitempty"`
	Usage       record.Usage `json:"usage"`
	Diagnostics []string     `json:"diagnostics,omitempty"`
	Stderr      string       `json:"stderr,omitempty"`
}

// Step is one thing that happened inside a turn, in order.
type Step struct {
	// Kind is one of "text", "thinking", "tool" (a call), "result" (a tool's
	// output) and "error".
	Kind  string `json:"kind"`
	Title string `json:"title,omitempty"` // e.g. the tool's name
	Text  string `json:"text"`
}

// Log is the transcript of one turn being written. Its zero value is not
// usable; call Open. A nil *Log writes nothing and has no paths: a driver
// whose turn has no home keeps no transcript.
type Log struct {
	dir, agent string
	head       Header
	headed     bool // the header is written
	f          *os.File
	w          *bufio.Writer
	secrets    *secret.Redactor
	lines      *secret.Lines // the raw stream, redacted across its lines
	raw        int64         // bytes of the raw stream written this turn
	cut        bool          // the raw stream passed MaxRaw
	err        error
}

// MaxRaw bounds the raw stream a transcript keeps of one turn: an agent
// that streams a huge answer has it stored once, in its answer file
// (engine.TurnResult.File), not a second time here. Past it, one line
// {"flow_raw_cut": {"after_bytes": N}} says the rest was left out.
const MaxRaw = 8 << 20

// Open opens <home>/<agent>.jsonl for appending, creating home if needed
// (the engine leaves that to the first writer), for the turn h begins; h
// goes out before the turn's first line. Everything written is redacted of
// secrets (the turn's engine.Turn.Secrets). An agent name that could leave
// home ("..", a slash) is replaced in the file names.
func Open(home, agent string, h Header, secrets *secret.Redactor) (*Log, error) {
	l := &Log{dir: home, agent: agent, head: h, secrets: secrets}
	l.lines = secrets.Lines(l.write)
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("opening transcript: %w", err)
	}
	f, err := os.OpenFile(l.Path(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("opening transcript: %w", err)
	}
	l.f, l.w = f, bufio.NewWriter(f)
	return l, nil
}

// Path returns the path of the JSONL transcript, or "" for a nil Log.
func (l *Log) Path() string {
	if l == nil {
		return ""
	}
	return filepath.Join(l.dir, FileName(l.agent)+".jsonl")
}

// HTMLPath returns the path of the readable transcript, or "" for a nil
// Log.
func (l *Log) HTMLPath() string {
	if l == nil {
		return ""
	}
	return filepath.Join(l.dir, FileName(l.agent)+".html")
}

// Redact makes the Log also replace every occurrence of each secret (of
// secret.MinLen bytes or more) with "[redacted]". The header waits for the
// first line written, so that it is redacted too.
func (l *Log) Redact(secrets ...string) {
	if l == nil {
		return
	}
	l.secrets = l.secrets.With(secrets...)
	l.lines.SetRedactor(l.secrets)
}

func (l *Log) redact(b []byte) []byte { return l.secrets.JSON(b) }

// Raw appends one line of the raw stream. A line that is not one JSON value
// is wrapped as {"raw": line}, so that every line of the file is JSON. The
// stream is redacted as the texts its fields carry (secret.Lines): a key
// split over many lines (a model's deltas) is cut out of each, and a line
// that ends with a key's start waits for the next one of its field before
// it is written; any other line is written and flushed at once. Errors are
// kept and returned by End.
func (l *Log) Raw(line []byte) {
	if l == nil {
		return
	}
	line = bytes.TrimRight(line, "\r\n")
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if l.cut {
		return
	}
	if l.raw += int64(len(line)); l.raw > MaxRaw {
		l.cut = true
		l.Record(map[string]any{"flow_raw_cut": map[string]any{"after_bytes": l.raw - int64(len(line))}})
		return
	}
	if !json.Valid(line) || bytes.ContainsAny(line, "\n") {
		line, _ = json.Marshal(map[string]string{"raw": string(line)})
	}
	l.lines.Line(line)
}

// Record appends v, marshalled as JSON, as one line, after the raw lines
// held back: a record ends the raw stream.
func (l *Log) Record(v any) {
	if l == nil {
		return
	}
	l.lines.Flush()
	b, err := json.Marshal(v)
	if err != nil {
		l.err = fmt.Errorf("writing transcript: %w", err)
		return
	}
	l.write(b)
}

func (l *Log) write(line []byte) {
	if l.err != nil || l.w == nil {
		return
	}
	if !l.headed {
		l.headed = true
		h, err := json.Marshal(map[string]any{"flow_turn_start": l.head})
		if err != nil {
			l.err = fmt.Errorf("writing transcript: %w", err)
			return
		}
		l.write(h)
	}
	if _, err := l.w.Write(append(l.redact(line), '\n')); err != nil {
		l.err = fmt.Errorf("writing transcript: %w", err)
		return
	}
	if err := l.w.Flush(); err != nil {
		l.err = fmt.Errorf("writing transcript: %w", err)
	}
}

// End appends the turn's summary — its header completed with res and
// steps — closes the JSONL file and rewrites the HTML page from every turn
// in the file. An answer longer than engine.AnswerLimit that res does not
// yet keep in a file is stored in one first (StoreAnswer), so res leaves
// with the prefix and the file. It returns the first error met while
// writing this turn.
func (l *Log) End(res *engine.TurnResult, steps []Step) error {
	if l == nil {
		return nil
	}
	if err := StoreAnswer(res, l.dir, l.agent, l.secrets); err != nil && l.err == nil {
		l.err = err
	}
	h := l.head
	t := Turn{
		Visit: h.Visit, Driver: h.Driver, Model: h.Model, Session: res.Session, Started: h.Started,
		WallMS: res.Usage.WallMS, Status: string(res.Status), System: h.System, Prompt: h.Prompt, Steps: steps,
		Answer: res.Output, AnswerFile: res.File, Usage: res.Usage, Diagnostics: res.Diagnostics, Stderr: res.Stderr,
	}
	l.Record(map[string]any{"flow_turn": t})
	if err := l.Close(); err != nil && l.err == nil {
		l.err = err
	}
	if err := l.writeHTML(); err != nil && l.err == nil {
		l.err = err
	}
	return l.err
}

// Close closes the JSONL file without a summary. It is idempotent.
func (l *Log) Close() error {
	if l == nil || l.f == nil {
		return nil
	}
	l.lines.Flush()
	f := l.f
	l.f, l.w = nil, nil
	if err := f.Close(); err != nil {
		return fmt.Errorf("closing transcript: %w", err)
	}
	return nil
}

// Turns reads the turn summaries of a JSONL transcript, oldest first. Lines
// that are not summaries (headers, the raw stream) and a torn last line are
// skipped.
func Turns(path string) ([]Turn, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading transcript: %w", err)
	}
	defer f.Close()
	var turns []Turn
	prefix := []byte(`{"flow_turn":`)
	r := bufio.NewReaderSize(f, 64<<10)
	for {
		line, err := r.ReadBytes('\n')
		if bytes.HasPrefix(line, prefix) {
			var rec struct {
				Turn Turn `json:"flow_turn"`
			}
			if json.Unmarshal(line, &rec) == nil {
				turns = append(turns, rec.Turn)
			}
		}
		if err != nil {
			break
		}
	}
	return turns, nil
}

func (l *Log) writeHTML() error {
	turns, err := Turns(l.Path())
	if err != nil {
		return err
	}
	var b bytes.Buffer
	if err := page().Execute(&b, pageData{Agent: l.agent, Turns: turns}); err != nil {
		return fmt.Errorf("rendering transcript: %w", err)
	}
	tmp := l.HTMLPath() + ".tmp"
	if err := os.WriteFile(tmp, l.redact(b.Bytes()), 0o644); err != nil {
		return fmt.Errorf("writing transcript: %w", err)
	}
	if err := os.Rename(tmp, l.HTMLPath()); err != nil {
		return fmt.Errorf("writing transcript: %w", err)
	}
	return nil
}

// oneLine shortens s to its first line of at most n bytes, for headings.
func oneLine(s string, n int) string {
	s, _, _ = strings.Cut(strings.TrimSpace(s), "\n")
	if len(s) > n {
		s = strings.ToValidUTF8(s[:n], "") + "…"
	}
	return s
}

// FileName is the base of an agent's files in a home: its name, kept inside
// the home directory whatever it holds.
func FileName(agent string) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, agent)
	if name == "" || name == "." || name == ".." {
		return "agent"
	}
	return name
}
