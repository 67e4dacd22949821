package engine_test

import (
	"context"
	"testing"
	"time"

	. "github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/engine/enginetest"
	"github.com/flowrun/flow/engine/record"
)

// TestWaitMeanings: a wait for a time ends the run waiting until its time,
// kept across attempts from when it was first reached; an event's wait
// takes its data, its default once the timeout passed, and an event that
// came after the timeout is too late.
func TestWaitMeanings(t *testing.T) {
	p := load(t, "w", `name: w
nodes:
  - {id: pause, wait: {for: 1h}}
  - {id: ev, wait: {event: go, timeout: 2h, default: {ok: false}}, output: {ok: boolean}}
`)
	h := enginetest.New()
	res, err := Walk(context.Background(), p, Options{RunID: "r1"}, h, nil)
	if err != nil || res.Status() != record.StatusWaiting {
		t.Fatalf("first attempt: %v %v", res.Status(), err)
	}
	h.Advance(59 * time.Minute)
	if res, _ = Walk(context.Background(), p, Options{RunID: "r1"}, h, h.Facts()); res.Status() != record.StatusWaiting {
		t.Fatalf("before the hour: %v", res.Status())
	}
	h.Advance(2 * time.Minute) // past the hour counted from the first attempt
	if res, _ = Walk(context.Background(), p, Options{RunID: "r1"}, h, h.Facts()); res.Status() != record.StatusWaiting || res.Failure.Root().Visit != "ev" {
		t.Fatalf("after the hour, the event's wait: %v %+v", res.Status(), res.Failure)
	}
	h.Advance(3 * time.Hour)
	h.Deliver("go", []byte(`{"ok": true}`), "late") // after ev's timeout: too late
	res, _ = Walk(context.Background(), p, Options{RunID: "r1"}, h, h.Facts())
	if !res.OK || res.Output.(map[string]any)["ok"] != false {
		t.Fatalf("a late event must lose to the timeout's default: %+v", res)
	}

	h2 := enginetest.New()
	h2.Deliver("go", []byte(`{"ok": true}`), "ci")
	h2.Advance(time.Hour)
	res, _ = Walk(context.Background(), p, Options{RunID: "r2"}, h2, nil)
	if res.Status() != record.StatusWaiting {
		t.Fatalf("a fresh run waits its hour: %v", res.Status())
	}
	h2.Advance(time.Hour)
	res, _ = Walk(context.Background(), p, Options{RunID: "r2"}, h2, h2.Facts())
	if !res.OK || res.Output.(map[string]any)["ok"] != true {
		t.Fatalf("an event delivered before its wait is taken when it is reached: %+v", res)
	}
}
