package modelserver

import (
	"net/http"
	"time"
)

// SetHeader makes the server add h to the answer of every later generation
// request, refused or not: a test scripts the rate-limit headers a
// provider sends, hostile ones included. nil stops it.
func (s *Server) SetHeader(h http.Header) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.header = h.Clone()
}

// addHeader adds the scripted header to an answer.
func (s *Server) addHeader(w http.ResponseWriter) {
	s.mu.Lock()
	h := s.header
	s.mu.Unlock()
	for k, v := range h {
		w.Header()[k] = append([]string(nil), v...)
	}
}

// admitSliding counts one request against a sliding window: at most
// Requests in any Window. The reset it states is when the oldest request in
// the window leaves it, the moment one more is admitted (or, with
// ResetFull, when the newest leaves it, the window back to its initial
// state); a refused request is told to retry then.
func (l *limiter) admitSliding(now time.Time) refusal {
	kept := l.recent[:0]
	for _, t := range l.recent {
		if now.Sub(t) < l.Window {
			kept = append(kept, t)
		}
	}
	l.recent = kept
	r := refusal{ok: true, limit: l.Requests}
	if len(l.recent) >= l.Requests {
		r.ok = false
		r.retryAfter = l.recent[0].Add(l.Window).Sub(now)
	} else {
		l.recent = append(l.recent, now)
		l.used++
		l.accepted++
	}
	r.remaining = l.Requests - len(l.recent)
	switch {
	case l.ResetFull:
		r.reset = l.recent[len(l.recent)-1].Add(l.Window).Sub(now)
	default:
		r.reset = l.recent[0].Add(l.Window).Sub(now)
	}
	return r
}
