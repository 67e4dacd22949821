package modelserver

import (
	"encoding/json"
	"testing"
)

// Each API reports the cached share of the prompt in its own convention,
// and the server bills the whole prompt and the output once per answered
// request; an error reply bills nothing.
func TestBilledAndCacheConventions(t *testing.T) {
	t.Parallel()
	s := Start(t,
		Reply{Text: "a", Input: 100, Output: 5, CacheRead: 60, CacheWrite: 10},
		Reply{Text: "b", Input: 100, Output: 5, CacheRead: 60},
		Reply{Status: 500},
		Reply{Text: "c", Input: 100, Output: 5, CacheRead: 60})
	usage := func(path, body string) map[string]any {
		var v map[string]any
		if err := json.NewDecoder(post(t, s.URL()+path, body).Body).Decode(&v); err != nil {
			t.Fatal(err)
		}
		u, _ := v["usage"].(map[string]any)
		return u
	}
	if u := usage("/v1/messages", `{"model":"m","messages":[]}`); u["input_tokens"] != 30.0 || u["cache_read_input_tokens"] != 60.0 ||
		u["cache_creation_input_tokens"] != 10.0 {
		t.Errorf("messages usage = %v, want input 30 apart from 60 read and 10 written", u)
	}
	if u := usage("/v1/chat/completions", `{"model":"m","messages":[]}`); u["prompt_tokens"] != 100.0 ||
		u["prompt_tokens_details"].(map[string]any)["cached_tokens"] != 60.0 {
		t.Errorf("chat usage = %v, want prompt 100 with 60 cached", u)
	}
	post(t, s.URL()+"/v1/chat/completions", `{"model":"m","messages":[]}`)
	if u := usage("/v1/responses", `{"model":"m","input":"x"}`); u["input_tokens"] != 100.0 ||
		u["input_tokens_details"].(map[string]any)["cached_tokens"] != 60.0 {
		t.Errorf("responses usage = %v, want input 100 with 60 cached", u)
	}
	if got := s.Billed(); got != 3*105 || len(s.Bills()) != 3 {
		t.Errorf("billed %d in %v, want 315 in 3 bills", got, s.Bills())
	}
}
