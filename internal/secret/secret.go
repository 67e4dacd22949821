package secret

import (
	"bytes"
	"encoding/json"
	"io"
	"slices"
	"strings"
)

// Mask replaces every secret.
const Mask = "[redacted]"

// Redactor replaces known secrets with Mask. The zero value and nil redact
// nothing. It is immutable: With returns a new one.
type Redactor struct {
	secrets []string // as given, deduplicated, in order
	// forms are the byte strings searched for, longest first: each secret
	// and its encodings (JSON-escaped once and twice, percent-encoded,
	// base64), so that a secret is found however it is spelt.
	forms [][]byte
	repl  *strings.Replacer
}

// New returns a Redactor of values, ignoring those Unsafe says cannot be
// redacted safely.
func New(values ...string) *Redactor { return (*Redactor)(nil).With(values...) }

// With returns a Redactor of r's secrets and values. r itself is
// unchanged, and returned when values adds nothing.
func (r *Redactor) With(values ...string) *Redactor {
	var all []string
	if r != nil {
		all = slices.Clone(r.secrets)
	}
	added := false
	for _, v := range values {
		if Unsafe(v) == "" && !slices.Contains(all, v) {
			all = append(all, v)
			added = true
		}
	}
	if !added {
		return r
	}
	out := &Redactor{secrets: all}
	var forms []string
	for _, s := range all {
		for _, f := range encodings(s) {
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	// Longest first: where two forms start at one place, the Replacer
	// takes the one given first.
	slices.SortStableFunc(forms, func(a, b string) int { return len(b) - len(a) })
	pairs := make([]string, 0, 2*len(forms))
	for _, f := range forms {
		out.forms = append(out.forms, []byte(f))
		pairs = append(pairs, f, Mask)
	}
	out.repl = strings.NewReplacer(pairs...)
	return out
}

// Values returns the secrets, in the order they were given.
func (r *Redactor) Values() []string {
	if r == nil {
		return nil
	}
	return slices.Clone(r.secrets)
}

// Empty reports whether r knows no secret.
func (r *Redactor) Empty() bool { return r == nil || len(r.forms) == 0 }

// Contains reports whether b holds a secret.
func (r *Redactor) Contains(b []byte) bool {
	if r.Empty() {
		return false
	}
	for _, f := range r.forms {
		if bytes.Contains(b, f) {
			return true
		}
	}
	return false
}

// String returns s with every secret replaced by Mask.
func (r *Redactor) String(s string) string {
	if r.Empty() || !r.Contains([]byte(s)) {
		return s
	}
	return r.repl.Replace(s)
}

// Bytes returns b with every secret replaced by Mask: b itself when it
// holds none.
func (r *Redactor) Bytes(b []byte) []byte {
	if !r.Contains(b) {
		return b
	}
	return []byte(r.repl.Replace(string(b)))
}

// pending returns the length of the longest end of b that begins a secret
// without completing it: those bytes must wait for the next write before
// they can be told apart from a secret.
func (r *Redactor) pending(b []byte) int {
	if r.Empty() {
		return 0
	}
	best := 0
	for _, f := range r.forms {
		// Only an end shorter than f, and longer than what is found
		// already, can matter.
		from := max(len(b)-len(f)+1, 0)
		for i := from; i < len(b)-best; i++ {
			j := bytes.IndexByte(b[i:len(b)-best], f[0])
			if j < 0 {
				break
			}
			i += j
			if bytes.HasPrefix(f, b[i:]) {
				best = len(b) - i
				break
			}
		}
	}
	return best
}

// Value returns v with every secret in it redacted: v itself when its JSON
// form holds none, else v's JSON form redacted (JSON: values, and keys
// that are not flow's own) and decoded into a new T
// (numbers in an interface then decode as float64). A value JSON cannot
// encode is returned as it is.
func Value[T any](r *Redactor, v T) T {
	if r.Empty() {
		return v
	}
	b, err := json.Marshal(v)
	if err != nil || !r.Contains(b) {
		return v
	}
	var out T
	if json.Unmarshal(r.JSON(b), &out) != nil {
		return v
	}
	return out
}

// longest returns the length of the longest form searched for.
func (r *Redactor) longest() int {
	if r.Empty() {
		return 0
	}
	return len(r.forms[0])
}

// ContainsReader reports whether what rd yields holds a secret. It reads
// in bounded pieces, whatever the size.
func (r *Redactor) ContainsReader(rd io.Reader) (bool, error) {
	if r.Empty() {
		return false, nil
	}
	overlap := r.longest() - 1
	buf := make([]byte, 0, 64<<10+overlap)
	for {
		n, err := rd.Read(buf[len(buf):cap(buf)])
		buf = buf[:len(buf)+n]
		if r.Contains(buf) {
			return true, nil
		}
		if err == io.EOF {
			return false, nil
		}
		if err != nil {
			return false, err
		}
		if keep := min(overlap, len(buf)); len(buf) == cap(buf) {
			buf = append(buf[:0], buf[len(buf)-keep:]...)
		}
	}
}
