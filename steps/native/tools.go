package native

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flowrun/flow/internal/proc"
	"github.com/flowrun/flow/internal/sandbox"
)

// The tools an agent file may list (`tools: [bash, read, edit]`).
const (
	ToolBash = "bash"
	ToolRead = "read"
	ToolEdit = "edit"
)

// OutputLimit is the most of a tool's result the model is given: past it,
// the result keeps its head and its tail, and says how much it left out.
const OutputLimit = 16 << 10

// BashTimeout bounds one bash call; the turn's timeout bounds them all.
const BashTimeout = 10 * time.Minute

// definitions are the tools' schemas, as the request offers them.
var definitions = map[string]map[string]any{
	ToolBash: {
		"description": "Run a bash command in the working directory and get its exit status and output (stdout and stderr together). Each call is a fresh shell: no variable or cd carries over. There is no network.",
		"parameters": map[string]any{"type": "object", "required": []string{"command"}, "additionalProperties": false,
			"properties": map[string]any{"command": map[string]any{"type": "string", "description": "the command line"}}},
	},
	ToolRead: {
		"description": "Read a text file, with line numbers; give offset and limit to read a range of lines.",
		"parameters": map[string]any{"type": "object", "required": []string{"path"}, "additionalProperties": false,
			"properties": map[string]any{
				"path":   map[string]any{"type": "string", "description": "the file, relative to the working directory"},
				"offset": map[string]any{"type": "integer", "description": "the first line to read, from 1"},
				"limit":  map[string]any{"type": "integer", "description": "how many lines to read"},
			}},
	},
	ToolEdit: {
		"description": "Replace the one occurrence of old in a file by new. old must occur exactly once; with old empty, the file is created with new as its content (it must not exist).",
		"parameters": map[string]any{"type": "object", "required": []string{"path", "old", "new"}, "additionalProperties": false,
			"properties": map[string]any{
				"path": map[string]any{"type": "string", "description": "the file, relative to the working directory"},
				"old":  map[string]any{"type": "string", "description": "the exact text to replace"},
				"new":  map[string]any{"type": "string", "description": "the text to put in its place"},
			}},
	},
}

// toolbox runs one turn's tool calls in its working directory.
type toolbox struct {
	dir     string
	runID   string
	confine bool // run bash in the sandbox
	tools   []string
}

// run runs one call and returns its result for the model, and whether it
// is an error result.
func (b *toolbox) run(ctx context.Context, name, args string) (string, bool) {
	if !contains(b.tools, name) {
		return fmt.Sprintf("there is no tool %q; the tools are %s", name, strings.Join(b.tools, ", ")), true
	}
	var in struct {
		Command string `json:"command"`
		Path    string `json:"path"`
		Offset  int    `json:"offset"`
		Limit   int    `json:"limit"`
		Old     string `json:"old"`
		New     string `json:"new"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return fmt.Sprintf("the arguments of %s are not a JSON object: %v", name, err), true
	}
	var out string
	var err error
	switch name {
	case ToolBash:
		return b.bash(ctx, in.Command)
	case ToolRead:
		out, err = b.read(in.Path, in.Offset, in.Limit)
	case ToolEdit:
		out, err = b.edit(in.Path, in.Old, in.New)
	}
	if err != nil {
		return err.Error(), true
	}
	return out, false
}

// bash runs command with bash -c in the working directory, confined, and
// returns its exit status and output, bounded.
func (b *toolbox) bash(ctx context.Context, command string) (string, bool) {
	if strings.TrimSpace(command) == "" {
		return "no command given", true
	}
	argv := []string{"bash", "-c", command}
	env := os.Environ()
	if b.confine {
		c, err := sandbox.Confine(b.dir, argv)
		if err != nil {
			return err.Error(), true
		}
		defer c.Close()
		argv, env = c.Argv, sandbox.Env(os.Environ(), c.Tmp)
	}
	cctx, cancel := context.WithTimeout(ctx, BashTimeout)
	defer cancel()
	p := proc.Command(cctx, b.runID, argv[0], argv[1:]...)
	p.Cmd.Dir, p.Cmd.Env = b.dir, env
	var out bytes.Buffer
	w := &boundedWriter{buf: &out, limit: 4 * OutputLimit}
	p.Cmd.Stdout, p.Cmd.Stderr = w, w
	err := p.Run()
	if ctx.Err() != nil {
		return "the turn was stopped", true
	}
	status, ok := proc.ExitStatus(err)
	head := fmt.Sprintf("exit %d\n", status)
	switch {
	case cctx.Err() != nil:
		head = fmt.Sprintf("timed out after %s\n", BashTimeout)
	case !ok:
		return fmt.Sprintf("running bash: %v", err), true
	}
	return head + Truncate(w.text(), OutputLimit), status != 0
}

// read returns lines of a file, numbered.
func (b *toolbox) read(path string, offset, limit int) (string, error) {
	full := b.path(path)
	data, err := os.ReadFile(full)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", path, errors.Unwrap(err))
	}
	lines := strings.SplitAfter(string(data), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	first := max(offset, 1)
	if first > len(lines) && len(lines) > 0 {
		return "", fmt.Errorf("%s has %d lines; offset %d is past its end", path, len(lines), offset)
	}
	last := len(lines)
	if limit > 0 {
		last = min(last, first-1+limit)
	}
	var sb strings.Builder
	for i := first; i <= last; i++ {
		fmt.Fprintf(&sb, "%6d\t%s", i, strings.TrimSuffix(lines[i-1], "\n"))
		sb.WriteByte('\n')
	}
	if last < len(lines) {
		fmt.Fprintf(&sb, "[… %d lines more; read on with offset %d]\n", len(lines)-last, last+1)
	}
	return Truncate(sb.String(), OutputLimit), nil
}

// edit replaces the one occurrence of old in a file of the working
// directory by new, or creates the file when old is empty.
func (b *toolbox) edit(path, old, new string) (string, error) {
	full, err := b.writable(path)
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(full)
	switch {
	case old == "" && err == nil:
		return "", fmt.Errorf("%s exists: give old, the text to replace", path)
	case old == "" && errors.Is(err, os.ErrNotExist):
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			return "", fmt.Errorf("creating %s: %w", path, errors.Unwrap(err))
		}
		if err := os.WriteFile(full, []byte(new), 0o644); err != nil {
			return "", fmt.Errorf("creating %s: %w", path, errors.Unwrap(err))
		}
		return fmt.Sprintf("created %s", path), nil
	case err != nil:
		return "", fmt.Errorf("reading %s: %w", path, errors.Unwrap(err))
	}
	switch n := strings.Count(string(data), old); n {
	case 0:
		return "", fmt.Errorf("old does not occur in %s: read the file and copy the text exactly", path)
	case 1:
	default:
		return "", fmt.Errorf("old occurs %d times in %s: give more of its surroundings so that it occurs once", n, path)
	}
	st, _ := os.Stat(full)
	mode := os.FileMode(0o644)
	if st != nil {
		mode = st.Mode().Perm()
	}
	if err := os.WriteFile(full, []byte(strings.Replace(string(data), old, new, 1)), mode); err != nil {
		return "", fmt.Errorf("writing %s: %w", path, errors.Unwrap(err))
	}
	return fmt.Sprintf("edited %s", path), nil
}

// path is a path of the tools' arguments made absolute in the working
// directory.
func (b *toolbox) path(p string) string {
	if filepath.IsAbs(p) {
		return filepath.Clean(p)
	}
	return filepath.Join(b.dir, p)
}

// writable checks that path is a file an edit may write: inside the
// working directory once links are followed, and not in its .git — the
// sandbox's rule, for the tool that runs in flow's own process.
func (b *toolbox) writable(p string) (string, error) {
	full := b.path(p)
	root, err := filepath.EvalSymlinks(b.dir)
	if err != nil {
		return "", fmt.Errorf("the working directory: %w", err)
	}
	// Follow the links of the deepest directory that exists.
	dir, rest := filepath.Dir(full), filepath.Base(full)
	for {
		if _, err := os.Lstat(dir); err == nil {
			break
		}
		rest = filepath.Join(filepath.Base(dir), rest)
		dir = filepath.Dir(dir)
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		return "", fmt.Errorf("%s: %w", p, err)
	}
	real = filepath.Join(real, rest)
	if st, err := os.Lstat(real); err == nil && st.Mode()&os.ModeSymlink != 0 {
		if real, err = filepath.EvalSymlinks(real); err != nil {
			return "", fmt.Errorf("%s: %w", p, err)
		}
	}
	rel, err := filepath.Rel(root, real)
	if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
		return "", fmt.Errorf("%s is outside the working directory %s: the tools may write only there", p, b.dir)
	}
	if rel == ".git" || strings.HasPrefix(rel, ".git/") {
		return "", fmt.Errorf("%s is in .git, which the tools may not write", p)
	}
	return real, nil
}

// Truncate keeps s whole up to limit bytes; a longer s keeps its head and
// its tail and says how much it left out between them.
func Truncate(s string, limit int) string {
	if len(s) <= limit {
		return s
	}
	half := limit / 2
	head, tail := s[:half], s[len(s)-half:]
	return strings.ToValidUTF8(head, "") + fmt.Sprintf("\n[… %d bytes left out …]\n", len(s)-2*half) + strings.ToValidUTF8(tail, "")
}

// boundedWriter keeps the first and the last limit/2 bytes written to it.
type boundedWriter struct {
	buf   *bytes.Buffer
	limit int
	tail  []byte
	total int
}

func (w *boundedWriter) Write(p []byte) (int, error) {
	n0 := len(p)
	w.total += n0
	if room := w.limit/2 - w.buf.Len(); room > 0 {
		n := min(room, len(p))
		w.buf.Write(p[:n])
		p = p[n:]
	}
	if len(p) > 0 {
		w.tail = append(w.tail, p...)
		if over := len(w.tail) - w.limit/2; over > 0 {
			w.tail = append(w.tail[:0], w.tail[over:]...)
		}
	}
	return n0, nil
}

// text is what was kept, saying how much was left out between the head
// and the tail.
func (w *boundedWriter) text() string {
	kept := w.buf.Len() + len(w.tail)
	if kept >= w.total {
		return w.buf.String() + string(w.tail)
	}
	return w.buf.String() + fmt.Sprintf("\n[… %d bytes left out …]\n", w.total-kept) + string(w.tail)
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
