package serve

import (
	"strconv"
	"time"
)

// stampLayout is how the pages write a time: with its date and its zone,
// always (docs/serve.md, "The page"). A clock alone (13:16:31) says
// neither which day nor where.
const stampLayout = "2006-01-02 15:04:05 MST"

// stamp writes t in the server's zone, dated and zoned; "" for no time.
func stamp(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Local().Format(stampLayout)
}

// span writes a duration as people read one: 42s, 4m05s, 3h59m, 2d3h;
// the page's script counts down (and up) in the same words.
func span(d time.Duration) string {
	s := int64(max(d, 0).Round(time.Second) / time.Second)
	two := func(n int64) string {
		if n < 10 {
			return "0" + strconv.FormatInt(n, 10)
		}
		return strconv.FormatInt(n, 10)
	}
	switch {
	case s < 60:
		return strconv.FormatInt(s, 10) + "s"
	case s < 3600:
		return strconv.FormatInt(s/60, 10) + "m" + two(s%60) + "s"
	case s < 48*3600:
		return strconv.FormatInt(s/3600, 10) + "h" + two(s%3600/60) + "m"
	}
	return strconv.FormatInt(s/86400, 10) + "d" + strconv.FormatInt(s%86400/3600, 10) + "h"
}
