package secret

import (
	"bytes"
	"math"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// A Finding is a string that has the shape of a secret, found by Scan in
// a text flow did not know the secret of (docs/drivers.md, Secrets): a
// well-known token shape, a URL's password, or a high-entropy value of a
// KEY=value line. It never holds the secret.
type Finding struct {
	Line       int    // the line it is on, from 1
	Kind       string // what it looks like: "GitHub token", "password in a URL"
	start, end int    // its bytes in the text scanned
}

// shape is one well-known token shape: re's first group (else its whole
// match) is the secret.
type shape struct {
	kind string
	re   *regexp.Regexp
	ok   func(string) bool // a further test of the secret, if any
}

// The characters a token is made of never include a quote or a backslash,
// so a shape found in a JSON text never spans an escape, and masking it
// keeps the JSON valid.
// They are compiled on first use: their counted repetitions make large
// programs, and package init runs in every flow process, even flow --version.
var shapes = sync.OnceValue(func() []shape {
	return []shape{
		{kind: "GitHub token", re: regexp.MustCompile(`\b(gh[pousr]_[A-Za-z0-9]{30,255})\b`)},
		{kind: "GitHub token", re: regexp.MustCompile(`\b(github_pat_[A-Za-z0-9_]{40,255})\b`)},
		{kind: "Anthropic key", re: regexp.MustCompile(`\b(sk-ant-[A-Za-z0-9_-]{20,})`)},
		{kind: "OpenAI key", re: regexp.MustCompile(`\b(sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_-]{20,})`), ok: tokenLike},
		{kind: "AWS access key id", re: regexp.MustCompile(`\b((?:AKIA|ASIA|ABIA|ACCA)[0-9A-Z]{16})\b`)},
		{kind: "AWS secret key", re: regexp.MustCompile(`(?i)aws.{0,24}(?:secret|private).{0,24}?[=:]\s*["']?([A-Za-z0-9/+]{40})(?:[^A-Za-z0-9/+]|$)`)},
		{kind: "Slack token", re: regexp.MustCompile(`\b(xox[abposre]-[A-Za-z0-9-]{10,})`)},
		{kind: "JWT", re: regexp.MustCompile(`\b(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,})`)},
		{kind: "private key", re: regexp.MustCompile(`(-----BEGIN [A-Z ]*PRIVATE KEY-----)`)},
		{kind: "password in a URL", re: regexp.MustCompile(`\b[A-Za-z][A-Za-z0-9+.-]{1,20}://[^\s:/@"'\\<>]{1,128}:([^\s/@"'\\<>]{3,256})@[A-Za-z0-9\[]`), ok: notPlaceholder},
		{kind: "high-entropy value", re: regexp.MustCompile(`\b([A-Za-z_][A-Za-z0-9_]{1,64})\s*=\s*["']?([A-Za-z0-9+/_.~=-]{16,512})`)},
	}
})

// tokenLike says an OpenAI-shaped key has letters and digits, as every
// key has, and a hyphenated name (sk-learn-and-some-words) does not.
func tokenLike(s string) bool {
	rest := s[strings.LastIndexByte(s[:min(len(s), 15)], '-')+1:]
	return strings.ContainsAny(rest, "0123456789") && strings.ContainsAny(rest, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ") && entropy(rest) >= 3.5
}

// notPlaceholder says a URL's password is not one a document writes for
// the reader to fill in: $VAR, ${VAR}, %s, <password>, [redacted], ***.
func notPlaceholder(s string) bool {
	switch strings.ToLower(s) {
	case "password", "pass", "passwd", "secret", "pwd", "changeme", "x-oauth-basic":
		return false
	}
	if strings.ContainsAny(s[:1], "$%<[*{") || strings.Trim(s, "*x") == "" {
		return false
	}
	return true
}

// highEntropy says whether value, given to name in a KEY=value line, is
// random enough to be a secret: any value of 16 characters or more when
// the name says it holds a secret (IsSecretName) and it holds a digit
// (code, token = resp.NextPageToken, does not), else one that mixes
// upper case, lower case and digits with at least 4 bits of entropy per
// character (a commit id, a hash, a path or a word is neither).
func highEntropy(name, value string) bool {
	value = strings.TrimRight(value, "=")
	if len(value) < 16 || Unsafe(value) != "" {
		return false
	}
	e := entropy(value)
	if IsSecretName(name) {
		return e >= 3.0 && strings.ContainsAny(value, "0123456789")
	}
	upper, lower, digit := false, false, false
	for _, c := range value {
		switch {
		case c >= 'A' && c <= 'Z':
			upper = true
		case c >= 'a' && c <= 'z':
			lower = true
		case c >= '0' && c <= '9':
			digit = true
		}
	}
	return upper && lower && digit && e >= 4.0 && !strings.ContainsAny(value, "/.")
}

// entropy is the Shannon entropy of s, in bits per character.
func entropy(s string) float64 {
	var n [256]int
	for i := 0; i < len(s); i++ {
		n[s[i]]++
	}
	var h float64
	for _, c := range n {
		if c > 0 {
			p := float64(c) / float64(len(s))
			h -= p * math.Log2(p)
		}
	}
	return h
}

// Scan finds the strings of text that have the shape of a secret, in
// the order they are in.
func Scan(text []byte) []Finding {
	var out []Finding
	view := unescaped(text)
	for _, sh := range shapes() {
		for _, m := range sh.re.FindAllSubmatchIndex(view, -1) {
			start, end := m[0], m[1]
			if len(m) >= 4 && m[2] >= 0 {
				start, end = m[2], m[3]
			}
			if sh.kind == "high-entropy value" {
				name := string(text[m[2]:m[3]])
				start, end = m[4], m[5]
				if !highEntropy(name, string(text[start:end])) {
					continue
				}
			} else if sh.ok != nil && !sh.ok(string(text[start:end])) {
				continue
			}
			out = append(out, Finding{Kind: sh.kind, start: start, end: end})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
	// Keep the first of overlapping findings (a GitHub token in a
	// KEY=value line is one finding).
	kept := out[:0]
	for _, f := range out {
		if len(kept) > 0 && f.start < kept[len(kept)-1].end {
			continue
		}
		f.Line = 1 + bytes.Count(text[:f.start], []byte{'\n'})
		kept = append(kept, f)
	}
	return kept
}

// unescaped is text with the letter of each escape \n, \r, \t, \b, \f
// (a JSON string's line breaks) replaced by a space, the same length: a
// token at the start of a line of a JSON string starts a word.
func unescaped(text []byte) []byte {
	if !bytes.Contains(text, []byte{'\\'}) {
		return text
	}
	view := bytes.Clone(text)
	for i := 0; i+1 < len(view); i++ {
		if view[i] == '\\' && strings.IndexByte("nrtbf", view[i+1]) >= 0 {
			view[i+1] = ' '
			i++
		}
	}
	return view
}

// MaskShapes replaces each string of b Scan finds with [redacted]; b is
// not changed. What is not a secret's shape is left as it is, JSON
// included.
func MaskShapes(b []byte) []byte {
	found := Scan(b)
	if len(found) == 0 {
		return b
	}
	out := make([]byte, 0, len(b))
	at := 0
	for _, f := range found {
		out = append(out, b[at:f.start]...)
		out = append(out, Mask...)
		at = f.end
	}
	return append(out, b[at:]...)
}

// MaskShapesString is MaskShapes of a string.
func MaskShapesString(s string) string { return string(MaskShapes([]byte(s))) }

// Scrub is what leaves flow for somewhere it does not control (a span's
// message, a payload without a key): r's known values redacted, then
// every secret shape masked.
func (r *Redactor) Scrub(s string) string { return MaskShapesString(r.String(s)) }
