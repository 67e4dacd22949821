package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/clipperhouse/displaywidth"
	"github.com/sourcegraph/conc"
	"golang.org/x/term"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/schema"
)

// progressView shows a run's events as they happen. Event is called from
// many goroutines; Close is idempotent and ends anything the view started.
type progressView interface {
	Event(*record.Event)
	Close()
}

// jsonView writes the event stream, one JSON object per line (--json).
type jsonView struct {
	mu  sync.Mutex
	enc *json.Encoder
}

func newJSONView(w io.Writer) *jsonView { return &jsonView{enc: json.NewEncoder(w)} }

func (v *jsonView) Event(e *record.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	_ = v.enc.Encode(e)
}

func (v *jsonView) Close() {}

// plainView writes one line per visit start and end: for logs and pipes.
type plainView struct {
	mu sync.Mutex
	w  io.Writer
}

func newPlainView(w io.Writer) *plainView { return &plainView{w: w} }

func (v *plainView) Event(e *record.Event) {
	line := eventLine(e)
	if line == "" {
		return
	}
	v.mu.Lock()
	defer v.mu.Unlock()
	fmt.Fprintln(v.w, line)
}

func (v *plainView) Close() {}

func isLeaf(kind schema.Kind) bool {
	return kind == schema.KindAgent || kind == schema.KindRun || kind == schema.KindAsk || kind == schema.KindWait
}

// eventLine renders an event as one plain line, or "" for events that plain
// output leaves out. What agents and programs said is shown escaped
// (safeLine).
func eventLine(e *record.Event) string {
	return safeLine(plainLine(e))
}

func plainLine(e *record.Event) string {
	switch e.Type {
	case record.EventRunStart:
		return fmt.Sprintf("run %s started (%s)", e.Run, e.Dir)
	case record.EventNote:
		return e.Message
	case record.EventVisitStart:
		if !isLeaf(e.Kind) {
			return ""
		}
		return fmt.Sprintf("▶ %s", e.Visit)
	case record.EventVisitEnd:
		if e.OK != nil && *e.OK {
			if !isLeaf(e.Kind) {
				return ""
			}
			return fmt.Sprintf("✓ %s  %s%s", e.Visit, fmtMS(e.WallMS), usageText(e.Usage))
		}
		if e.Error != nil && e.Error.Kind == schema.FailChild {
			return ""
		}
		if e.Error != nil && e.Error.Kind == schema.FailWaiting {
			return fmt.Sprintf("⏸ %s  %s", e.Visit, firstLine(e.Error.Message))
		}
		msg := ""
		if e.Error != nil {
			msg = fmt.Sprintf("%s: %s", e.Error.Kind, firstLine(e.Error.Message))
		}
		return fmt.Sprintf("✗ %s  %s  %s", e.Visit, fmtMS(e.WallMS), msg)
	}
	return ""
}

func usageText(u *record.Usage) string {
	if u == nil || u.Tokens() == 0 {
		return ""
	}
	return fmt.Sprintf("  %d tokens", u.Tokens())
}

func fmtMS(ms int64) string {
	return (time.Duration(ms) * time.Millisecond).Round(10 * time.Millisecond).String()
}

func firstLine(s string) string {
	s, _, _ = strings.Cut(s, "\n")
	return s
}

// liveView keeps one line per running visit at the bottom of the terminal,
// redrawn in place; ended visits scroll above it as plain lines.
type liveView struct {
	mu      sync.Mutex
	w       io.Writer
	running map[string]*liveLine
	cols    func() int // the terminal's width, asked at each redraw to follow a resize
	drawn   int        // lines of the live block on screen
	held    bool
	done    chan struct{}
	once    sync.Once
	wg      conc.WaitGroup
}

type liveLine struct {
	visit, what, model string // model is driver/model
	tokens             int64
	start              time.Time
}

func newLiveView(w io.Writer) *liveView {
	v := &liveView{w: w, running: map[string]*liveLine{}, cols: terminalCols(w), done: make(chan struct{})}
	v.wg.Go(v.tick)
	return v
}

func (v *liveView) tick() {
	t := time.NewTicker(200 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-v.done:
			return
		case <-t.C:
			v.mu.Lock()
			v.redraw()
			v.mu.Unlock()
		}
	}
}

func (v *liveView) Event(e *record.Event) {
	v.mu.Lock()
	defer v.mu.Unlock()
	switch e.Type {
	case record.EventVisitStart:
		if isLeaf(e.Kind) {
			v.running[e.Visit] = &liveLine{visit: e.Visit, what: "starting " + string(e.Kind), start: e.Time}
		}
	case record.EventProgress:
		if l := v.running[e.Visit]; l != nil {
			l.what = e.Activity
			if e.Driver != "" { // the engine's own progress (landing a worktree) names none
				l.model = e.Driver
				if e.Model != "" {
					l.model += "/" + e.Model
				}
			}
			if e.Tokens > 0 {
				l.tokens = e.Tokens
			}
		}
	case record.EventVisitEnd:
		delete(v.running, e.Visit)
	}
	// Running visits are the live lines; only what ended scrolls above them.
	if line := eventLine(e); line != "" && e.Type != record.EventVisitStart {
		v.clear()
		fmt.Fprintln(v.w, line)
	}
	v.redraw()
}

func (v *liveView) clear() {
	if v.drawn > 0 {
		fmt.Fprintf(v.w, "\x1b[%dA\x1b[J", v.drawn)
		v.drawn = 0
	}
}

func (v *liveView) redraw() {
	if v.held {
		return
	}
	v.clear()
	lines := make([]*liveLine, 0, len(v.running))
	for _, l := range v.running {
		lines = append(lines, l)
	}
	slices.SortFunc(lines, func(a, b *liveLine) int { return strings.Compare(a.visit, b.visit) })
	// clear moves up one row per line: a line that wrapped would leave its
	// second row behind. The last column stays empty, as some terminals
	// wrap as soon as it is written.
	width := v.cols() - 1
	for _, l := range lines {
		model := l.model
		if model == "" {
			model = "-"
		}
		tok := ""
		if l.tokens > 0 {
			tok = fmt.Sprintf("  %d tok", l.tokens)
		}
		line := fmt.Sprintf("  %s  %s  %s%s  %s", l.visit, model, l.what, tok, time.Since(l.start).Round(100*time.Millisecond))
		fmt.Fprintf(v.w, "%s\x1b[K\n", fitLine(line, width))
	}
	v.drawn = len(lines)
}

// defaultCols is the width assumed when the terminal does not say its own.
const defaultCols = 80

// terminalCols returns the width of the terminal w writes to, asked anew at
// each call; defaultCols when w is not a terminal or will not say.
func terminalCols(w io.Writer) func() int {
	f := fileOf(w)
	return func() int {
		if f != nil {
			if cols, _, err := term.GetSize(int(f.Fd())); err == nil && cols > 0 {
				return cols
			}
		}
		return defaultCols
	}
}

// fitLine makes s one row of at most width columns, counted as the terminal
// shows them (a CJK character takes two): newlines and tabs, such as those
// of a multi-line command an agent runs, become spaces, other control
// characters are shown escaped (safeLine), and the end of a wider line
// gives way to "…".
func fitLine(s string, width int) string {
	return displaywidth.TruncateString(safeLine(s), max(width, 1), "…")
}

// hold stops redrawing while the terminal is used for a question.
func (v *liveView) hold(on bool) {
	v.mu.Lock()
	defer v.mu.Unlock()
	v.held = on
	if on {
		v.clear()
	}
}

func (v *liveView) Close() {
	v.once.Do(func() {
		close(v.done)
		v.wg.Wait()
		v.mu.Lock()
		v.clear()
		v.mu.Unlock()
	})
}

// terminalAsker asks `ask` questions on the terminal.
type terminalAsker struct {
	mu   sync.Mutex
	in   io.Reader
	out  io.Writer
	view progressView
}

func (t *terminalAsker) Ask(ctx context.Context, q *engine.Question) (engine.Answer, error) {
	ans, err := t.ask(ctx, q.Visit, q.Text, q.Shown, q.Options, q.Default)
	return engine.Answer{Value: ans, By: "terminal"}, err
}

// ask prints what the ask shows, whole, then asks until it gets an answer
// it can take. Everything printed went through safeText: an agent wrote it.
func (t *terminalAsker) ask(ctx context.Context, visit, question string, shown []engine.Shown, options []string, def string) (string, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if lv, ok := t.view.(*liveView); ok {
		lv.hold(true)
		defer lv.hold(false)
	}
	for _, s := range shown {
		s.Text = rundir.WholeAnswer(s.Text, s.File)
		fmt.Fprintf(t.out, "── %s ──\n%s\n", safeLine(s.Node), strings.TrimRight(safeText(s.Text), "\n"))
	}
	if len(shown) > 0 {
		fmt.Fprintln(t.out, "──")
	}
	question = safeText(question)
	hint := ""
	if len(options) > 0 {
		hint = " [" + strings.Join(options, "/") + "]"
	}
	if def != "" {
		hint += fmt.Sprintf(" (default %s)", def)
	}
	rd := bufio.NewReader(t.in)
	for {
		fmt.Fprintf(t.out, "? %s%s: ", question, hint)
		line, err := rd.ReadString('\n')
		if ctx.Err() != nil {
			return "", ctx.Err()
		}
		ans := strings.TrimSpace(line)
		if ans == "" {
			if err != nil && def == "" {
				return "", fmt.Errorf("reading the answer to %s: %w", visit, err)
			}
			ans = def
		}
		if ans != "" && (len(options) == 0 || slices.Contains(options, ans)) {
			return ans, nil
		}
		if err != nil {
			return "", fmt.Errorf("reading the answer to %s: %w", visit, err)
		}
		fmt.Fprintf(t.out, "  answer one of: %s\n", strings.Join(options, ", "))
	}
}

// notesFirst passes events on, but holds a run's start back until the
// notes the engine gives right after it are shown: a resume then reads
// "resuming run …" before "run … started".
type notesFirst struct {
	mu    sync.Mutex
	start *record.Event
	next  func(*record.Event)
}

func (n *notesFirst) Event(e *record.Event) {
	n.mu.Lock()
	defer n.mu.Unlock()
	switch {
	case e.Type == record.EventRunStart:
		n.start = e
		return
	case e.Type == record.EventNote && n.start != nil:
	case n.start != nil:
		n.next(n.start)
		n.start = nil
	}
	n.next(e)
}
