package serve

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"
)

// form is the content type curl -d sends, whatever the body says.
const form = "application/x-www-form-urlencoded"

// TestAPIReadsJSONWhateverTheContentType holds the API to docs/serve.md's
// curl lines: curl -d sends a form content type and a JSON body, and the
// API reads the JSON (the page's forms post to page routes instead).
func TestAPIReadsJSONWhateverTheContentType(t *testing.T) {
	flow := `name: gate
input: {since: {type: string, default: 1 day ago}}
nodes:
  - {id: since, run: [echo, "${{ input.since }}"]}
  - {id: approve, ask: "Publish?", options: [publish, hold]}
`
	b, c := serveHTTP(t, map[string]string{"gate.yaml": flow}, nil)
	code, m, _ := c.do("POST", "/api/flows/gate/runs", `{"since": "2 days ago"}`, "Content-Type", form)
	if code != http.StatusAccepted {
		t.Fatalf("POST /api/flows/gate/runs with a form content type: %d %v", code, m)
	}
	id, _ := m["id"].(string)
	for deadline := time.Now().Add(5 * time.Second); len(b.asks.list(id)) == 0; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the run never asked")
		}
	}
	code, m, _ = c.do("POST", "/api/runs/"+id+"/asks/approve", `{"answer": "publish"}`, "Content-Type", form)
	if code != http.StatusOK || m["answer"] != "publish" {
		t.Fatalf("POST …/asks/approve with a form content type: %d %v", code, m)
	}
	run := c.waitRun(id, "succeeded")
	if raw, _ := json.Marshal(run["visits"]); !strings.Contains(string(raw), "2 days ago") {
		t.Errorf("the run did not take the body's input: %s", raw)
	}
}

// TestAPIBadInputIsRefusedBeforeARunExists: a misspelled field is a 400
// naming it, and no run is made.
func TestAPIBadInputIsRefusedBeforeARunExists(t *testing.T) {
	flow := `name: count
input:
  files?: {type: [string], default: [a]}
nodes:
  - {id: n, run: "true"}
`
	_, c := serveHTTP(t, map[string]string{"count.yaml": flow}, nil)
	code, m, _ := c.do("POST", "/api/flows/count/runs", `{"file": ["x"]}`, "Content-Type", form)
	if code != http.StatusBadRequest || m["field"] != "input.file" {
		t.Fatalf("a misspelled field: %d %v", code, m)
	}
	if _, m, _ := c.do("GET", "/api/runs", ""); m["total"] != 0.0 {
		t.Errorf("a run was made: %v", m)
	}
}
