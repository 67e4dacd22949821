package flows

import (
	"strings"
	"testing"
	"time"
)

// TestCronLanguageIsRobfigs pins the cron language flow has always read
// (robfig/cron v3's ParseStandard, whose answers these are) now that
// another library computes the fires: Sunday is 0 only, ranges never wrap,
// a step past its range means its start, an open step in the day of the
// week stops at Saturday, and a day matches by its day of the month OR its
// day of the week when both are restricted.
func TestCronLanguageIsRobfigs(t *testing.T) {
	from := time.Date(2026, 3, 7, 10, 11, 12, 0, time.UTC) // a Saturday
	for _, c := range []struct{ expr, next, err string }{
		{"0 0 1,15 * 1-5", "2026-03-09T00:00:00Z 2026-03-10T00:00:00Z", ""},
		{"0 9 * * MON/2", "2026-03-09T09:00:00Z 2026-03-11T09:00:00Z", ""},
		{"0 0 * * 1/2", "2026-03-09T00:00:00Z 2026-03-11T00:00:00Z", ""},
		{"0 0 1-31/31 * *", "2026-04-01T00:00:00Z 2026-05-01T00:00:00Z", ""},
		{"*/61 * * * *", "2026-03-07T11:00:00Z 2026-03-07T12:00:00Z", ""},
		{"0 0 * * sun", "2026-03-08T00:00:00Z 2026-03-15T00:00:00Z", ""},
		{"0 0 * * 0-6", "2026-03-08T00:00:00Z 2026-03-09T00:00:00Z", ""},
		{"0 0 13 * 0-6", "2026-03-08T00:00:00Z 2026-03-09T00:00:00Z", ""},
		{"*-5 0 * * *", "2026-03-08T00:00:00Z 2026-03-08T00:01:00Z", ""},
		{"0 0 ? * FRI", "2026-03-13T00:00:00Z 2026-03-20T00:00:00Z", ""},
		{"0 9 * jan,FEB MON-FRI", "2027-01-01T09:00:00Z 2027-01-04T09:00:00Z", ""},
		{"5/20 1 * * *", "2026-03-08T01:05:00Z 2026-03-08T01:25:00Z", ""},
		{"@every 90s", "2026-03-07T10:12:42Z 2026-03-07T10:14:12Z", ""},
		{"@weekly", "2026-03-08T00:00:00Z 2026-03-15T00:00:00Z", ""},
		{"0 0 * * 7", "", "end of range (7) above maximum (6): 7"},
		{"0 0 * * 5-1", "", "beginning of range (5) beyond end of range (1): 5-1"},
		{"0 0 1-2-3 * *", "", "too many hyphens: 1-2-3"},
		{"0 0 1/2/3 * *", "", "too many slashes: 1/2/3"},
		{"0 0 * * -1", "", `failed to parse int from : strconv.Atoi: parsing "": invalid syntax`},
		{"0 0 L * *", "", "failed to parse int from L"},
		{"0 0 * * FRI#3", "", "failed to parse int from FRI#3"},
		{"H * * * *", "", "failed to parse int from H"},
		{"0 0 1 1 * 2027", "", "expected exactly 5 fields, found 6"},
	} {
		s, err := parseCron(c.expr)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%q: error %v, want %q", c.expr, err, c.err)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", c.expr, err)
			continue
		}
		first := s.Next(from)
		if got := first.Format(time.RFC3339) + " " + s.Next(first).Format(time.RFC3339); got != c.next {
			t.Errorf("%q fires at %s, want %s", c.expr, got, c.next)
		}
	}
}
