package modelserver

import (
	"net/http"
)

// chat answers POST /v1/chat/completions (OpenAI Chat Completions).
func (s *Server) chat(w http.ResponseWriter, r *http.Request, req Request) {
	rep, seq := s.reply(req)
	if !sleep(r.Context(), rep.Delay) {
		return
	}
	if failed(rep) {
		openAIError(w, rep.Status, rep.Message)
		return
	}
	id := "chatcmpl-" + itoa(seq)
	s.bill(req, rep, id)
	model := requestModel(req)
	finish := "stop"
	switch {
	case rep.Finish == "length":
		finish = "length"
	case rep.ToolCall != nil:
		finish = "tool_calls"
	}
	usage := map[string]any{
		"prompt_tokens": rep.Input, "completion_tokens": rep.Output, "total_tokens": rep.Input + rep.Output,
		"prompt_tokens_details": map[string]any{"cached_tokens": rep.CacheRead},
	}
	if !streaming(req) {
		msg := map[string]any{"role": "assistant", "content": rep.Text}
		if rep.Text == "" && rep.ToolCall != nil {
			msg["content"] = nil
		}
		if tc := rep.ToolCall; tc != nil {
			msg["tool_calls"] = []any{map[string]any{
				"id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": tc.Arguments},
			}}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "object": "chat.completion", "created": now(), "model": model,
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}

	st := newStream(r.Context(), w, rep.ChunkDelay)
	chunk := func(delta map[string]any, finish any) map[string]any {
		return map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": now(), "model": model,
			"choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}},
		}
	}
	if !st.event("", chunk(map[string]any{"role": "assistant", "content": ""}, nil)) {
		return
	}
	for _, c := range rep.pieces() {
		if !st.event("", chunk(map[string]any{"content": c}, nil)) {
			return
		}
	}
	if rep.Cut {
		return
	}
	if tc := rep.ToolCall; tc != nil {
		first := map[string]any{"index": 0, "id": tc.ID, "type": "function", "function": map[string]any{"name": tc.Name, "arguments": ""}}
		if !st.event("", chunk(map[string]any{"tool_calls": []any{first}}, nil)) {
			return
		}
		for _, c := range chunks(tc.Arguments) {
			part := map[string]any{"index": 0, "function": map[string]any{"arguments": c}}
			if !st.event("", chunk(map[string]any{"tool_calls": []any{part}}, nil)) {
				return
			}
		}
	}
	if !st.event("", chunk(map[string]any{}, finish)) {
		return
	}
	if opts, _ := req.JSON()["stream_options"].(map[string]any); opts != nil && opts["include_usage"] == true {
		if !st.event("", map[string]any{
			"id": id, "object": "chat.completion.chunk", "created": now(), "model": model, "choices": []any{}, "usage": usage,
		}) {
			return
		}
	}
	st.event("", "[DONE]")
}

// openAIError answers with an error in the OpenAI format.
func openAIError(w http.ResponseWriter, status int, message string) {
	if message == "" {
		message = "modelserver: scripted " + http.StatusText(status)
	}
	typ, code := "server_error", "server_error"
	if status == http.StatusTooManyRequests {
		typ, code = "rate_limit_exceeded", "rate_limit_exceeded"
	}
	writeJSON(w, status, map[string]any{"error": map[string]any{
		"message": message, "type": typ, "param": nil, "code": code,
	}})
}
