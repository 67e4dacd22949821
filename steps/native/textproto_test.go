package native

import "testing"

func TestParseText(t *testing.T) {
	tools := []string{"bash", "read"}
	for _, c := range []struct {
		text, name, args string
		ok               bool
	}{
		{"I will look.\n```tool\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```", "bash", `{"command": "ls"}`, true},
		{"```json\n{\"name\": \"read\", \"arguments\": \"{\\\"path\\\": \\\"a\\\"}\"}\n```", "read", `{"path": "a"}`, true},
		{`{"name": "bash", "arguments": {"command": "pwd"}}`, "bash", `{"command": "pwd"}`, true},
		{"```tool\n{\"name\": \"rm\", \"arguments\": {}}\n```", "", "", false},
		{"The answer is 42.", "", "", false},
		{"```json\n{\"answer\": 1}\n```", "", "", false},
	} {
		name, args, ok := parseText(c.text, tools, false)
		if name != c.name || args != c.args || ok != c.ok {
			t.Errorf("parseText(%q) = %q, %q, %v; want %q, %q, %v", c.text, name, args, ok, c.name, c.args, c.ok)
		}
	}
	shown := "Call it like this:\n```tool\n{\"name\": \"bash\", \"arguments\": {\"command\": \"ls\"}}\n```\nand you will see."
	if _, _, ok := parseText(shown, tools, true); ok {
		t.Error("a block the answer goes on after is taken for a call where only a last block counts")
	}
	if name, _, ok := parseText(shown, tools, false); !ok || name != "bash" {
		t.Error("the text protocol does not take a block the answer goes on after")
	}
}

func TestTruncatedGuard(t *testing.T) {
	body := make([]byte, 40000) // at least 10000 tokens
	low, fair, none := int64(2048), int64(9000), (*int64)(nil)
	if truncated(body, &low) == "" {
		t.Error("2048 prompt tokens for a request of 40000 bytes is not taken for a truncation")
	}
	if msg := truncated(body, &fair); msg != "" {
		t.Errorf("9000 prompt tokens for 40000 bytes is taken for a truncation: %s", msg)
	}
	if truncated(body, none) != "" || truncated(make([]byte, 2000), &low) != "" {
		t.Error("no report, or a small request, is taken for a truncation")
	}
}
