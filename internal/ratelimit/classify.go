package ratelimit

import (
	"net/http"
	"regexp"
	"strings"
	"sync"
)

// QuotaError is returned by Acquire once the key's quota is gone: a quota
// does not come back within a run, so nothing more is sent.
type QuotaError struct {
	Message string // the provider's message
}

func (e *QuotaError) Error() string { return e.Message }

// quotaTypes are the providers' own signs of a quota that will not come
// back soon, whatever the status they come with: OpenAI's error type and
// code insufficient_quota and its message for it ("You exceeded your
// current quota, please check your plan and billing details", which Codex
// shortens to "Quota exceeded. Check your plan and billing details."),
// Anthropic's billing_error type and its "credit balance is too low" (sent
// with a 400). Each is matched as a whole phrase: a word of one ("billing")
// alone is not a quota.
var quotaTypes = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)\binsufficient_quota\b|\bbilling_error\b|credit balance is too low|` +
		`exceeded your current quota, please check your plan and billing details|quota exceeded\. check your plan and billing details`)
})

// quotaWord is a quota spoken of in a refusal's body: it means a quota
// only with a 429 or a 403 (OpenAI's "You exceeded your current quota",
// Google's RESOURCE_EXHAUSTED "Quota exceeded"). Free text ("billing",
// "per day") elsewhere says nothing: a 400 about billing_address.country
// is not a quota.
var quotaWord = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?i)\bquota\b`) })

// refusalStatus is a 429 or a 403 as a CLI's diagnostics write it.
var refusalStatus = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(status|error|http|code)[^0-9\n]{0,16}\b(429|403)\b`)
})

// limitWords are what a refusal for now looks like in an agent CLI's
// output: the status, the error types of both APIs, or the words.
var limitWords = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?i)(status|error|http|code)[^0-9\n]{0,16}\b(429|529)\b|rate_limit_error|rate_limit_exceeded|overloaded_error|too many requests|rate limit|rate-limit|server is overloaded|\boverloaded\b`)
})

// Classify says how a provider's HTTP answer ended for the limiter: a 429,
// a 529 or a 503 whose body says overloaded is Limited; a quota (Quota is
// its message) is the provider's own quota error (insufficient_quota,
// billing_error, a credit balance too low) or a 429 or 403 whose body says
// quota — never other free text.
func Classify(status int, body []byte, message string) Answer {
	text := string(body)
	quota := quotaTypes().MatchString(text) ||
		(status == http.StatusTooManyRequests || status == http.StatusForbidden) && quotaWord().MatchString(text)
	if quota && status >= 400 {
		if message == "" {
			message = strings.TrimSpace(text)
		}
		return Answer{Quota: cut(message)}
	}
	switch {
	case status == http.StatusTooManyRequests, status == 529,
		status == http.StatusServiceUnavailable && strings.Contains(strings.ToLower(text), "overloaded"):
		return Answer{Limited: true}
	}
	return Answer{}
}

// Scan looks for a refusal in what a failed agent CLI's turn said (its
// diagnostics and stderr; never the model's answer). It returns the line
// that says so — empty when none does — and whether that line speaks of a
// quota that is gone rather than a refusal for now: the provider's own
// quota error, or a 429 or 403 that says quota.
func Scan(text string) (line string, quota bool) {
	for l := range strings.Lines(text) {
		l = strings.TrimSpace(l)
		if quotaTypes().MatchString(l) || refusalStatus().MatchString(l) && quotaWord().MatchString(l) {
			return cut(l), true
		}
		if line == "" && limitWords().MatchString(l) {
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
