package openai

import (
	"encoding/json"
)

// message is one chat message: the system's, the user's, the assistant's
// (with the tools it calls), or a tool's result.
type message struct {
	Role       string     `json:"role"`
	Content    string     `json:"content"`
	ToolCalls  []wireCall `json:"tool_calls,omitempty"`
	ToolCallID string     `json:"tool_call_id,omitempty"`
}

// wireCall is a tool call as the assistant's message carries it.
type wireCall struct {
	ID       string `json:"id"`
	Type     string `json:"type"`
	Function struct {
		Name      string `json:"name"`
		Arguments string `json:"arguments"`
	} `json:"function"`
}

// conversation is the messages of a turn's first request: the system
// message, the session's history, the turn text.
func conversation(system string, history []message, prompt string) []message {
	msgs := make([]message, 0, len(history)+2)
	if system != "" {
		msgs = append(msgs, message{Role: "system", Content: system})
	}
	msgs = append(msgs, history...)
	return append(msgs, message{Role: "user", Content: prompt})
}

// requestBody builds one streaming chat completions request of a turn,
// offering tools when there are any.
func requestBody(model string, msgs []message, schema []byte, tools []any) []byte {
	req := map[string]any{
		"model":          model,
		"messages":       msgs,
		"stream":         true,
		"stream_options": map[string]any{"include_usage": true},
	}
	if len(tools) > 0 {
		req["tools"] = tools
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
