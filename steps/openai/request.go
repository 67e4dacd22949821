package openai

import (
	"encoding/json"
)

// message is one chat message.
type message struct {
	Role    string `json:"role"`
	Content string `json:"content"`
}

// requestBody builds the streaming chat completions request of one turn.
func requestBody(model, system string, history []message, prompt string, schema []byte) []byte {
	msgs := make([]message, 0, len(history)+2)
	if system != "" {
		msgs = append(msgs, message{Role: "system", Content: system})
	}
	msgs = append(msgs, history...)
	msgs = append(msgs, message{Role: "user", Content: prompt})
	req := map[string]any{
		"model":          model,
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if rf := responseFormat(schema); rf != nil {
		req["response_format"] = rf
	}
	b, _ := json.Marshal(req)
	return b
}

// responseFormat returns the json_schema response format for a typed
// output, or nil when the schema's root is not an object.
func responseFormat(schema []byte) map[string]any {
	if schema == nil {
		return nil
	}
	var s map[string]any
	if json.Unmarshal(schema, &s) != nil || s["type"] != "object" {
		return nil
	}
	return map[string]any{
		"type": "json_schema",
		"json_schema": map[string]any{
			"name":   "output",
			"schema": json.RawMessage(schema),
			"strict": strict(s),
		},
	}
}

// strict reports whether a schema meets OpenAI's strict structured-output
// rules: every object closed with every property required, and no open
// schema ({}) anywhere.
func strict(s map[string]any) bool {
	if len(s) == 0 {
		return false
	}
	switch s["type"] {
	case "object":
		props, _ := s["properties"].(map[string]any)
		req, _ := s["required"].([]any)
		if s["additionalProperties"] != false || len(req) != len(props) {
			return false
		}
		for _, p := range props {
			ps, ok := p.(map[string]any)
			if !ok || !strict(ps) {
				return false
			}
		}
	case "array":
		items, ok := s["items"].(map[string]any)
		return ok && strict(items)
	}
	return true
}
