package serve

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

//go:embed pages/*.tmpl
var pageFiles embed.FS

// pages is parsed on first use, not when the package loads: every flow
// command, flow validate included, links serve, and only flow serve renders
// a page (docs/performance.md, start-up).
var pages = sync.OnceValue(func() *template.Template {
	return template.Must(template.New("pages").Funcs(template.FuncMap{
		"clock": stamp,
		"since": func(t time.Time) string { return span(time.Since(t)) },
		"ms": func(ms int64) string {
			return (time.Duration(ms) * time.Millisecond).Round(10 * time.Millisecond).String()
		},
		"tokens":     rundir.TokensText,
		"cost":       rundir.CostText,
		"pathEscape": url.PathEscape,
		"short":      short,
		// zoned is a time in a zone, named: the schedule's zone on a run's page.
		"zoned": func(t time.Time, loc *time.Location) string {
			if t.IsZero() {
				return ""
			}
			return t.In(loc).Format("2006-01-02 15:04:05 MST")
		},
		"add": func(a, b int) int { return a + b },
		// zone is a schedule's zone by name; the server's if it will not load.
		"zone": func(name string) *time.Location {
			if loc, err := time.LoadLocation(name); err == nil && name != "" {
				return loc
			}
			return time.Local
		},
		"markdown": markdown,
		"lines": func(s string) string {
			if n := strings.Count(strings.TrimRight(s, "\n"), "\n") + 1; n != 1 {
				return fmt.Sprintf("%d lines", n)
			}
			return "1 line"
		},
		"left": func(t time.Time) string { return span(time.Until(t)) },
	}).ParseFS(pageFiles, "pages/*.tmpl"))
})

// short renders a visit's output in at most 160 characters.
func short(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		s = x
	default:
		b, _ := json.Marshal(x)
		s = string(b)
	}
	if utf8.RuneCountInString(s) > 160 {
		r := []rune(s)
		s = string(r[:160]) + "…"
	}
	return s
}

// render writes a page, whole or not at all.
func (s *Server) render(w http.ResponseWriter, name string, data any) {
	var buf bytes.Buffer
	if err := pages().ExecuteTemplate(&buf, name, data); err != nil {
		s.log.Error("rendering a page", "page", name, "err", err)
		http.Error(w, "the page could not be rendered", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes())
}

func (s *Server) pageIndex(w http.ResponseWriter, r *http.Request) {
	all, err := s.listRuns()
	if err != nil {
		http.Error(w, fmt.Sprintf("listing runs: %v", err), http.StatusInternalServerError)
		return
	}
	var running, queue, recent []*RunView
	for _, v := range all {
		switch v.Status {
		case statusQueued:
			queue = append(queue, v)
		case string(record.StatusRunning):
			running = append(running, v)
		}
		if len(recent) < 30 && v.Status != statusQueued {
			recent = append(recent, v)
		}
	}
	fires := s.sched.recentFires("")
	if len(fires) > 20 {
		fires = fires[:20]
	}
	s.mu.Lock()
	problems := append([]string(nil), s.problems...)
	s.mu.Unlock()
	s.render(w, "index", map[string]any{"Title": s.cfg.Dir, "Flows": s.flowViews(all), "Asks": s.asks.list(""),
		"Running": running, "Queue": queue, "Recent": recent, "Fires": fires, "Problems": problems})
}

func (s *Server) pageRun(w http.ResponseWriter, r *http.Request) {
	id, dir, ok := s.runDir(w, r)
	if !ok {
		return
	}
	v, err := s.run(id, dir)
	if err != nil {
		http.Error(w, fmt.Sprintf("reading run %s: %v", id, err), http.StatusInternalServerError)
		return
	}
	v.Forks = s.forksOf(id)
	data := map[string]any{"Title": "run " + id, "Run": v, "Self": []*RunView{v}, "Zone": time.Local}
	if e := s.catalog.get(v.Flow); e != nil && e.Plan != nil {
		data["Graph"] = flowGraph(e.Plan.Root, v.Visits, v.Status != string(record.StatusRunning) && v.Status != statusQueued)
		if sc := e.Plan.Root.Schedule; sc != nil {
			data["Zone"] = sc.Location
		}
	}
	end := v.Ended
	if end.IsZero() {
		end = time.Now()
	}
	data["Timeline"] = runTimeline(v.Visits, v.Started, end)
	if dir != "" {
		if _, err := os.Stat(filepath.Join(dir, "report.html")); err == nil {
			data["Report"] = "/runs/" + id + "/report.html"
		}
	}
	s.render(w, "run", data)
}

// pageReport serves a run's report.html, the page its directory keeps,
// sandboxed: no script of it runs (serveRunFile).
func (s *Server) pageReport(w http.ResponseWriter, r *http.Request) {
	_, dir, ok := s.runDir(w, r)
	if !ok {
		return
	}
	if dir == "" {
		http.Error(w, "the run has no directory yet", http.StatusNotFound)
		return
	}
	s.serveRunFile(w, r, dir, "report.html")
}

// Handler is the server's HTTP interface: the pages, the API, the event
// streams and /metrics, behind the token check and, for every POST, a
// same-origin check (Sec-Fetch-Site / Origin), so that another site's page
// cannot make a browser start, stop or answer anything.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", s.pageIndex)
	mux.HandleFunc("GET /runs/{id}", s.pageRun)
	mux.HandleFunc("GET /runs/{id}/report.html", s.pageReport)
	mux.HandleFunc("GET /events", s.pageEvents)
	mux.HandleFunc("GET /login", s.login)
	mux.HandleFunc("POST /login", s.login)
	mux.HandleFunc("GET /api/flows", s.apiFlows)
	mux.HandleFunc("GET /api/runs", s.apiRuns)
	mux.HandleFunc("GET /api/runs/{id}", s.apiRun)
	mux.HandleFunc("GET /api/runs/{id}/events", s.apiEvents)
	mux.HandleFunc("POST /api/flows/{name}/runs", s.apiStart)
	mux.HandleFunc("POST /api/runs/{id}/stop", s.apiStop)
	mux.HandleFunc("POST /api/runs/{id}/resume", s.apiResume)
	mux.HandleFunc("GET /api/asks", s.apiAsks)
	mux.HandleFunc("POST /api/runs/{id}/asks/{visit...}", s.apiAnswer)
	mux.HandleFunc("POST /api/runs/{id}/events/{name}", s.apiEvent)
	mux.HandleFunc("POST /hooks/runs/{id}/events/{name}/{token}", s.hookEvent)
	// The page's forms post to page routes; the same handlers read a form
	// there and JSON under /api/.
	mux.HandleFunc("POST /flows/{name}/runs", s.apiStart)
	mux.HandleFunc("POST /runs/{id}/stop", s.apiStop)
	mux.HandleFunc("POST /runs/{id}/resume", s.apiResume)
	mux.HandleFunc("POST /runs/{id}/asks/{visit...}", s.apiAnswer)
	mux.HandleFunc("/api/", func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusNotFound, "", "no API endpoint %s %s (docs/serve.md lists them)", r.Method, r.URL.Path)
	})
	mux.Handle("GET /metrics", s.metrics.handler())
	cop := http.NewCrossOriginProtection()
	cop.SetDenyHandler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fail(w, http.StatusForbidden, "Origin", "a request from another site: POSTs are taken from this server's own pages and from clients that send no Origin")
	}))
	return s.recover(secureHeaders(s.allowHost(cop.Handler(s.authenticate(mux)))))
}

// recover turns a handler's panic into a 500 with a JSON error and a
// logged stack, never a dead server.
func (s *Server) recover(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				s.log.Error("a handler panicked", "path", r.URL.Path, "panic", v, "stack", string(debug.Stack()))
				fail(w, http.StatusInternalServerError, "", "internal error")
			}
		}()
		next.ServeHTTP(w, r)
	})
}

// forksOf are the runs forked from run id (flow fork), for its page.
func (s *Server) forksOf(id string) []string {
	runs, err := rundir.List(s.cfg.RunsDir)
	if err != nil {
		return nil
	}
	var out []string
	for _, r := range runs {
		if r.ForkedFrom != nil && r.ForkedFrom.Run == id {
			out = append(out, r.ID)
		}
	}
	return out
}
