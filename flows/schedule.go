package flows

import (
	"errors"
	"fmt"
	"strings"
	"time"

	cron "github.com/netresearch/go-cron"

	"github.com/flowrun/flow/schema"
)

// Schedule is a flow's checked schedule (docs/serve.md): when `flow serve` fires
// it, with which input, and what a fire does while an earlier run goes on.
// It is immutable and safe to share.
type Schedule struct {
	Cron     string         // as written
	Location *time.Location // the zone the cron fields are read in
	Input    any            // the input of scheduled runs, defaults filled in
	Overlap  string         // skip | queue | allow
	Catchup  string         // none | once
	spec     cron.Schedule
}

// Overlap and catchup words (docs/serve.md).
const (
	OverlapSkip  = "skip"
	OverlapQueue = "queue"
	OverlapAllow = "allow"
	CatchupNone  = "none"
	CatchupOnce  = "once"
)

// neverFiresFrom is the instant a cron spec is tried from to tell one that
// never fires (30 February): any fixed instant answers as the clock would.
var neverFiresFrom = time.Date(2000, time.January, 1, 0, 0, 0, 0, time.UTC)

// Next returns the first fire strictly after t, or the zero time if the
// schedule never fires again.
func (s *Schedule) Next(t time.Time) time.Time {
	next := s.spec.Next(t.In(s.Location))
	if next.IsZero() {
		return next
	}
	return next.In(t.Location())
}

// schedule checks a flow's schedule: the expression, the zone and the
// input against the flow's declared input. It returns nil when there is
// none or when it has an error (reported in diags).
func (l *loader) schedule(f *Flow, d *schema.Schedule) *Schedule {
	if d == nil || !d.Cron.Set() {
		return nil
	}
	s := &Schedule{Cron: d.Cron.Value, Location: time.Local, Overlap: d.Overlap.Value, Catchup: d.Catchup.Value}
	if s.Overlap == "" {
		s.Overlap = OverlapSkip
	}
	if s.Catchup == "" {
		s.Catchup = CatchupNone
	}
	ok := true
	if d.TZ.Set() {
		loc, err := time.LoadLocation(d.TZ.Value)
		if err != nil || d.TZ.Value == "Local" {
			hint := "use an IANA zone name such as UTC, Europe/Paris or America/New_York"
			l.diags.Add(d.TZ.Pos, schema.CodeTimezone, hint, "schedule.tz %q is not a time zone this machine knows", d.TZ.Value)
			ok = false
		} else {
			s.Location = loc
		}
	}
	if spec, err := parseCron(d.Cron.Value); err != nil {
		l.diags.Add(d.Cron.Pos, schema.CodeCron, cronHint, "schedule.cron %q: %v", d.Cron.Value, err)
		ok = false
	} else {
		s.spec = spec
		// From a fixed instant, not the clock: a spec fires within any
		// five years or never, and a load (a Temporal workflow's replay
		// too) must give the same answer whenever it runs.
		if s.Next(neverFiresFrom).IsZero() {
			l.diags.Add(d.Cron.Pos, schema.CodeCron, "check the day of the month against the month", "schedule.cron %q never fires", d.Cron.Value)
			ok = false
		}
	}
	var in any
	if d.HasInput {
		in = d.Input
	}
	v, err := f.CheckInput(in)
	if err != nil {
		at, hint := d.Pos, "give the schedule an input: that fits the flow's declared input"
		if d.HasInput {
			at = d.InputPos
		}
		if f.Input != nil && f.Input.Kind != schema.TString {
			hint += ", " + f.Input.String()
			err = f.Input.Check(f.Input.WithDefaults(in))
		}
		l.diags.Add(at, schema.CodeScheduleInput, hint, "the schedule's input does not fit: %v", err)
		ok = false
	}
	s.Input = v
	if !ok {
		return nil
	}
	return s
}

const cronHint = `write five fields (minute hour day-of-month month day-of-week, e.g. "0 3 * * *"), a descriptor (@hourly, @daily, @weekly, @monthly, @yearly) or @every <duration> (@every 10m)`

// parseCron reads a cron expression in the standard language (the one
// robfig/cron's ParseStandard read, see standardFields): five fields, the
// descriptors (@hourly, @daily, …) and @every <duration>. A zone goes in tz:, not in the
// expression, and @every takes a duration of at least a second.
func parseCron(expr string) (cron.Schedule, error) {
	if strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "CRON_TZ=") {
		return nil, errors.New("give the time zone as schedule.tz, not in the expression")
	}
	if rest, ok := strings.CutPrefix(expr, "@every "); ok {
		d, err := time.ParseDuration(strings.TrimSpace(rest))
		if err != nil {
			return nil, fmt.Errorf("%q is not a duration", rest)
		}
		if d < time.Second {
			return nil, fmt.Errorf("@every takes at least 1s, not %s", rest)
		}
	}
	std, err := standardFields(expr)
	if err != nil {
		return nil, err
	}
	s, err := cronParser.Parse(std)
	if err != nil {
		return nil, errors.New(strings.TrimPrefix(err.Error(), "failed to parse "))
	}
	return s, nil
}

// CheckInput fills in the declared defaults of in and checks the result
// against the flow's declared input: the one check of `--input`, of the
// API's body and of a schedule's input. A string input given nothing is the
// empty string. The error is a *schema.ValueError naming the field.
func (f *Flow) CheckInput(in any) (any, error) {
	if f.Input == nil || f.Input.Kind == schema.TString {
		switch v := in.(type) {
		case nil:
			return "", nil
		case string:
			return v, nil
		}
		return nil, &schema.ValueError{Msg: fmt.Sprintf("flow %s takes a string input: %v", f.Name, schema.StringType.Check(in))}
	}
	v := f.Input.WithDefaults(in)
	if err := f.Input.Check(v); err != nil {
		var ve *schema.ValueError
		if errors.As(err, &ve) {
			return nil, &schema.ValueError{At: ve.At, Msg: fmt.Sprintf("input of flow %s: %v (declared %s)", f.Name, err, f.Input)}
		}
		return nil, err
	}
	return v, nil
}
