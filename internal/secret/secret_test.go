package secret

import (
	"bytes"
	"strings"
	"testing"
)

const key = "sk-test-0123456789abcdef"

func TestRedactor(t *testing.T) {
	t.Parallel()
	r := New(key, "abc", "", `pa"ss<w>rd&1`)
	if got := r.Values(); len(got) != 2 {
		t.Fatalf("Values = %q, want the key and the password (short ones ignored)", got)
	}
	tests := []struct{ in, want string }{
		{"no secret here, abc", "no secret here, abc"},
		{"key: " + key + ", again " + key, "key: [redacted], again [redacted]"},
		{`{"error":"` + `pa\"ss\u003cw\u003erd\u00261` + `"}`, `{"error":"[redacted]"}`},
		{`{"error":"` + `pa\"ss<w>rd&1` + `"}`, `{"error":"[redacted]"}`},
	}
	for _, tt := range tests {
		if got := r.String(tt.in); got != tt.want {
			t.Errorf("String(%q) = %q, want %q", tt.in, got, tt.want)
		}
		if got := string(r.Bytes([]byte(tt.in))); got != tt.want {
			t.Errorf("Bytes(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	var none *Redactor
	if none.String(key) != key || none.With() != nil || !none.Empty() {
		t.Error("a nil Redactor must redact nothing")
	}
	if r.With(key) != r {
		t.Error("With of a known secret must return the same Redactor")
	}
}

func TestValue(t *testing.T) {
	t.Parallel()
	r := New(key)
	type rec struct {
		Msg string
		Out any
	}
	in := rec{Msg: "the key is " + key, Out: map[string]any{"k": []any{key, 2}}}
	got := Value(r, in)
	if got.Msg != "the key is [redacted]" || got.Out.(map[string]any)["k"].([]any)[0] != "[redacted]" {
		t.Errorf("Value = %+v", got)
	}
	clean := rec{Msg: "nothing", Out: 3}
	if Value(r, clean).Out != 3 {
		t.Error("a value without a secret must come back as it is")
	}
}

// TestWriterSplitSecret writes a stream in every split of a secret and
// checks that the secret never gets through whole or in parts.
func TestWriterSplitSecret(t *testing.T) {
	t.Parallel()
	r := New(key)
	stream := "before s" + key + " sk-te middle " + key + "sk-"
	for size := 1; size <= len(stream); size++ {
		var out bytes.Buffer
		w := r.Writer(&out)
		for i := 0; i < len(stream); i += size {
			if _, err := w.Write([]byte(stream[i:min(i+size, len(stream))])); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Flush(); err != nil {
			t.Fatal(err)
		}
		want := "before s[redacted] sk-te middle [redacted]sk-"
		if out.String() != want {
			t.Fatalf("writes of %d bytes: %q, want %q", size, out.String(), want)
		}
	}
}

func TestWriterPassesPlainTextAtOnce(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := New(key).Writer(&out)
	_, _ = w.Write([]byte("thinking about it\n"))
	if out.String() != "thinking about it\n" {
		t.Errorf("held back %q: text that cannot begin a secret must pass at once", out.String())
	}
	w.SetRedactor(New("another-secret"))
	_, _ = w.Write([]byte("another-secret " + key))
	_ = w.Flush()
	if !strings.HasSuffix(out.String(), "[redacted] "+key) {
		t.Errorf("after SetRedactor: %q", out.String())
	}
}

func TestIsSecretName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]bool{
		"OPENAI_API_KEY": true, "ANTHROPIC_API_KEY": true, "ANTHROPIC_AUTH_TOKEN": true, "CLAUDE_CODE_OAUTH_TOKEN": true,
		"CODEX_API_KEY": true, "GEMINI_API_KEY": true, "GITHUB_TOKEN": true, "AWS_SECRET_ACCESS_KEY": true,
		"PG_PASSWORD": true, "drivers.openai.api_key": true, "serve.token": true,
		"FLOW_DRIVERS_OPENAI_API_KEY_ENV": false, "drivers.pi.api_key_env": false, "SSH_KEY_PATH": false,
		"HOME": false, "KEYTIMEOUT": false, "TERM_SESSION_ID": false, "PI_CODING_AGENT_DIR": false,
	} {
		if got := IsSecretName(name); got != want {
			t.Errorf("IsSecretName(%q) = %v, want %v", name, got, want)
		}
	}
	got := FromEnviron([]string{"OPENAI_API_KEY=" + key, "GITHUB_TOKEN=abc", "HOME=/home/someone", "BROKEN"})
	if len(got) != 1 || got[0] != key {
		t.Errorf("FromEnviron = %q, want only the key (the token is too short)", got)
	}
}

func FuzzWriter(f *testing.F) {
	f.Add("sk-secret-1", "a sk-secret-1 b", 3)
	f.Add("aaaaaa", "aaaaaaaaaaaaaaaaa", 1)
	f.Fuzz(func(t *testing.T, secret, stream string, size int) {
		r := New(secret)
		if r.Empty() || size <= 0 {
			return
		}
		var out bytes.Buffer
		w := r.Writer(&out)
		for i := 0; i < len(stream); i += size {
			_, _ = w.Write([]byte(stream[i:min(i+size, len(stream))]))
		}
		_ = w.Flush()
		// A secret made of the mask's letters could be read back out of
		// the mask; any other must never get through.
		if strings.ContainsAny(secret, "[]") || strings.Contains(Mask, secret) {
			return
		}
		if strings.Contains(out.String(), secret) {
			t.Errorf("streamed %q: the secret %q got through", out.String(), secret)
		}
	})
}

func TestWriterCut(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	w := New(key).Writer(&out)
	_, _ = w.Write([]byte("log line " + key[:10]))
	_ = w.Cut()
	_, _ = w.Write([]byte(" [cut] sk-"))
	_ = w.Cut()
	if out.String() != "log line [redacted] [cut] sk-" {
		t.Errorf("after Cut: %q", out.String())
	}
}
