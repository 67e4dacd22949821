package modelserver

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"
)

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	Name string
	Data string
}

func (e sseEvent) json(t *testing.T) map[string]any {
	t.Helper()
	var v map[string]any
	if err := json.Unmarshal([]byte(e.Data), &v); err != nil {
		t.Fatalf("event %q: data is not JSON: %v: %s", e.Name, err, e.Data)
	}
	return v
}

func post(t *testing.T, url, body string, header ...string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	return resp
}

// readSSE parses a whole event stream.
func readSSE(t *testing.T, r io.Reader) []sseEvent {
	t.Helper()
	var out []sseEvent
	var cur sseEvent
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
			if cur.Data != "" || cur.Name != "" {
				out = append(out, cur)
			}
			cur = sseEvent{}
		case strings.HasPrefix(line, "event: "):
			cur.Name = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			cur.Data = strings.TrimPrefix(line, "data: ")
		default:
			t.Fatalf("unexpected SSE line %q", line)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

func TestChatStream(t *testing.T) {
	t.Parallel()
	s := Start(t,
		Reply{Text: "Hello, wörld — a longer answer.", Input: 12, Output: 7},
		Reply{Text: "Let me look.", ToolCall: &ToolCall{Name: "bash", Arguments: `{"command":"ls -la"}`}},
	)
	resp := post(t, s.URL()+"/v1/chat/completions", `{"model":"m1","stream":true,"stream_options":{"include_usage":true},"messages":[]}`)
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := readSSE(t, resp.Body)
	if last := events[len(events)-1]; last.Data != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", last.Data)
	}
	var text strings.Builder
	var finish string
	var usage map[string]any
	for _, e := range events[:len(events)-1] {
		v := e.json(t)
		if v["model"] != "m1" || v["object"] != "chat.completion.chunk" {
			t.Errorf("chunk %s: want model m1 and a chunk object", e.Data)
		}
		if u, ok := v["usage"].(map[string]any); ok {
			usage = u
			continue
		}
		c := v["choices"].([]any)[0].(map[string]any)
		if s, ok := c["delta"].(map[string]any)["content"].(string); ok {
			text.WriteString(s)
		}
		if f, ok := c["finish_reason"].(string); ok {
			finish = f
		}
	}
	if text.String() != "Hello, wörld — a longer answer." || finish != "stop" {
		t.Errorf("text %q finish %q", text.String(), finish)
	}
	if usage["prompt_tokens"] != 12.0 || usage["completion_tokens"] != 7.0 {
		t.Errorf("usage = %v", usage)
	}

	// A tool call, without usage since it was not asked for.
	resp = post(t, s.URL()+"/v1/chat/completions", `{"model":"m1","stream":true,"messages":[]}`)
	events = readSSE(t, resp.Body)
	var args strings.Builder
	var name, id string
	for _, e := range events[:len(events)-1] {
		v := e.json(t)
		if v["usage"] != nil {
			t.Errorf("usage chunk without include_usage: %s", e.Data)
		}
		c := v["choices"].([]any)[0].(map[string]any)
		if tcs, ok := c["delta"].(map[string]any)["tool_calls"].([]any); ok {
			tc := tcs[0].(map[string]any)
			if s, ok := tc["id"].(string); ok {
				id = s
			}
			f := tc["function"].(map[string]any)
			if s, ok := f["name"].(string); ok {
				name = s
			}
			args.WriteString(f["arguments"].(string))
		}
		if f, ok := c["finish_reason"].(string); ok {
			finish = f
		}
	}
	if name != "bash" || id == "" || args.String() != `{"command":"ls -la"}` || finish != "tool_calls" {
		t.Errorf("tool call %q %q %q finish %q", id, name, args.String(), finish)
	}
}

func TestChatJSON(t *testing.T) {
	t.Parallel()
	s := Start(t, Reply{Text: "plain", Finish: "length"})
	body := `{"model":"m2","messages":[{"role":"user","content":"hi"}]}`
	resp := post(t, s.URL()+"/v1/chat/completions", body)
	var v struct {
		Choices []struct {
			Message      struct{ Content string }
			FinishReason string `json:"finish_reason"`
		}
		Usage struct {
			PromptTokens int `json:"prompt_tokens"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	if v.Choices[0].Message.Content != "plain" || v.Choices[0].FinishReason != "length" || v.Usage.PromptTokens != len(body)/4 {
		t.Errorf("answer = %+v", v)
	}
	reqs := s.Requests()
	if len(reqs) != 1 || reqs[0].Path != "/v1/chat/completions" || string(reqs[0].Body) != body {
		t.Errorf("requests = %+v", reqs)
	}
}

func TestErrors(t *testing.T) {
	t.Parallel()
	s := Start(t, Reply{Status: 500}, Reply{Status: 429}, Reply{Status: 500})
	for _, tt := range []struct {
		path   string
		status int
		field  string
	}{
		{"/v1/chat/completions", 500, `"server_error"`},
		{"/v1/responses", 429, `"rate_limit_exceeded"`},
		{"/v1/messages", 500, `"api_error"`},
	} {
		resp := post(t, s.URL()+tt.path, `{"stream":true}`)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != tt.status || !strings.Contains(string(b), tt.field) {
			t.Errorf("%s: %d %s, want %d with %s", tt.path, resp.StatusCode, b, tt.status, tt.field)
		}
	}
}

func TestResponsesStream(t *testing.T) {
	t.Parallel()
	s := Start(t,
		Reply{ToolCall: &ToolCall{ID: "call_x", Name: "shell", Arguments: `{"command":["ls"]}`}, Input: 40, Output: 3},
		Reply{Text: "Done: 3 files."},
	)
	resp := post(t, s.URL()+"/v1/responses", `{"model":"gpt-test","stream":true,"input":[]}`)
	events := readSSE(t, resp.Body)
	var types []string
	for _, e := range events {
		v := e.json(t)
		if v["type"] != e.Name {
			t.Errorf("event %q carries type %v", e.Name, v["type"])
		}
		types = append(types, e.Name)
	}
	want := "response.created response.in_progress response.output_item.added response.function_call_arguments.delta " +
		"response.function_call_arguments.delta response.function_call_arguments.done response.output_item.done response.completed"
	if got := strings.Join(types, " "); got != want {
		t.Fatalf("events\n%s\nwant\n%s", got, want)
	}
	item := events[6].json(t)["item"].(map[string]any)
	if item["type"] != "function_call" || item["call_id"] != "call_x" || item["name"] != "shell" || item["arguments"] != `{"command":["ls"]}` {
		t.Errorf("function call item = %v", item)
	}
	done := events[len(events)-1].json(t)["response"].(map[string]any)
	usage := done["usage"].(map[string]any)
	if done["id"] == "" || done["status"] != "completed" || usage["input_tokens"] != 40.0 || usage["output_tokens"] != 3.0 {
		t.Errorf("completed = %v", done)
	}

	resp = post(t, s.URL()+"/v1/responses", `{"model":"gpt-test","stream":true,"input":[]}`)
	events = readSSE(t, resp.Body)
	var text strings.Builder
	var final string
	for _, e := range events {
		v := e.json(t)
		switch e.Name {
		case "response.output_text.delta":
			text.WriteString(v["delta"].(string))
		case "response.output_item.done":
			final = v["item"].(map[string]any)["content"].([]any)[0].(map[string]any)["text"].(string)
		}
	}
	if text.String() != "Done: 3 files." || final != text.String() {
		t.Errorf("text %q, final item %q", text.String(), final)
	}
}

func TestMessagesStream(t *testing.T) {
	t.Parallel()
	s := Start(t, Reply{Text: "I will list.", ToolCall: &ToolCall{Name: "Bash", Arguments: `{"command":"ls"}`}, Input: 99, Output: 5})
	resp := post(t, s.URL()+"/v1/messages", `{"model":"claude-test","stream":true,"messages":[]}`, "anthropic-version", "2023-06-01")
	events := readSSE(t, resp.Body)
	var types []string
	var text, args strings.Builder
	var stop string
	var in, out float64
	for _, e := range events {
		v := e.json(t)
		types = append(types, e.Name)
		switch e.Name {
		case "message_start":
			in = v["message"].(map[string]any)["usage"].(map[string]any)["input_tokens"].(float64)
		case "content_block_delta":
			d := v["delta"].(map[string]any)
			switch d["type"] {
			case "text_delta":
				text.WriteString(d["text"].(string))
			case "input_json_delta":
				args.WriteString(d["partial_json"].(string))
			}
		case "message_delta":
			stop = v["delta"].(map[string]any)["stop_reason"].(string)
			out = v["usage"].(map[string]any)["output_tokens"].(float64)
		}
	}
	if types[0] != "message_start" || types[len(types)-1] != "message_stop" {
		t.Errorf("events %v", types)
	}
	if text.String() != "I will list." || args.String() != `{"command":"ls"}` || stop != "tool_use" || in != 99 || out != 5 {
		t.Errorf("text %q args %q stop %q usage %v/%v", text.String(), args.String(), stop, in, out)
	}
}

func TestMessagesJSONAndSideRequests(t *testing.T) {
	t.Parallel()
	s := Start(t, Reply{Text: "one"}, Reply{Text: "two"})
	for _, side := range []struct{ method, path string }{{"HEAD", "/"}, {"GET", "/"}, {"GET", "/v1/models"}} {
		req, _ := http.NewRequest(side.method, s.URL()+side.path, nil)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("%s %s: %v %v", side.method, side.path, resp, err)
		}
		_ = resp.Body.Close()
	}
	resp := post(t, s.URL()+"/v1/messages/count_tokens", `{"messages":[{"role":"user","content":"hello there"}]}`)
	var count struct {
		InputTokens int `json:"input_tokens"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&count); err != nil || count.InputTokens == 0 {
		t.Errorf("count_tokens = %+v, %v", count, err)
	}
	// Side requests consumed no reply.
	for _, want := range []string{"one", "two", "two"} {
		resp := post(t, s.URL()+"/v1/messages", `{"model":"c"}`)
		var v struct {
			Content    []struct{ Type, Text string }
			StopReason string `json:"stop_reason"`
		}
		if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		if len(v.Content) != 1 || v.Content[0].Text != want || v.StopReason != "end_turn" {
			t.Errorf("message = %+v, want %q", v, want)
		}
	}
	if n := len(s.Requests()); n != 7 {
		t.Errorf("%d requests recorded, want 7", n)
	}
}

func TestHandleAndSlowStream(t *testing.T) {
	t.Parallel()
	s := Start(t)
	s.Handle(func(r Request) Reply {
		return Reply{Text: "abcdefghijklmnopqrstuvwxyz0123456789", Delay: 50 * time.Millisecond, ChunkDelay: time.Hour}
	})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, s.URL()+"/v1/chat/completions", strings.NewReader(`{"stream":true}`))
	start := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 50*time.Millisecond {
		t.Errorf("answered in %v, before the delay", time.Since(start))
	}
	br := bufio.NewReader(resp.Body)
	if line, err := br.ReadString('\n'); err != nil || !strings.HasPrefix(line, "data: ") {
		t.Fatalf("first line %q, %v", line, err)
	}
	cancel() // the next chunk is an hour away: the client gives up
	if _, err := io.ReadAll(br); !errors.Is(err, context.Canceled) {
		t.Errorf("reading after cancel: %v", err)
	}
	_ = resp.Body.Close()
	// Close (on cleanup) must not wait an hour for the handler.
}

func TestCut(t *testing.T) {
	t.Parallel()
	s := Start(t, Reply{Text: "partial", Cut: true})
	resp := post(t, s.URL()+"/v1/chat/completions", `{"stream":true,"stream_options":{"include_usage":true}}`)
	events := readSSE(t, resp.Body)
	for _, e := range events {
		if e.Data == "[DONE]" || strings.Contains(e.Data, `"finish_reason":"`) || strings.Contains(e.Data, `"usage"`) {
			t.Errorf("cut stream carries %s", e.Data)
		}
	}
}

func TestErrorMessage(t *testing.T) {
	t.Parallel()
	s := Start(t, Reply{Status: 401, Message: "bad key sk-echoed"}, Reply{Status: 401, Message: "bad key sk-echoed"})
	for _, path := range []string{"/v1/chat/completions", "/v1/messages"} {
		resp := post(t, s.URL()+path, `{}`)
		b, _ := io.ReadAll(resp.Body)
		if resp.StatusCode != 401 || !strings.Contains(string(b), `"message":"bad key sk-echoed"`) {
			t.Errorf("%s: %d %s, want 401 with the scripted message", path, resp.StatusCode, b)
		}
	}
}
