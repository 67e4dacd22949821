package ratelimit

import (
	"net/http"
	"regexp"
	"strings"
)

// QuotaError is returned by Acquire once the key's quota is gone: a quota
// does not come back within a run, so nothing more is sent.
type QuotaError struct {
	Message string // the provider's message
}

func (e *QuotaError) Error() string { return e.Message }

// quotaWords are what providers say of a quota that will not come back
// soon: OpenAI's insufficient_quota ("You exceeded your current quota,
// please check your plan and billing details"), Anthropic's "Your credit
// balance is too low", and daily limits.
var quotaWords = regexp.MustCompile(`(?i)insufficient_quota|exceeded your current quota|billing|credit balance|daily limit|per day|requests per day|tokens per day|\bRPD\b|\bTPD\b`)

// limitWords are what a refusal for now looks like in an agent CLI's
// output: the status, the error types of both APIs, or the words.
var limitWords = regexp.MustCompile(`(?i)(status|error|http|code)[^0-9\n]{0,16}\b(429|529)\b|rate_limit_error|rate_limit_exceeded|overloaded_error|too many requests|rate limit|rate-limit|server is overloaded|\boverloaded\b`)

// Classify says how a provider's HTTP answer ended for the limiter: a 429,
// a 529 or a 503 whose body says overloaded is Limited, unless the body
// speaks of a quota (then Quota is its message).
func Classify(status int, body []byte, message string) Answer {
	text := string(body)
	switch {
	case status == http.StatusTooManyRequests, status == 529,
		status == http.StatusServiceUnavailable && strings.Contains(strings.ToLower(text), "overloaded"):
		if quotaWords.MatchString(text) {
			if message == "" {
				message = strings.TrimSpace(text)
			}
			return Answer{Quota: message}
		}
		return Answer{Limited: true}
	}
	return Answer{}
}

// Scan looks for a refusal in what a failed agent CLI's turn said (its
// diagnostics and stderr; never the model's answer). It returns the line
// that says so — empty when none does — and whether that line speaks of a
// quota that is gone rather than a refusal for now.
func Scan(text string) (line string, quota bool) {
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if quotaWords.MatchString(l) {
			return cut(l), true
		}
		if line == "" && limitWords.MatchString(l) {
			line = cut(l)
		}
	}
	return line, false
}

func cut(s string) string {
	const most = 300
	if len(s) > most {
		return strings.ToValidUTF8(s[:most], "") + "…"
	}
	return s
}
