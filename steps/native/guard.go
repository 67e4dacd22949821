package native

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// truncated says, for a request of body and the prompt tokens the server
// counted for it, that the server dropped part of the prompt: it counted
// fewer than half of body's bytes/4, a low estimate of the tokens of any
// text, on a request of at least 4000 bytes (a chat template's own tokens
// make small counts noisy). "" when it did not, or reported nothing.
func truncated(body []byte, prompt *int64) string {
	if prompt == nil {
		return ""
	}
	est := int64(len(body)) / 4
	if est < 1000 || *prompt*2 >= est {
		return ""
	}
	return fmt.Sprintf("context truncated: the server counted %d prompt tokens for a request of %d bytes (at least %d tokens): it dropped part of the conversation, tool definitions first; "+
		"give the model a larger context (Ollama: num_ctx or OLLAMA_CONTEXT_LENGTH; llama.cpp: --ctx-size; vLLM: --max-model-len)", *prompt, len(body), est)
}

// isOllama says whether the turn's server is Ollama: its root answers
// GET /api/version with a version. The answer is kept per server.
func (c *conv) isOllama(ctx context.Context) bool {
	if c.ollama != nil {
		return *c.ollama
	}
	root := strings.TrimSuffix(strings.TrimSuffix(c.endpoint(), "/chat/completions"), "/v1")
	if v, ok := c.d.ollama.Load(root); ok {
		b := v.(bool)
		c.ollama = &b
		return b
	}
	b := probeOllama(ctx, c.d.opts.HTTPClient, root)
	c.d.ollama.Store(root, b)
	c.ollama = &b
	if b {
		c.notes = append(c.notes, "the server is Ollama: requests carry options.num_ctx")
	}
	return b
}

func probeOllama(ctx context.Context, client *http.Client, root string) bool {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, root+"/api/version", nil)
	if err != nil {
		return false
	}
	resp, err := client.Do(req)
	if err != nil {
		return false
	}
	defer resp.Body.Close()
	var v struct {
		Version string `json:"version"`
	}
	return resp.StatusCode == http.StatusOK && json.NewDecoder(resp.Body).Decode(&v) == nil && v.Version != ""
}

// withNumCtx adds Ollama's options.num_ctx to a request: the configured
// size, else the smallest power of two from 16384 that holds the request
// twice over (so that the answers that follow fit too); it only grows
// within a turn, since every change reloads the model.
func (c *conv) withNumCtx(body []byte) []byte {
	n := c.d.opts.NumCtx
	if n <= 0 {
		need := len(body)/2 + 4096
		n = max(c.numCtx, 16384)
		for n < need && n < 1<<20 {
			n *= 2
		}
	}
	c.numCtx = n
	var req map[string]json.RawMessage
	if json.Unmarshal(body, &req) != nil {
		return body
	}
	opts, _ := json.Marshal(map[string]any{"num_ctx": n})
	req["options"] = opts
	out, err := json.Marshal(req)
	if err != nil {
		return body
	}
	return out
}
