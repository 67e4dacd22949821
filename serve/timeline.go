package serve

import (
	"time"
)

// Timeline is a run's leaf visits (agent turns, commands, questions) as
// bars over the run's time, for its page.
type Timeline struct {
	W, H   int
	Label  int // the width of the visit names' column
	Rows   []TimeRow
	Ticks  []TimeTick
	Hidden int // visits left out: the page draws at most timelineRows
}

// TimeRow is one visit's bar.
type TimeRow struct {
	Y, X, W int
	Visit   string
	State   string
	Wall    string
}

// TimeTick is a mark on the time axis.
type TimeTick struct {
	X    int
	Text string
}

const (
	timelineRows  = 60
	timelineLabel = 240
	timelineBars  = 660
	timelineRow   = 18
)

// runTimeline draws the leaf visits from start until end (now while the
// run goes on); nil without any.
func runTimeline(visits []VisitView, start, end time.Time) *Timeline {
	var leaves []VisitView
	for _, v := range visits {
		if v.Kind == "agent" || v.Kind == "run" || v.Kind == "ask" {
			leaves = append(leaves, v)
		}
	}
	if len(leaves) == 0 {
		return nil
	}
	if start.IsZero() || leaves[0].Started.Before(start) {
		start = leaves[0].Started
	}
	stop := func(v VisitView) time.Time {
		if v.Status == "running" {
			return end
		}
		return v.Started.Add(time.Duration(v.WallMS) * time.Millisecond)
	}
	for _, v := range leaves {
		if t := stop(v); t.After(end) {
			end = t
		}
	}
	span := max(end.Sub(start), time.Second)
	tl := &Timeline{Label: timelineLabel, W: timelineLabel + timelineBars + 20}
	if len(leaves) > timelineRows {
		tl.Hidden = len(leaves) - timelineRows
		leaves = leaves[:timelineRows]
	}
	x := func(t time.Time) int {
		return timelineLabel + int(float64(timelineBars)*float64(t.Sub(start))/float64(span))
	}
	for i, v := range leaves {
		x1, x2 := x(v.Started), x(stop(v))
		tl.Rows = append(tl.Rows, TimeRow{Y: 22 + i*timelineRow, X: x1, W: max(x2-x1, 2), Visit: v.Visit, State: v.Status,
			Wall: (time.Duration(v.WallMS) * time.Millisecond).Round(10 * time.Millisecond).String()})
	}
	tl.H = 22 + len(tl.Rows)*timelineRow + 6
	step := tickStep(span)
	for t := time.Duration(0); t <= span; t += step {
		tl.Ticks = append(tl.Ticks, TimeTick{X: timelineLabel + int(float64(timelineBars)*float64(t)/float64(span)), Text: t.String()})
	}
	return tl
}

// tickStep is a round step giving about six ticks over span.
func tickStep(span time.Duration) time.Duration {
	for _, s := range []time.Duration{time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 30 * time.Minute, time.Hour, 2 * time.Hour, 6 * time.Hour} {
		if span/s <= 6 {
			return s
		}
	}
	return 24 * time.Hour
}
