package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"unicode/utf8"

	"golang.org/x/term"

	"github.com/flowrun/flow/internal/secret"
)

// safeText returns s with every character that could drive a terminal
// shown escaped, as Go writes it in a string literal: the C0 controls but
// newline and tab (ESC starts colours, titles and OSC 52 clipboard
// writes), DEL, the C1 controls (U+0080–U+009F: U+009B is a CSI of its
// own), bytes that are not UTF-8, and the bidirectional overrides and
// isolates that make a terminal show text in another order than it is.
// Everything flow prints that an agent, a program or a file could have
// written goes through it: progress, summaries, `flow show`, `flow runs`,
// errors, and `flow tail` on a terminal.
func safeText(s string) string {
	if !needsEscape(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case escaped(r):
			if r < 0x80 {
				fmt.Fprintf(&b, `\x%02x`, r)
			} else {
				fmt.Fprintf(&b, `\u%04x`, r)
			}
		default:
			b.WriteString(s[i : i+size])
		}
		i += size
	}
	return b.String()
}

// safeLine is safeText on one line: newlines and tabs become spaces too.
func safeLine(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || r == '\r' {
			return ' '
		}
		return r
	}, safeText(s))
}

func needsEscape(s string) bool {
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size <= 1 || escaped(r) {
			return true
		}
		i += size
	}
	return false
}

func escaped(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || r >= 0x80 && r <= 0x9f:
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}

// fileOf returns the file w writes to, through the redacting writer cmd
// puts in front of stdout and stderr, or nil.
func fileOf(w io.Writer) *os.File {
	for {
		switch x := w.(type) {
		case *os.File:
			return x
		case *secret.Writer:
			w = x.Unwrap()
		default:
			return nil
		}
	}
}

// isTerminal reports whether w writes to a terminal.
func isTerminal(w io.Writer) bool {
	f := fileOf(w)
	return f != nil && term.IsTerminal(int(f.Fd()))
}
