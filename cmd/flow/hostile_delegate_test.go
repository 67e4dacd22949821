package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// stealFlow runs two turns at once: the first leaks its delegation token
// (as /proc/PID/environ would to any process of the user) and waits; the
// second calls `flow delegate` with the first's token.
const stealFlow = `name: steal
input:
  items?: {type: [string], default: [a, b]}
agents:
  - name: lead
    description: leaks its token, or steals the other's
    driver: exec
    command:
      - bash
      - -c
      - |
        cat >/dev/null
        if [ "$FLOW_VISIT" = "m[1]/lead" ]; then
          echo "$FLOW_DELEGATE_TOKEN" > tok.tmp && mv tok.tmp tok
          for i in $(seq 200); do [ -e result ] && break; sleep 0.05; done
          echo "leaked"
        else
          for i in $(seq 200); do [ -e tok ] && break; sleep 0.05; done
          if out=$(FLOW_DELEGATE_TOKEN=$(cat tok) flow delegate scout "stolen" 2>&1); then r="STOLEN: $out"; else r="REFUSED: $out"; fi
          echo "$r" > result.tmp && mv result.tmp result
          echo "$r"
        fi
  - name: scout
    description: does what it is told
    driver: exec
    command: [bash, -c, 'echo "scout did: $(head -1)"']
nodes:
  - id: m
    map: input.items
    max: 2
    concurrency: 2
    do:
      - id: lead
        agent: lead
        prompt: Go.
        delegate: {agents: [scout]}
`

// TestHostileDelegateTokenOfASiblingTurn: a turn's token is refused when
// another turn's process makes the call with it: calls are bound to the
// process tree of the turn the token was given to (peer credentials).
func TestHostileDelegateTokenOfASiblingTurn(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "steal.yaml"), []byte(stealFlow), 0o644); err != nil {
		t.Fatal(err)
	}
	bin := flowBinary(t)
	c := exec.Command(bin, "run", "steal.yaml")
	c.Dir = dir
	c.Env = append(os.Environ(), "PATH="+filepath.Dir(bin)+string(os.PathListSeparator)+os.Getenv("PATH"))
	out, err := c.CombinedOutput()
	if err != nil {
		t.Fatalf("flow run: %v\n%s", err, out)
	}
	result, err := os.ReadFile(filepath.Join(dir, "result"))
	if err != nil {
		t.Fatalf("no result: %v\n%s", err, out)
	}
	if !strings.HasPrefix(string(result), "REFUSED") || !strings.Contains(string(result), "turn's process") {
		t.Errorf("a sibling turn's token: %s", result)
	}
}
