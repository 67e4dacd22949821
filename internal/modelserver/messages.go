package modelserver

import (
	"net/http"
)

// messages answers POST /v1/messages (the Anthropic Messages API, which
// Claude Code speaks).
func (s *Server) messages(w http.ResponseWriter, r *http.Request, req Request) {
	rep, seq := s.reply(req)
	if !sleep(r.Context(), rep.Delay) {
		return
	}
	if failed(rep) {
		anthropicError(w, rep.Status, rep.Message)
		return
	}
	id := "msg_" + itoa(seq)
	s.bill(req, rep, id)
	model := requestModel(req)
	stop := "end_turn"
	switch {
	case rep.Finish == "length":
		stop = "max_tokens"
	case rep.ToolCall != nil:
		stop = "tool_use"
	}
	// The Messages API counts cached tokens apart from input_tokens.
	fresh := rep.Input - rep.CacheRead - rep.CacheWrite
	usage := map[string]any{
		"input_tokens": fresh, "output_tokens": rep.Output,
		"cache_creation_input_tokens": rep.CacheWrite, "cache_read_input_tokens": rep.CacheRead,
	}
	toolID := func() string {
		if id := rep.ToolCall.ID; len(id) >= 5 && id[:5] == "call_" {
			return "toolu_" + id[5:]
		}
		return rep.ToolCall.ID
	}
	if !streaming(req) {
		content := []any{}
		if rep.Text != "" || rep.ToolCall == nil {
			content = append(content, map[string]any{"type": "text", "text": rep.Text})
		}
		if tc := rep.ToolCall; tc != nil {
			content = append(content, map[string]any{"type": "tool_use", "id": toolID(), "name": tc.Name, "input": rawJSON(tc.Arguments)})
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": model, "content": content,
			"stop_reason": stop, "stop_sequence": nil, "usage": usage,
		})
		return
	}

	st := newStream(r.Context(), w, rep.ChunkDelay)
	ev := func(typ string, fields map[string]any) bool {
		fields["type"] = typ
		return st.event(typ, fields)
	}
	start := map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{
			"input_tokens": fresh, "output_tokens": 1, "cache_creation_input_tokens": rep.CacheWrite, "cache_read_input_tokens": rep.CacheRead,
		},
	}
	if !ev("message_start", map[string]any{"message": start}) || !ev("ping", map[string]any{}) {
		return
	}
	index := 0
	if rep.Text != "" || rep.ToolCall == nil {
		if !ev("content_block_start", map[string]any{"index": index, "content_block": map[string]any{"type": "text", "text": ""}}) {
			return
		}
		for _, c := range rep.pieces() {
			if !ev("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "text_delta", "text": c}}) {
				return
			}
		}
		if rep.Cut {
			return
		}
		if !ev("content_block_stop", map[string]any{"index": index}) {
			return
		}
		index++
	} else if rep.Cut {
		return
	}
	if tc := rep.ToolCall; tc != nil {
		block := map[string]any{"type": "tool_use", "id": toolID(), "name": tc.Name, "input": map[string]any{}}
		if !ev("content_block_start", map[string]any{"index": index, "content_block": block}) {
			return
		}
		for _, c := range chunks(tc.Arguments) {
			if !ev("content_block_delta", map[string]any{"index": index, "delta": map[string]any{"type": "input_json_delta", "partial_json": c}}) {
				return
			}
		}
		if !ev("content_block_stop", map[string]any{"index": index}) {
			return
		}
	}
	if !ev("message_delta", map[string]any{"delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": usage}) {
		return
	}
	ev("message_stop", map[string]any{})
}

// anthropicError answers with an error in the Anthropic format.
func anthropicError(w http.ResponseWriter, status int, message string) {
	if message == "" {
		message = "modelserver: scripted " + http.StatusText(status)
	}
	typ := "api_error"
	switch status {
	case http.StatusTooManyRequests:
		typ = "rate_limit_error"
	case 529:
		typ = "overloaded_error"
	case http.StatusBadRequest:
		typ = "invalid_request_error"
	}
	w.Header().Set("request-id", "req_modelserver")
	writeJSON(w, status, map[string]any{"type": "error", "error": map[string]any{
		"type": typ, "message": message,
	}})
}
