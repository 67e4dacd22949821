package serve

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
	"github.com/flowrun/flow/runner"
	"github.com/flowrun/flow/schema"
)

// apiError is the body of every API error: what is wrong, and which field
// of the request (a path value, a query parameter, a field of the body).
type apiError struct {
	Error string `json:"error"`
	Field string `json:"field,omitempty"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	_ = enc.Encode(v)
}

func fail(w http.ResponseWriter, status int, field, format string, args ...any) {
	writeJSON(w, status, apiError{Error: fmt.Sprintf(format, args...), Field: field})
}

// refused answers a run the server did not take: 429 with Retry-After
// when the queue is full, 503 when the server shuts down.
func refused(w http.ResponseWriter, err error) {
	if errors.Is(err, ErrQueueFull) {
		w.Header().Set("Retry-After", "10")
		fail(w, http.StatusTooManyRequests, "", "%v", err)
		return
	}
	fail(w, http.StatusServiceUnavailable, "", "%v", err)
}

// maxBody bounds a request body: an input, an answer.
const maxBody = 1 << 20

// runIDRE matches run ids: flow's own, and those Temporal gives the runs
// its Schedules start (the action's id and the fire's time,
// flow-<dir>-<flow>-2026-12-02T01:05:27Z).
var runIDRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]*$`) })

// runDir resolves the {id} of a request to a run: its directory, or a
// run this server runs or queues. It writes the error itself.
func (s *Server) runDir(w http.ResponseWriter, r *http.Request) (id, dir string, ok bool) {
	id = r.PathValue("id")
	if !runIDRE().MatchString(id) || len(id) > 200 {
		fail(w, http.StatusBadRequest, "id", "%q is not a run id", id)
		return "", "", false
	}
	dir, found := rundir.Find(s.cfg.RunsDir, id)
	if !found {
		if a, j := s.runs.get(id); a == nil && j == nil {
			fail(w, http.StatusNotFound, "id", "no run %q in %s", id, s.cfg.RunsDir)
			return "", "", false
		}
	}
	return id, dir, true
}

func (s *Server) apiFlows(w http.ResponseWriter, r *http.Request) {
	recent, err := s.listRuns()
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "listing runs: %v", err)
		return
	}
	writeJSON(w, http.StatusOK, map[string]any{"flows": s.flowViews(recent)})
}

// statuses are the words GET /api/runs?status= takes.
var statuses = []string{statusQueued, string(record.StatusRunning), string(record.StatusSucceeded), string(record.StatusFailed),
	string(record.StatusStopped), string(record.StatusInterrupted), string(rundir.StatusWaiting)}

func (s *Server) apiRuns(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	flow, status := q.Get("flow"), q.Get("status")
	if status != "" && !slices.Contains(statuses, status) {
		fail(w, http.StatusBadRequest, "status", "status %q is not one of %s", status, strings.Join(statuses, ", "))
		return
	}
	limit, ok := intParam(w, q.Get("limit"), "limit", 50, 1, 500)
	if !ok {
		return
	}
	offset, ok := intParam(w, q.Get("offset"), "offset", 0, 0, 1<<31)
	if !ok {
		return
	}
	all, err := s.listRuns()
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "listing runs: %v", err)
		return
	}
	var match []*RunView
	for _, v := range all {
		if (flow == "" || v.Flow == flow) && (status == "" || v.Status == status) {
			match = append(match, v)
		}
	}
	page := match[min(offset, len(match)):min(offset+limit, len(match))]
	if page == nil {
		page = []*RunView{}
	}
	body := map[string]any{"runs": page, "total": len(match), "offset": offset, "limit": limit}
	if offset+limit < len(match) {
		body["next"] = fmt.Sprintf("/api/runs?flow=%s&status=%s&limit=%d&offset=%d", flow, status, limit, offset+limit)
	}
	writeJSON(w, http.StatusOK, body)
}

func intParam(w http.ResponseWriter, raw, field string, def, lo, hi int) (int, bool) {
	if raw == "" {
		return def, true
	}
	n, err := strconv.Atoi(raw)
	if err != nil || n < lo || n > hi {
		fail(w, http.StatusBadRequest, field, "%s must be a whole number from %d to %d, not %q", field, lo, hi, raw)
		return 0, false
	}
	return n, true
}

// run returns the full view of a run: its summary and its visits.
func (s *Server) run(id, dir string) (*RunView, error) {
	a, j := s.runs.get(id)
	switch {
	case j != nil:
		return s.queuedView(j), nil
	case dir == "" && a != nil: // started, its directory not made yet
		return &RunView{ID: id, Flow: a.flow, Status: string(record.StatusRunning), Trigger: a.trigger, Started: a.started}, nil
	}
	info, err := rundir.Inspect(dir)
	if err != nil && a != nil {
		// Started, its journal not written yet (a run on Temporal is
		// mirrored once its workflow started).
		return &RunView{ID: id, Flow: a.flow, Status: string(record.StatusRunning), Trigger: a.trigger, Started: a.started}, nil
	}
	if err != nil {
		return nil, err
	}
	v := s.runView(info)
	v.Visits = visitViews(info.Facts, v.Status == string(record.StatusRunning))
	return v, nil
}

func (s *Server) apiRun(w http.ResponseWriter, r *http.Request) {
	id, dir, ok := s.runDir(w, r)
	if !ok {
		return
	}
	v, err := s.run(id, dir)
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "reading run %s: %v", id, err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// apiStart starts a run of a flow: the body is its input, JSON (or plain
// text for a string input), checked as --input is.
func (s *Server) apiStart(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	e := s.catalog.get(name)
	switch {
	case e == nil:
		fail(w, http.StatusNotFound, "name", "no flow %q in %s", name, s.cfg.Dir)
		return
	case e.Broken():
		fail(w, http.StatusConflict, "name", "flow %s does not load: %s", name, e.Diags.Error())
		return
	}
	raw, ok := readBody(w, r, "input")
	if !ok {
		return
	}
	root := e.Plan.Root
	in, err := parseInput(raw, root.Input == nil || root.Input.Kind == schema.TString)
	if err != nil {
		fail(w, http.StatusBadRequest, "input", "%v", err)
		return
	}
	// runner.CheckInput is the check the run would make (it refuses an
	// unknown key too): made here, a misfit is a 400 and no run exists.
	if _, err := runner.CheckInput(e.Plan, in); err != nil {
		field := "input"
		var ve *schema.ValueError
		if errors.As(err, &ve) && ve.At != "" {
			field += "." + ve.At
		}
		fail(w, http.StatusBadRequest, field, "%v", err)
		return
	}
	// What the backend cannot run (on Temporal: an isolated scope without
	// a remote the workers reach) is refused here too: no run exists.
	opts := s.cfg.Engine
	opts.Input = in
	if err := runner.Check(r.Context(), s.cfg.Backend, e.Plan, s.host(), opts); err != nil {
		fail(w, http.StatusBadRequest, "flow", "%v", err)
		return
	}
	id := rundir.NewRunID(time.Now())
	status, err := s.runs.submit(&job{id: id, flow: name, trigger: TriggerAPI, plan: e.Plan, input: in})
	if err != nil {
		refused(w, err)
		return
	}
	s.done(w, r, http.StatusAccepted, map[string]any{"id": id, "flow": name, "status": status, "url": "/api/runs/" + id}, "/runs/"+id)
}

// parseInput reads a body as --input is read: JSON, or plain text for a
// flow whose input is a string.
func parseInput(raw string, stringInput bool) (any, error) {
	if strings.TrimSpace(raw) == "" {
		return nil, nil
	}
	var in any
	if err := json.Unmarshal([]byte(raw), &in); err != nil {
		if stringInput {
			return raw, nil
		}
		return nil, fmt.Errorf("the input is not JSON: %v", err)
	}
	if _, ok := in.(string); stringInput && !ok {
		return raw, nil
	}
	return in, nil
}

// readBody reads a request's body: under /api/ the raw body whatever its
// content type (curl -d says form-urlencoded and means JSON), on a page
// route the form field named field.
func readBody(w http.ResponseWriter, r *http.Request, field string) (string, bool) {
	r.Body = http.MaxBytesReader(w, r.Body, maxBody)
	if isPage(r) {
		if err := r.ParseForm(); err != nil {
			fail(w, http.StatusBadRequest, field, "reading the form: %v", err)
			return "", false
		}
		return r.PostFormValue(field), true
	}
	b, err := io.ReadAll(r.Body)
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			fail(w, http.StatusRequestEntityTooLarge, field, "the body is over %d bytes", maxBody)
			return "", false
		}
		fail(w, http.StatusBadRequest, field, "reading the body: %v", err)
		return "", false
	}
	return string(b), true
}

// isPage says a POST came to a page route (the page's forms post there),
// not to the API, which speaks JSON to whoever calls it.
func isPage(r *http.Request) bool {
	return !strings.HasPrefix(r.URL.Path, "/api/")
}

// done answers a POST: JSON for the API, back to the page for a form.
func (s *Server) done(w http.ResponseWriter, r *http.Request, status int, body any, page string) {
	if isPage(r) {
		if back := r.PostFormValue("back"); strings.HasPrefix(back, "/") && !strings.HasPrefix(back, "//") && !strings.Contains(back, "\\") {
			page = back
		}
		http.Redirect(w, r, page, http.StatusSeeOther)
		return
	}
	writeJSON(w, status, body)
}

// stopWait is how long POST /api/runs/{id}/stop waits for the run to end
// before it answers.
const stopWait = 10 * time.Second

func (s *Server) apiStop(w http.ResponseWriter, r *http.Request) {
	id, dir, ok := s.runDir(w, r)
	if !ok {
		return
	}
	if a, j := s.runs.get(id); a == nil && j == nil && s.waker.has(id) {
		// A run on Temporal let go while it waits goes on there: it is
		// followed again, and stopped as a running one is.
		if info, err := rundir.Inspect(dir); err == nil && info.Status == record.StatusInterrupted {
			s.waker.forget(id)
			s.runs.adopt(&job{id: id, flow: info.Flow, trigger: TriggerResume, resumeDir: dir})
		}
	}
	if a, j := s.runs.get(id); a == nil && j == nil {
		status := "not running"
		if info, err := rundir.Inspect(dir); err == nil {
			status = string(info.Status)
		}
		fail(w, http.StatusConflict, "id", "run %s is not running under this server (it is %s)", id, status)
		return
	}
	s.runs.stop(r.Context(), id, "api", stopWait)
	s.record(Record{Type: RecordStop, Run: id})
	status := "stopping"
	if dir, ok := rundir.Find(s.cfg.RunsDir, id); ok {
		if info, err := rundir.Inspect(dir); err == nil && info.Status != record.StatusRunning {
			status = string(info.Status)
		}
	} else if a, j := s.runs.get(id); a == nil && j == nil {
		status = "dropped" // it was queued: no run directory was made
	}
	s.done(w, r, http.StatusOK, map[string]any{"id": id, "status": status}, "/runs/"+id)
}

func (s *Server) apiResume(w http.ResponseWriter, r *http.Request) {
	id, dir, ok := s.runDir(w, r)
	if !ok {
		return
	}
	if a, j := s.runs.get(id); a != nil || j != nil {
		fail(w, http.StatusConflict, "id", "run %s is running already", id)
		return
	}
	info, err := rundir.Inspect(dir)
	if err != nil {
		fail(w, http.StatusInternalServerError, "", "reading run %s: %v", id, err)
		return
	}
	if !info.Resumable {
		fail(w, http.StatusConflict, "id", "run %s cannot be resumed: %s", id, info.Why)
		return
	}
	status, err := s.runs.submit(&job{id: id, flow: info.Flow, trigger: TriggerResume, resumeDir: dir})
	if err != nil {
		refused(w, err)
		return
	}
	s.done(w, r, http.StatusAccepted, map[string]any{"id": id, "status": status, "url": "/api/runs/" + id}, "/runs/"+id)
}

func (s *Server) apiAsks(w http.ResponseWriter, r *http.Request) {
	asks := s.asks.list("")
	if asks == nil {
		asks = []*Ask{}
	}
	writeJSON(w, http.StatusOK, map[string]any{"asks": asks})
}

// apiAnswer answers the question a run waits on at {visit}: the body is
// {"answer": "…"}, or the page's form.
func (s *Server) apiAnswer(w http.ResponseWriter, r *http.Request) {
	id, _, ok := s.runDir(w, r)
	if !ok {
		return
	}
	visit := r.PathValue("visit")
	var answer string
	if isPage(r) {
		raw, ok := readBody(w, r, "answer")
		if !ok {
			return
		}
		answer = raw
	} else {
		raw, ok := readBody(w, r, "answer")
		if !ok {
			return
		}
		var body struct {
			Answer *string `json:"answer"`
		}
		dec := json.NewDecoder(strings.NewReader(raw))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&body); err != nil {
			fail(w, http.StatusBadRequest, bodyField(err, "answer"), "the body must be {\"answer\": \"…\"}: %v", err)
			return
		}
		if body.Answer == nil {
			fail(w, http.StatusBadRequest, "answer", "the body has no answer: give {\"answer\": \"…\"}")
			return
		}
		answer = *body.Answer
	}
	by := who(r)
	if err := s.asks.answer(id, visit, answer, by); err != nil {
		var ae *answerError
		if errors.As(err, &ae) {
			fail(w, ae.status, ae.field, "%s", ae.msg)
			return
		}
		fail(w, http.StatusBadRequest, "answer", "%v", err)
		return
	}
	s.log.Info("ask answered", "run", id, "visit", visit, "answer", answer, "by", by)
	s.done(w, r, http.StatusOK, map[string]any{"run": id, "visit": visit, "answer": answer, "by": by}, "/runs/"+id)
}

// bodyField names the field a JSON decoding error is about, or def.
func bodyField(err error, def string) string {
	var te *json.UnmarshalTypeError
	if errors.As(err, &te) && te.Field != "" {
		return te.Field
	}
	if msg := err.Error(); strings.HasPrefix(msg, "json: unknown field ") {
		return strings.Trim(strings.TrimPrefix(msg, "json: unknown field "), `"`)
	}
	return def
}
