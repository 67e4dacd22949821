package flows

import (
	"fmt"
	"strconv"
	"strings"

	cron "github.com/netresearch/go-cron"
)

// cronParser reads the five standard fields and the descriptors. DowOrDom
// keeps the classic rule (a day matches when its day of the month or its day
// of the week does, when both are restricted); the minimum of @every is
// parseCron's (docs/decisions.md, "Cron library").
var cronParser = cron.MustNewParser(cron.Minute | cron.Hour | cron.Dom | cron.Month | cron.Dow | cron.Descriptor | cron.DowOrDom).
	WithMinEveryInterval(0)

// cronField is one field's bounds and names.
type cronField struct {
	min, max int
	names    map[string]int
}

var cronFields = [5]cronField{
	{0, 59, nil},
	{0, 23, nil},
	{1, 31, nil},
	{1, 12, map[string]int{"jan": 1, "feb": 2, "mar": 3, "apr": 4, "may": 5, "jun": 6, "jul": 7, "aug": 8, "sep": 9, "oct": 10, "nov": 11, "dec": 12}},
	{0, 6, map[string]int{"sun": 0, "mon": 1, "tue": 2, "wed": 3, "thu": 4, "fri": 5, "sat": 6}},
}

// standardFields rewrites five cron fields into the plainest form that
// means the same: every part becomes "*", "a", "a-b" or "a-b/s" with a step
// inside its range, checked against the field's bounds. The language stays
// the one flow has always read: Sunday is 0 only, a range never wraps, and
// a step larger than its range means its start (docs/serve.md). Anything
// but five fields goes to the parser as written, which says what is wrong.
func standardFields(expr string) (string, error) {
	fields := strings.Fields(expr)
	if strings.HasPrefix(expr, "@") || len(fields) != len(cronFields) {
		return expr, nil
	}
	for i, f := range fields {
		var parts []string
		for _, part := range strings.FieldsFunc(f, func(r rune) bool { return r == ',' }) {
			p, err := cronFields[i].part(part)
			if err != nil {
				return "", err
			}
			parts = append(parts, p)
		}
		fields[i] = strings.Join(parts, ",")
	}
	return strings.Join(fields, " "), nil
}

// part reads number | name | "*" | "?", then an optional "-" end, then an
// optional "/" step; "a/s" runs to the field's maximum.
func (c cronField) part(expr string) (string, error) {
	rangeAndStep := strings.Split(expr, "/")
	lowAndHigh := strings.Split(rangeAndStep[0], "-")
	start, end, step, star := c.min, c.max, 1, true
	if lowAndHigh[0] != "*" && lowAndHigh[0] != "?" {
		star = false
		var err error
		if start, err = c.value(lowAndHigh[0]); err != nil {
			return "", err
		}
		switch len(lowAndHigh) {
		case 1:
			end = start
		case 2:
			if end, err = c.value(lowAndHigh[1]); err != nil {
				return "", err
			}
		default:
			return "", fmt.Errorf("too many hyphens: %s", expr)
		}
	}
	switch len(rangeAndStep) {
	case 1:
	case 2:
		var err error
		if step, err = number(rangeAndStep[1]); err != nil {
			return "", err
		}
		if len(lowAndHigh) == 1 {
			end = c.max
		}
		star = star && step <= 1
	default:
		return "", fmt.Errorf("too many slashes: %s", expr)
	}
	switch {
	case start < c.min:
		return "", fmt.Errorf("beginning of range (%d) below minimum (%d): %s", start, c.min, expr)
	case end > c.max:
		return "", fmt.Errorf("end of range (%d) above maximum (%d): %s", end, c.max, expr)
	case start > end:
		return "", fmt.Errorf("beginning of range (%d) beyond end of range (%d): %s", start, end, expr)
	case step == 0:
		return "", fmt.Errorf("step of range should be a positive number: %s", expr)
	case star:
		return "*", nil
	case start == end || step > end-start:
		return strconv.Itoa(start), nil
	case step == 1:
		return fmt.Sprintf("%d-%d", start, end), nil
	}
	return fmt.Sprintf("%d-%d/%d", start, end, step), nil
}

func (c cronField) value(s string) (int, error) {
	if v, ok := c.names[strings.ToLower(s)]; ok {
		return v, nil
	}
	return number(s)
}

func number(s string) (int, error) {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0, fmt.Errorf("failed to parse int from %s: %w", s, err)
	}
	if n < 0 {
		return 0, fmt.Errorf("negative number (%d) not allowed: %s", n, s)
	}
	return n, nil
}
