package secret

import (
	"encoding/json"
	"io/fs"
	"math/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// random is a string of n characters of alphabet, the same each run.
func random(seed int64, n int, alphabet string) string {
	r := rand.New(rand.NewSource(seed))
	b := make([]byte, n)
	for i := range b {
		b[i] = alphabet[r.Intn(len(alphabet))]
	}
	return string(b)
}

const (
	alnum  = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	upnum  = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b64    = alnum + "+/"
	urlb64 = alnum + "-_"
)

// TestScanTable: each true case is found, with its kind and line, and its
// secret masked; no false case is.
func TestScanTable(t *testing.T) {
	jwt := "eyJ" + random(1, 30, urlb64) + ".eyJ" + random(2, 40, urlb64) + "." + random(3, 43, urlb64)
	found := []struct{ text, kind, secret string }{
		{"GH_PAT=ghp_" + random(4, 36, alnum), "GitHub token", "ghp_" + random(4, 36, alnum)},
		{"token: gho_" + random(5, 36, alnum), "GitHub token", "gho_" + random(5, 36, alnum)},
		{"github_pat_" + random(6, 82, alnum+"_"), "GitHub token", "github_pat_" + random(6, 82, alnum+"_")},
		{"OPENAI=sk-" + random(7, 48, alnum), "OpenAI key", "sk-" + random(7, 48, alnum)},
		{"key sk-proj-" + random(8, 100, urlb64), "OpenAI key", "sk-proj-" + random(8, 100, urlb64)},
		{"use sk-ant-api03-" + random(9, 90, urlb64), "Anthropic key", "sk-ant-api03-" + random(9, 90, urlb64)},
		{"aws AKIA" + random(10, 16, upnum) + " ok", "AWS access key id", "AKIA" + random(10, 16, upnum)},
		{"aws_secret_access_key = " + random(11, 40, b64), "AWS secret key", random(11, 40, b64)},
		{"SLACK=xoxb-" + random(12, 10, "0123456789") + "-" + random(13, 24, alnum), "Slack token", "xoxb-" + random(12, 10, "0123456789") + "-" + random(13, 24, alnum)},
		{"Authorization: Bearer " + jwt, "JWT", jwt},
		{"DATABASE_URL=postgres://app:" + random(14, 20, alnum) + "@db.internal:5432/app", "password in a URL", random(14, 20, alnum)},
		{"git clone https://bot:" + random(15, 12, alnum) + "@github.com/o/r", "password in a URL", random(15, 12, alnum)},
		{"MY_SERVICE_SECRET=" + random(16, 32, "0123456789abcdef"), "high-entropy value", random(16, 32, "0123456789abcdef")},
		{"export INTERNAL_CRED=" + random(17, 32, alnum), "high-entropy value", random(17, 32, alnum)},
		{"-----BEGIN OPENSSH PRIVATE KEY-----", "private key", "-----BEGIN OPENSSH PRIVATE KEY-----"},
	}
	for _, c := range found {
		text := "first line\n" + c.text + "\nlast line"
		got := Scan([]byte(text))
		if len(got) != 1 || got[0].Kind != c.kind || got[0].Line != 2 {
			t.Errorf("%q: found %+v, want one %s on line 2", c.text, got, c.kind)
			continue
		}
		masked := MaskShapesString(text)
		if strings.Contains(masked, c.secret) || !strings.Contains(masked, Mask) {
			t.Errorf("%q masked as %q", c.text, masked)
		}
		// In a JSON string the same is found, and the JSON stays valid.
		q, _ := json.Marshal(text)
		if len(Scan(q)) != 1 {
			t.Errorf("%q not found in JSON %s", c.text, q)
		}
		var back string
		if err := json.Unmarshal(MaskShapes(q), &back); err != nil || strings.Contains(back, c.secret) {
			t.Errorf("%q in JSON masked as %q (%v)", c.text, back, err)
		}
	}
	clean := []string{
		"commit 4f3a2b1c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a",
		`{"key":"ad337b19bae0f55a34a440ac07a4a3275a5170b1e6a6914eaf12c555eec330d2"}`,
		"TREE=4b825dc642cb6eb9a060e54bf8d69288fbad4904",
		"TRACEPARENT=00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
		"pip install scikit-learn; sk-learn-is-a-nickname-for-it",
		"PATH=/usr/local/bin:/usr/bin:/bin",
		"HOME=/home/someone/projects/flow-writers",
		"postgres://user:password@localhost/db",
		"https://user:${TOKEN}@github.com/o/r",
		"https://x:[redacted]@github.com/o/r",
		"FLOW_RUN=20261203-144950-5d7bf9",
		"OPENAI_API_KEY=[redacted]",
		"model=claude-sonnet-4-5-20250929",
		"the ghp_ prefix names a GitHub personal token",
		"AKIAIOSFODNN7 is too short",
		"http://127.0.0.1:4318/v1/traces",
		"name=count-file.cassette/journal.jsonl",
		"SESSION=019a2b3c-4d5e-6f70-8192-a3b4c5d6e7f8",
		"docs/reuse-and-tests.md: BenchmarkVisitKeys=23",
		"			token = resp.GetNextPageToken()",
	}
	for _, c := range clean {
		if got := Scan([]byte(c)); len(got) > 0 {
			t.Errorf("%q: found %+v", c, got)
		}
	}
}

// TestScanRepositoryIsClean: none of the repository's examples, their
// cassettes, or its docs trips the scanner.
func TestScanRepositoryIsClean(t *testing.T) {
	root := filepath.Join("..", "..")
	n := 0
	for _, dir := range []string{"examples", "docs", "flows"} {
		err := filepath.WalkDir(filepath.Join(root, dir), func(p string, d fs.DirEntry, err error) error {
			if err != nil || d.IsDir() {
				return err
			}
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			n++
			for _, f := range Scan(b) {
				t.Errorf("%s:%d: %s", p, f.Line, f.Kind)
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n < 20 {
		t.Fatalf("scanned %d files", n)
	}
}

// TestOTLPHeadersAreSecrets: the values of OTEL_EXPORTER_OTLP_HEADERS
// (and its traces form) are secrets, percent-decoded, and a bearer's
// credential alone too.
func TestOTLPHeadersAreSecrets(t *testing.T) {
	got := FromEnviron([]string{
		"OTEL_EXPORTER_OTLP_HEADERS=x-api-key=abc%2Fdef-0123456789,other=",
		"OTEL_EXPORTER_OTLP_TRACES_HEADERS=authorization=Bearer tok-9876543210",
		"OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318",
	})
	want := []string{"abc/def-0123456789", "Bearer tok-9876543210", "tok-9876543210"}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("secrets %q, want %q", got, want)
	}
}
