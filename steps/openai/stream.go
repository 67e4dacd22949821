package openai

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/transcript"
	"github.com/flowrun/flow/steps/usage"
)

// chunk is one chat.completion.chunk, or a whole chat.completion.
type chunk struct {
	ID      string `json:"id"`
	Choices []struct {
		Delta   delta  `json:"delta"`
		Message *delta `json:"message"`
		Finish  string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     *int64 `json:"prompt_tokens"`
		Completion *int64 `json:"completion_tokens"`
		Details    *struct {
			Cached *int64 `json:"cached_tokens"`
		} `json:"prompt_tokens_details"`
	} `json:"usage"`
	Error *struct {
		Message string `json:"message"`
	} `json:"error"`
}

type delta struct {
	Content   *string `json:"content"`
	Reasoning *string `json:"reasoning_content"`
	ToolCalls []struct {
		Index    int    `json:"index"`
		ID       string `json:"id"`
		Function struct {
			Name      string `json:"name"`
			Arguments string `json:"arguments"`
		} `json:"function"`
	} `json:"tool_calls"`
}

// parser folds a chat completions stream into an answer.
type parser struct {
	progress  func(engine.Progress)
	text      *transcript.Answer // at most engine.AnswerLimit bytes in memory
	reasoning strings.Builder
	tools     map[int]*toolCall
	order     []int
	finish    string
	ledger    *usage.Ledger // shared by the turn's rounds
	offered   bool          // the request offered tools
	done      bool          // [DONE] seen, or a whole JSON answer read
	lastProg  time.Time
	diag      []string
	id        string      // the completion's id, as its chunks give it
	prompt    *int64      // the prompt tokens the server reported
	reported  *usage.Call // the answer's usage, as the server reported it
}

type toolCall struct{ id, name, args string }

func newParser(progress func(engine.Progress)) *parser {
	return roundParser(progress, &usage.Ledger{})
}

// roundParser returns a parser for one round of a turn whose usage goes
// into ledger.
func roundParser(progress func(engine.Progress), ledger *usage.Ledger) *parser {
	return &parser{progress: progress, tools: map[int]*toolCall{}, text: transcript.NewAnswer("", "", nil), ledger: ledger}
}

// stream reads server-sent events to the end, logging every data line.
func (p *parser) stream(r io.Reader, log *transcript.Log) error {
	br := bufio.NewReaderSize(r, 64<<10)
	for n := 1; ; n++ {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			p.line(n, line, log)
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}

func (p *parser) line(n int, raw []byte, log *transcript.Log) {
	line := bytes.TrimRight(raw, "\r\n")
	switch {
	case len(line) == 0, line[0] == ':', bytes.HasPrefix(line, []byte("event:")), bytes.HasPrefix(line, []byte("id:")),
		bytes.HasPrefix(line, []byte("retry:")):
		return
	case !bytes.HasPrefix(line, []byte("data:")):
		log.Raw(line)
		p.diag = append(p.diag, fmt.Sprintf("malformed line %d: not an SSE data line: %s", n, clip(string(line))))
		return
	}
	data := bytes.TrimSpace(line[len("data:"):])
	log.Raw(data)
	if p.done {
		p.diag = append(p.diag, fmt.Sprintf("malformed line %d: data after [DONE]", n))
		return
	}
	if string(data) == "[DONE]" {
		p.done = true
		p.ledger.Final()
		return
	}
	var c chunk
	if err := json.Unmarshal(data, &c); err != nil {
		p.diag = append(p.diag, fmt.Sprintf("malformed line %d: %v", n, err))
		return
	}
	p.chunk(&c)
}

// whole reads a non-streamed answer, for servers that ignore stream: true.
func (p *parser) whole(r io.Reader, log *transcript.Log) error {
	b, err := io.ReadAll(r)
	if err != nil {
		return err
	}
	log.Raw(b)
	var c chunk
	if err := json.Unmarshal(b, &c); err != nil {
		p.diag = append(p.diag, fmt.Sprintf("malformed answer: %v", err))
		return nil
	}
	for i := range c.Choices {
		if m := c.Choices[i].Message; m != nil {
			c.Choices[i].Delta = *m
		}
	}
	p.chunk(&c)
	p.done = true
	p.ledger.Final()
	return nil
}

func (p *parser) chunk(c *chunk) {
	if c.Error != nil {
		p.diag = append(p.diag, "the server reported an error in the stream: "+c.Error.Message)
	}
	if c.ID != "" {
		p.id = c.ID
	}
	if u := c.Usage; u != nil {
		p.prompt = u.Prompt
		// prompt_tokens counts the cached ones; a stream reports its usage
		// once, in its last chunk, under the completion's id.
		var cached *int64
		if u.Details != nil {
			cached = u.Details.Cached
		}
		call := usage.OpenAI(u.Prompt, cached, u.Completion)
		p.reported = &call
		p.ledger.Report(c.ID, call)
		p.progress(engine.Progress{Activity: "writing", Tokens: p.ledger.Tokens()})
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if d.Content != nil && *d.Content != "" {
			_, _ = p.text.WriteString(*d.Content) // an error is the answer file's: Close reports it
			p.report()
		}
		if d.Reasoning != nil {
			p.reasoning.WriteString(*d.Reasoning)
		}
		for _, tc := range d.ToolCalls {
			t := p.tools[tc.Index]
			if t == nil {
				t = &toolCall{}
				p.tools[tc.Index] = t
				p.order = append(p.order, tc.Index)
			}
			if tc.ID != "" {
				t.id = tc.ID
			}
			t.name += tc.Function.Name
			t.args += tc.Function.Arguments
		}
		if ch.Finish != "" {
			p.finish = ch.Finish
		}
	}
}

// report sends progress at most twice a second, with the tokens the
// server reported (none until its last chunk: a count of chunks is no
// usage).
func (p *parser) report() {
	if now := time.Now(); now.Sub(p.lastProg) >= 500*time.Millisecond {
		p.lastProg = now
		p.progress(engine.Progress{Activity: "writing", Tokens: p.ledger.Tokens()})
	}
}

// outcome decides the status as docs/drivers.md, Failures says, and completes the diagnostics.
func (p *parser) outcome() (engine.TurnStatus, []string) {
	diag := p.diag
	ok := len(diag) == 0
	if !p.done {
		diag = append(diag, "the stream ended without [DONE]")
		ok = false
	}
	switch p.finish {
	case "stop":
	case "length":
		diag = append(diag, "the model hit its length limit (finish_reason length)")
		ok = false
	case "tool_calls", "function_call":
		var names []string
		for _, i := range p.order {
			names = append(names, p.tools[i].name)
		}
		if p.offered {
			diag = append(diag, fmt.Sprintf("the model is still requesting tools (%s)", strings.Join(names, ", ")))
		} else {
			diag = append(diag, fmt.Sprintf("the model is still requesting tools (%s); the openai driver offers none to a turn that may not delegate", strings.Join(names, ", ")))
		}
		ok = false
	case "":
		diag = append(diag, "the stream gave no finish reason")
		ok = false
	default:
		diag = append(diag, fmt.Sprintf("the model stopped abnormally (finish_reason %s)", p.finish))
		ok = false
	}
	if p.text.Blank() {
		diag = append(diag, "no answer: the model wrote no text")
		ok = false
	}
	if ok {
		return engine.Completed, diag
	}
	return engine.Failed, diag
}

// steps lists what the turn did, for the readable transcript.
func (p *parser) steps() []transcript.Step {
	var out []transcript.Step
	if p.reasoning.Len() > 0 {
		out = append(out, transcript.Step{Kind: "thinking", Text: p.reasoning.String()})
	}
	for _, i := range p.order {
		out = append(out, transcript.Step{Kind: "tool", Title: p.tools[i].name, Text: p.tools[i].args})
	}
	return out
}

func clip(s string) string {
	if len(s) > 120 {
		return strings.ToValidUTF8(s[:120], "") + "…"
	}
	return s
}

// setUsage sets res's usage to what the stream reported, keeping its turns.
func (p *parser) setUsage(res *engine.TurnResult) {
	turns := res.Usage.Turns
	res.Usage = p.ledger.Usage()
	res.Usage.Turns = turns
}
