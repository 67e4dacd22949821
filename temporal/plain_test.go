package temporal

import (
	"strings"
	"testing"

	"go.temporal.io/sdk/converter"
)

// TestPlainPayloadsMaskSecretShapes: without temporal.key, what the
// server would keep in clear has every secret shape masked (a GitHub
// token an agent's answer holds, a URL's password), the rest as it was,
// and decodes as JSON; with a key the payload is sealed whole.
func TestPlainPayloadsMaskSecretShapes(t *testing.T) {
	pat := "ghp_" + strings.Repeat("Zq8vW2xKp9LmN4rT7yB1", 2)[:36]
	answer := map[string]any{"output": "found GH_PAT=" + pat + "\nand postgres://app:Zq8vW2xKp9LmN4rT@db:5432/app", "visit": "say"}
	dc := DataConverter(Key{})
	p, err := dc.ToPayload(answer)
	if err != nil {
		t.Fatal(err)
	}
	if s := string(p.GetData()); strings.Contains(s, pat) || strings.Contains(s, "Zq8vW2xKp9LmN4rT@") || !strings.Contains(s, "[redacted]") {
		t.Errorf("the payload kept in clear: %s", s)
	}
	var back map[string]any
	if err := dc.FromPayload(p, &back); err != nil {
		t.Fatal(err)
	}
	if back["visit"] != "say" || !strings.Contains(back["output"].(string), "found GH_PAT=[redacted]") {
		t.Errorf("decoded %v", back)
	}
	clean := map[string]any{"output": "commit 4f3a2b1c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a"}
	p, _ = dc.ToPayload(clean)
	if err := dc.FromPayload(p, &back); err != nil || back["output"] != clean["output"] {
		t.Errorf("a payload with no secret changed: %v %v", back, err)
	}
	k, err := ParseKey("Zmxvdy10ZXN0LXRlbXBvcmFsLWtleS0zMi1ieXRlcyE=")
	if err != nil {
		t.Fatal(err)
	}
	sealed := DataConverter(k)
	p, _ = sealed.ToPayload(answer)
	if string(p.GetMetadata()[converter.MetadataEncoding]) != encodingEncrypted {
		t.Fatalf("not sealed: %v", p.GetMetadata())
	}
	if err := sealed.FromPayload(p, &back); err != nil || back["output"] != answer["output"] {
		t.Errorf("a sealed payload did not come back whole: %v %v", back, err)
	}
}
