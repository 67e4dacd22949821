package serve

import (
	"regexp"
	"strings"
	"testing"
	"time"
)

// TestSpan: durations as people read them; a countdown of four hours is
// hours and minutes, not 238m59s.
func TestSpan(t *testing.T) {
	for d, want := range map[time.Duration]string{
		0: "0s", 42 * time.Second: "42s", 4*time.Minute + 5*time.Second: "4m05s",
		238*time.Minute + 59*time.Second: "3h58m", 239*time.Minute + 59*time.Second: "3h59m",
		47 * time.Hour: "47h00m", 51 * time.Hour: "2d3h", -time.Second: "0s",
	} {
		if got := span(d); got != want {
			t.Errorf("span(%s) = %q, want %q", d, got, want)
		}
	}
}

var stampRE = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d [A-Za-z0-9+-]+`)

// TestPagesDateAndZoneEveryTime: the ask card and the index's runs give
// every time with its date and zone, and the countdown in hours and
// minutes; a field with a default is not shown as required.
func TestPagesDateAndZoneEveryTime(t *testing.T) {
	flow := strings.Replace(askFlow, "default: hold}", "default: hold, timeout: 4h}", 1)
	flow = strings.Replace(flow, "nodes:", "input: {goal: {type: string, default: ship the notes}, n: integer, tag?: string}\nnodes:", 1)
	_, c := serveHTTP(t, map[string]string{"gate.yaml": flow}, nil)
	_, m, _ := c.do("POST", "/api/flows/gate/runs", `{"n": 1}`)
	id, _ := m["id"].(string)
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		_, m, _ = c.do("GET", "/api/asks", "")
		if asks, _ := m["asks"].([]any); len(asks) == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no ask: %v", m)
		}
	}
	_, page, _ := c.do("GET", "/", "")
	body := page["_body"].(string)
	card := body[strings.Index(body, `class="ask"`):]
	card = card[:strings.Index(card, "</form>")]
	if n := len(stampRE.FindAllString(card, -1)); n != 2 {
		t.Errorf("the ask card should date and zone both its times (since, deadline), has %d:\n%s", n, card)
	}
	if !regexp.MustCompile(`data-until="\d+">(3h59m|4h00m)<`).MatchString(card) {
		t.Errorf("the countdown should read hours and minutes:\n%s", card)
	}
	recent := body[strings.Index(body, `data-run="`+id+`"`):]
	recent = recent[:strings.Index(recent, "</tr>")]
	if !stampRE.MatchString(recent) {
		t.Errorf("the recent run's start has no date and zone: %s", recent)
	}
	_, m, _ = c.do("GET", "/api/flows", "")
	input := m["flows"].([]any)[0].(map[string]any)["input"]
	if input != `{goal?: string (default "ship the notes"), n: integer, tag?: string}` {
		t.Errorf("the input is shown as %q: goal has a default, so it is not required", input)
	}
	if !strings.Contains(body, `goal?: string (default &#34;ship the notes&#34;)`) {
		t.Errorf("the page does not show goal as optional:\n%s", body)
	}
}
