package ratelimit

import (
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"math"
	"net/url"
	"slices"
	"sync"
	"time"
)

// Key is what a provider limits by. Its fields are plain text, safe to
// show: Key holds a fingerprint of the API key, never the key.
type Key struct {
	Driver  string
	BaseURL string // "" is the driver's default server
	Key     string // Fingerprint of the API key; "" when none is set
	Model   string
}

// Fingerprint names an API key without revealing it: the first 12 hex
// digits of its SHA-256, or "" for no key.
func Fingerprint(secret string) string {
	if secret == "" {
		return ""
	}
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:6])
}

// Provider names the key's provider for people: the base URL's host, or
// the driver's default provider.
func (k Key) Provider() string {
	if k.BaseURL != "" {
		if u, err := url.Parse(k.BaseURL); err == nil && u.Host != "" {
			return u.Host
		}
		return k.BaseURL
	}
	switch k.Driver {
	case "claude":
		return "anthropic"
	case "codex", "openai":
		return "openai"
	}
	return k.Driver
}

// String is the key as reports show it: driver, provider and model.
func (k Key) String() string {
	s := k.Driver + " " + k.Provider()
	if k.Model != "" {
		s += " " + k.Model
	}
	return s
}

// Registry holds one Limiter per Key. The zero value is ready to use with
// default Options; do not copy it once used.
type Registry struct {
	// Options tune the limiters it makes; set it before the first For.
	Options Options

	mu       sync.Mutex
	limiters map[Key]*Limiter
}

// Default is the process-wide registry: every driver paces its requests
// through it, so the cells of a sweep in one process share one limiter
// per key (docs/sweeps.md).
var Default = &Registry{}

// For returns the limiter of k, making it on first use.
func (r *Registry) For(k Key) *Limiter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.limiters == nil {
		r.limiters = map[Key]*Limiter{}
	}
	l := r.limiters[k]
	if l == nil {
		l = newLimiter(k, r.Options)
		r.limiters[k] = l
	}
	return l
}

// SetMaxWait sets the cap of every wait a provider's header asks for
// (Options.MaxWait; the configuration key ratelimit.max_wait), for the
// limiters r made already and those it will make. d <= 0 is the default.
func (r *Registry) SetMaxWait(d time.Duration) {
	if d <= 0 {
		d = DefaultMaxWait
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.Options.MaxWait = d
	for _, l := range r.limiters {
		l.mu.Lock()
		l.opts.MaxWait = d
		l.mu.Unlock()
	}
}

// Reset forgets every limiter and what it learnt: for tests, and for a
// long-lived process whose user has fixed the quota.
func (r *Registry) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.limiters = nil
}

// Stats returns every limiter's stats, ordered by key.
func (r *Registry) Stats() []Stats {
	r.mu.Lock()
	ls := make([]*Limiter, 0, len(r.limiters))
	for _, l := range r.limiters {
		ls = append(ls, l)
	}
	r.mu.Unlock()
	out := make([]Stats, len(ls))
	for i, l := range ls {
		out[i] = l.Stats()
	}
	slices.SortFunc(out, func(a, b Stats) int { return cmp.Compare(a.Key.String()+a.Key.Key, b.Key.String()+b.Key.Key) })
	return out
}

// Waiting is the progress of a turn that the limiter of k holds back for d:
// "waiting 12 s for api.openai.com (rate limit)", so that a live view does
// not look stuck.
func Waiting(d time.Duration, k Key) string {
	return fmt.Sprintf("waiting %d s for %s (rate limit)", int(math.Ceil(d.Seconds())), k.Provider())
}
