package secret

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"html"
	"html/template"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// MinLen is the length below which a value is not taken for a secret: a
// short one would redact ordinary text ("1", "true", "output") and, worse,
// flow's own words.
const MinLen = 8

// flowWords are the words of MinLen bytes or more that flow itself writes
// as names or fixed values in the run directory and on the screen: JSON
// keys of the journal, the events, the snapshot, the transcripts, sweeps
// and reports, the values it writes from a fixed set (statuses, fact and
// event types, failure kinds, diagnostic codes), and the keywords of flow
// files (the snapshot carries the source). A secret equal to one would be found inside flow's
// own structure, so such a value is not used (Unsafe). The packages that
// write these files test that every key they write of MinLen bytes or
// more is here (FlowWord).
var flowWords = map[string]bool{}

func init() {
	for _, w := range strings.Fields(`
unpriced wall_p50_ms wall_p95_ms providers requests waited_ms per_minute cache_hit_ratio
activity answer_file api_key_env assignment assignments attempts base_url baseline branches by_params
cache_read cache_write concurrency cost_basis cost_per_success costs_most deadline default_timeout
description diagnostics empty_answers execution expected fails_most failures finish_reason flow_turn
flow_turn_start flow_raw_cut after_bytes frontier has_default input_tokens instructions mean_score namespace
no_success not_reported null_means param_sets pass_at_k pass_hat_k prompt_tokens properties property
question required resumable schedule settings severity stop_reason succeeded success_rate successes
task_queue temporal thinking transcript vs_baseline warnings wilson_high wilson_low workflow worktree
worktrees completed interrupted redacted output_tokens reasoning_content tool_calls
agents_dir on_failure on_fail continue max_turns max_visits max_retries parallel isolation isolate
workdir required_by timeout_s api_key
cancelled cheapest condition conflict duplicate-id duplicate-key duration fail_fast flow-model flow-pin
frontmatter project_agents provider reserved-id reviewer run.start schedule-input sweep.json template
terminal timezone too-many unavailable unconverged unknown-key visit.end visit.replayed visit.start
progress shutdown flow.command flow.facts flow.run flow.turn converged iteration iterations file_bytes
examples approved questions overspend limit_tokens limit_cost infra_in_tree
isolated protocol response max_steps
set_aside set_aside_by forked_from forks
reserved`) {
		flowWords[w] = true
	}
}

// FlowWord reports whether w is a word flow itself writes (flowWords),
// compared without regard to case.
func FlowWord(w string) bool { return flowWords[strings.ToLower(w)] }

// Unsafe says why value cannot be redacted safely — it is shorter than
// MinLen bytes, or it is a word flow itself writes — or returns "" for a
// value that can. Redacting an unsafe value would redact ordinary text and
// flow's own keys, so a Redactor ignores it; the caller that knows the
// variable's name warns (naming the variable, never the value).
func Unsafe(value string) string {
	switch {
	case len(value) < MinLen:
		return "shorter than " + strconv.Itoa(MinLen) + " bytes"
	case FlowWord(value):
		return "a word flow itself writes"
	}
	return ""
}

// encodings returns s and every way flow knows a secret can be spelt in
// what it writes, each at least MinLen bytes long:
//   - JSON-escaped, with and without HTML escaping (a key holding `"`,
//     `\` or `<`), and escaped twice (a JSON error message quoted inside
//     another JSON string);
//   - HTML-escaped, as html and html/template write it (a page);
//   - percent-encoded, as a query and as a path, with upper- and
//     lower-case hex (a key in base_url's query);
//   - base64, standard and URL alphabets, at each of the three alignments
//     it can have inside a longer encoded text, without the characters
//     that depend on the bytes around it.
func encodings(s string) []string {
	forms := []string{s}
	add := func(f string) {
		if len(f) >= MinLen && !slices.Contains(forms, f) {
			forms = append(forms, f)
		}
	}
	for _, once := range jsonForms(s) {
		add(once)
		for _, twice := range jsonForms(once) {
			add(twice)
		}
	}
	for _, once := range []string{html.EscapeString(s), template.HTMLEscapeString(s)} {
		add(once)
		for _, j := range jsonForms(once) {
			add(j)
		}
	}
	for _, p := range []string{url.QueryEscape(s), url.PathEscape(s)} {
		add(p)
		add(lowerHex().ReplaceAllStringFunc(p, strings.ToLower))
	}
	for _, enc := range []*base64.Encoding{base64.RawStdEncoding, base64.RawURLEncoding} {
		for shift := range 3 {
			b := enc.EncodeToString(append(make([]byte, shift), s...))
			// Character i holds input bits [6i, 6i+6): keep those that
			// hold bits of s only.
			from, to := (8*shift+5)/6, 8*(shift+len(s))/6
			if from < to {
				add(b[from:to])
			}
		}
	}
	return forms
}

var lowerHex = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`%[0-9A-F]{2}`) })

// jsonForms returns s and the ways JSON encoders write it inside a string,
// with and without HTML escaping.
func jsonForms(s string) []string {
	forms := []string{s}
	for _, html := range []bool{true, false} {
		var b bytes.Buffer
		enc := json.NewEncoder(&b)
		enc.SetEscapeHTML(html)
		if enc.Encode(s) == nil {
			f := strings.TrimSuffix(b.String(), "\n")
			f = f[1 : len(f)-1]
			if !slices.Contains(forms, f) {
				forms = append(forms, f)
			}
		}
	}
	return forms
}
