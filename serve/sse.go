package serve

import (
	"encoding/json"
	"fmt"
	"net/http"
	"time"
)

// heartbeat keeps an idle stream open through proxies that close silent
// connections.
const heartbeat = 15 * time.Second

// apiEvents streams a run's events as server-sent events: each message's
// data is one event as events.jsonl has it (its type in "type"), the
// server's own serve.changed included. The stream stays open after the run
// ends (a resume streams on) until the client or the server leaves.
func (s *Server) apiEvents(w http.ResponseWriter, r *http.Request) {
	id, _, ok := s.runDir(w, r)
	if !ok {
		return
	}
	s.stream(w, r, id)
}

// pageEvents streams every run's events, for the status page.
func (s *Server) pageEvents(w http.ResponseWriter, r *http.Request) {
	s.stream(w, r, "")
}

func (s *Server) stream(w http.ResponseWriter, r *http.Request, run string) {
	flusher, ok := w.(http.Flusher)
	if !ok {
		fail(w, http.StatusInternalServerError, "", "this connection cannot stream")
		return
	}
	streaming(w)
	sub, end := s.hub.subscribe(run)
	defer end()
	h := w.Header()
	h.Set("Content-Type", "text/event-stream")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Accel-Buffering", "no") // nginx: do not buffer the stream
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	tick := time.NewTicker(heartbeat)
	defer tick.Stop()
	for {
		select {
		case <-r.Context().Done():
			return
		case <-tick.C:
			fmt.Fprint(w, ": ping\n\n")
		case e := <-sub.ch:
			b, err := json.Marshal(e)
			if err != nil {
				continue
			}
			fmt.Fprintf(w, "data: %s\n\n", b)
		}
		flusher.Flush()
	}
}
