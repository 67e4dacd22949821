package meter

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/flowrun/flow/steps/usage"
)

// usageReader passes a response body on as it is read, and reads the
// usage in it: from each `data:` line of a stream, or from a whole JSON
// body at its end. It knows the three APIs the CLIs speak: the Responses
// API (the final response.completed, .incomplete or .failed event), Chat
// Completions (a chunk's usage, the last standing) and the Anthropic
// Messages API (message_start's usage, completed by message_delta's).
type usageReader struct {
	body  io.ReadCloser
	seen  func(id string, c usage.Call)
	line  []byte // the incomplete line read so far
	whole bytes.Buffer
	long  bool // the line or body outgrew maxJSONBody: not read

	message string     // a Messages stream's message id
	atStart *wireUsage // and its usage at message_start
}

func (r *usageReader) Read(p []byte) (int, error) {
	n, err := r.body.Read(p)
	r.scan(p[:n])
	if err == io.EOF {
		r.end()
	}
	return n, err
}

func (r *usageReader) Close() error { return r.body.Close() }

func (r *usageReader) scan(b []byte) {
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			r.keep(b)
			return
		}
		r.keep(b[:i])
		r.lineDone()
		b = b[i+1:]
	}
}

func (r *usageReader) keep(b []byte) {
	if r.long {
		return
	}
	if len(r.line)+len(b) > maxJSONBody {
		r.long, r.line = true, nil
		return
	}
	r.line = append(r.line, b...)
}

// lineDone reads a whole line: a stream's data line, or a line of a JSON
// body, kept for the end.
func (r *usageReader) lineDone() {
	line := bytes.TrimSpace(r.line)
	r.line = r.line[:0]
	if data, ok := bytes.CutPrefix(line, []byte("data:")); ok {
		r.payload(bytes.TrimSpace(data))
		return
	}
	if !r.long && r.whole.Len()+len(line) <= maxJSONBody {
		r.whole.Write(line)
	}
}

// end reads a body that was no stream, whole.
func (r *usageReader) end() {
	if len(r.line) > 0 {
		r.lineDone()
	}
	if r.whole.Len() > 0 {
		r.payload(r.whole.Bytes())
		r.whole.Reset()
	}
}

// wireUsage is a usage object of the Responses API (input_tokens, …),
// Chat Completions (prompt_tokens, …) or the Messages API (input_tokens
// without the cache, cache_read_input_tokens, …).
type wireUsage struct {
	Input        *int64 `json:"input_tokens"`
	Output       *int64 `json:"output_tokens"`
	Prompt       *int64 `json:"prompt_tokens"`
	Completion   *int64 `json:"completion_tokens"`
	CacheRead    *int64 `json:"cache_read_input_tokens"`
	CacheWrite   *int64 `json:"cache_creation_input_tokens"`
	InputDetails *struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"input_tokens_details"`
	PromptDetails *struct {
		Cached *int64 `json:"cached_tokens"`
	} `json:"prompt_tokens_details"`
}

// payload is one JSON payload of an answer.
type payload struct {
	Type     string     `json:"type"`
	ID       string     `json:"id"`
	Usage    *wireUsage `json:"usage"`
	Response *struct {
		ID    string     `json:"id"`
		Usage *wireUsage `json:"usage"`
	} `json:"response"`
	Message *struct {
		ID    string     `json:"id"`
		Usage *wireUsage `json:"usage"`
	} `json:"message"`
}

// payload reads the usage in one JSON payload, if it holds one.
func (r *usageReader) payload(b []byte) {
	if len(b) == 0 || b[0] != '{' {
		return
	}
	var p payload
	if json.Unmarshal(b, &p) != nil {
		return
	}
	switch {
	case p.Type == "message_start" && p.Message != nil:
		// The Messages API: the usage at the start (one output token),
		// counted now and completed by message_delta.
		r.message, r.atStart = p.Message.ID, p.Message.Usage
		if u := p.Message.Usage; u != nil {
			r.seen(r.message, anthropic(u, nil))
		}
	case p.Type == "message_delta" && p.Usage != nil:
		r.seen(r.message, anthropic(r.atStart, p.Usage))
	case p.Type == "message" && p.Usage != nil: // a Messages answer that is no stream
		r.seen(p.ID, anthropic(p.Usage, nil))
	case p.Response != nil && p.Response.Usage != nil:
		r.seen(p.Response.ID, openAI(p.Response.Usage))
	case p.Usage != nil:
		r.seen(p.ID, openAI(p.Usage))
	}
}

// anthropic is a Messages usage: start's figures, each replaced by
// end's where it gives one (message_delta's are the message's totals).
func anthropic(start, end *wireUsage) usage.Call {
	var u wireUsage
	for _, w := range []*wireUsage{start, end} {
		if w == nil {
			continue
		}
		for _, f := range []struct{ to, from **int64 }{
			{&u.Input, &w.Input}, {&u.Output, &w.Output}, {&u.CacheRead, &w.CacheRead}, {&u.CacheWrite, &w.CacheWrite},
		} {
			if *f.from != nil {
				*f.to = *f.from
			}
		}
	}
	return usage.Anthropic(u.Input, u.Output, u.CacheRead, u.CacheWrite)
}

// openAI is a Responses or Chat Completions usage: the prompt counts its
// cached tokens, which usage.OpenAI takes out of the input.
func openAI(u *wireUsage) usage.Call {
	if u.Prompt != nil || u.Completion != nil {
		var cached *int64
		if u.PromptDetails != nil {
			cached = u.PromptDetails.Cached
		}
		return usage.OpenAI(u.Prompt, cached, u.Completion)
	}
	var cached *int64
	if u.InputDetails != nil {
		cached = u.InputDetails.Cached
	}
	return usage.OpenAI(u.Input, cached, u.Output)
}
