package modelserver

import (
	"net/http"
)

// responses answers POST /v1/responses (the OpenAI Responses API, which
// Codex speaks).
func (s *Server) responses(w http.ResponseWriter, r *http.Request, req Request) {
	rep, seq := s.reply(req)
	if !sleep(r.Context(), rep.Delay) {
		return
	}
	if failed(rep) {
		openAIError(w, rep.Status, rep.Message)
		return
	}
	id := "resp_" + itoa(seq)
	s.bill(req, rep, id)
	msgID := "msg_" + itoa(seq)
	fcID := "fc_" + itoa(seq)
	model := requestModel(req)
	created := now()

	var output []any
	message := func(status string, text string) map[string]any {
		content := []any{}
		if status == "completed" {
			content = []any{map[string]any{"type": "output_text", "text": text, "annotations": []any{}}}
		}
		return map[string]any{"id": msgID, "type": "message", "status": status, "role": "assistant", "content": content}
	}
	call := func(status string, args string) map[string]any {
		tc := rep.ToolCall
		item := map[string]any{"id": fcID, "type": "function_call", "status": status, "call_id": tc.ID, "name": tc.Name, "arguments": args}
		if tc.Namespace != "" {
			item["namespace"] = tc.Namespace
		}
		return item
	}
	if rep.Text != "" || rep.ToolCall == nil {
		output = append(output, message("completed", rep.Text))
	}
	if rep.ToolCall != nil {
		output = append(output, call("completed", rep.ToolCall.Arguments))
	}
	status := "completed"
	var incomplete any
	if rep.Finish == "length" {
		status, incomplete = "incomplete", map[string]any{"reason": "max_output_tokens"}
	}
	response := func(status string, output []any, usage any) map[string]any {
		return map[string]any{
			"id": id, "object": "response", "created_at": created, "status": status, "model": model,
			"output": output, "incomplete_details": incomplete, "error": nil, "usage": usage,
			"parallel_tool_calls": true, "tool_choice": "auto", "tools": []any{},
		}
	}
	usage := map[string]any{
		"input_tokens": rep.Input, "input_tokens_details": map[string]any{"cached_tokens": rep.CacheRead},
		"output_tokens": rep.Output, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
		"total_tokens": rep.Input + rep.Output,
	}
	if !streaming(req) {
		writeJSON(w, http.StatusOK, response(status, output, usage))
		return
	}

	st := newStream(r.Context(), w, rep.ChunkDelay)
	sn := 0
	ev := func(typ string, fields map[string]any) bool {
		fields["type"] = typ
		fields["sequence_number"] = sn
		sn++
		return st.event(typ, fields)
	}
	if !ev("response.created", map[string]any{"response": response("in_progress", []any{}, nil)}) ||
		!ev("response.in_progress", map[string]any{"response": response("in_progress", []any{}, nil)}) {
		return
	}
	index := 0
	if rep.Text != "" || rep.ToolCall == nil {
		part := map[string]any{"type": "output_text", "text": "", "annotations": []any{}}
		if !ev("response.output_item.added", map[string]any{"output_index": index, "item": message("in_progress", "")}) ||
			!ev("response.content_part.added", map[string]any{"item_id": msgID, "output_index": index, "content_index": 0, "part": part}) {
			return
		}
		for _, c := range rep.pieces() {
			if !ev("response.output_text.delta", map[string]any{
				"item_id": msgID, "output_index": index, "content_index": 0, "delta": c, "logprobs": []any{},
			}) {
				return
			}
		}
		if rep.Cut {
			return
		}
		done := map[string]any{"type": "output_text", "text": rep.Text, "annotations": []any{}}
		if !ev("response.output_text.done", map[string]any{
			"item_id": msgID, "output_index": index, "content_index": 0, "text": rep.Text, "logprobs": []any{},
		}) ||
			!ev("response.content_part.done", map[string]any{"item_id": msgID, "output_index": index, "content_index": 0, "part": done}) ||
			!ev("response.output_item.done", map[string]any{"output_index": index, "item": message("completed", rep.Text)}) {
			return
		}
		index++
	} else if rep.Cut {
		return
	}
	if tc := rep.ToolCall; tc != nil {
		if !ev("response.output_item.added", map[string]any{"output_index": index, "item": call("in_progress", "")}) {
			return
		}
		for _, c := range chunks(tc.Arguments) {
			if !ev("response.function_call_arguments.delta", map[string]any{"item_id": fcID, "output_index": index, "delta": c}) {
				return
			}
		}
		if !ev("response.function_call_arguments.done", map[string]any{"item_id": fcID, "output_index": index, "arguments": tc.Arguments}) ||
			!ev("response.output_item.done", map[string]any{"output_index": index, "item": call("completed", tc.Arguments)}) {
			return
		}
	}
	final := "response.completed"
	if status == "incomplete" {
		final = "response.incomplete"
	}
	ev(final, map[string]any{"response": response(status, output, usage)})
}
