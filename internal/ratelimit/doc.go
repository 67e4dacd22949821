// Package ratelimit paces the requests that go to one provider key, so that
// a sweep at provider scale rides out the provider's rate limits instead of
// counting them against the model (docs/sweeps.md, docs/drivers.md).
//
// # Keys and the registry
//
// A Key is what a provider limits by: the driver, the base URL, a
// fingerprint of the API key (never the key) and the model. Every turn to
// one Key shares one Limiter, taken from a Registry. Default is the
// process-wide registry that the drivers use, so that all the cells of a
// sweep that run in one process, and all the runs of `flow serve`, share
// one limiter per key; runs in other processes (a Temporal worker
// elsewhere) pace themselves.
//
// # What a Limiter does
//
//   - It admits at most its window of requests at once. The window adapts
//     (AIMD): it grows by 1/window with every answer, so by about one per
//     window's worth of answers, and halves on a refusal — once per
//     congestion event: only requests sent after the last halving can halve
//     it again.
//   - It honours the waits the provider asks for: Retry-After (seconds or an
//     HTTP date), retry-after-ms, and the rate-limit headers OpenAI
//     (x-ratelimit-remaining-requests/-tokens, x-ratelimit-reset-requests/
//     -tokens) and Anthropic (anthropic-ratelimit-requests-remaining/-reset,
//     …-tokens-…) send: when none remain, nothing is sent until the reset.
//     What remains is the least any answer since the last reset says, less
//     every request still unanswered (a provider counts in the order
//     requests reach it, so any of them may be counted yet); a wait on it
//     ends at the next answer. Once a reset with none left has passed, one
//     request goes first to find out what it renewed.
//     A Ticket's Heard hands the limiter an answer's header as it comes.
//   - Headers are hostile input: every wait read from one is capped at
//     MaxWait (the configuration key ratelimit.max_wait) where it is read,
//     so nothing overflows; a wait longer than the caller's context has
//     left is a WaitError at once, naming the header; a waiting request
//     tells onWait at most once a second.
//   - Without such a hint it backs off with full jitter: a wait drawn
//     uniformly from [0, min(Cap, Base·2^(n-1))) after the n-th refusal in
//     a row.
//   - A wait that many requests share ends for each at its own moment, up
//     to Spread apart, so they do not come back as a herd.
//   - A quota that will not come back within the run ends every later
//     request at once (a QuotaError), with the provider's message. A quota
//     is the provider's own quota error, or a 429 or 403 that says quota
//     (Classify, Scan); never a word of free text.
//
// The caps of the run and of the sweep (their concurrency) hold above a
// Limiter: a turn takes its run's slot first, then the limiter's.
//
// # Sharing
//
// A Registry and its Limiters are safe for concurrent use. Time comes from
// the time package, so tests run them under testing/synctest.
package ratelimit
