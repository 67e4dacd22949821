package sweep

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
)

// infraRows adds to r what the infrastructure did: re-runs and quotas per
// assignment, the prompt-cache hit ratio, and the providers' limiters.
func infraRows(r *Report, f *File) {
	at := map[string]*Row{}
	for _, row := range r.Assignments {
		at[row.Assignment] = row
	}
	for _, c := range f.Cells {
		row := at[c.Assignment]
		if row == nil {
			continue
		}
		row.Reruns += c.Reruns
		if c.Status == StatusQuota {
			row.Quota++
			if !slices.Contains(r.Quota, c.Note) {
				r.Quota = append(r.Quota, c.Note)
			}
		}
	}
	for _, rows := range [][]*Row{r.Assignments, r.ByParams} {
		for _, row := range rows {
			row.CacheHitRatio = cacheHitRatio(row.Input, row.CacheRead)
		}
	}
	r.Providers = f.Providers
}

// cacheHitRatio is cache_read / (input + cache_read), or nil when either
// was not reported or there were no prompt tokens.
func cacheHitRatio(input, cacheRead *int64) *float64 {
	if input == nil || cacheRead == nil || *input+*cacheRead == 0 {
		return nil
	}
	v := float64(*cacheRead) / float64(*input+*cacheRead)
	return &v
}

// providers writes the Markdown of the quotas and the providers' limiters.
func providers(b *bytes.Buffer, r *Report) {
	for _, q := range r.Quota {
		fmt.Fprintf(b, "\n**Quota:** cells ended, not scored — %s (`flow sweep --resume %s` runs them once it is back).\n", q, r.Sweep)
	}
	if len(r.Providers) == 0 {
		return
	}
	b.WriteString("\n## Providers\n\n")
	var rows [][]string
	for _, p := range r.Providers {
		rows = append(rows, []string{p.Provider, strconv.Itoa(p.Requests), strconv.Itoa(p.Refused), strconv.Itoa(p.Waits),
			p.Waited(), fmt.Sprintf("%.1f", p.PerMinute)})
	}
	table(b, []string{"provider", "requests", "429s", "waits", "waited", "per minute"}, rows)
}

// Waited is the total of the waits, in seconds, as the reports show it.
func (p ProviderRow) Waited() string { return fmt.Sprintf("%.1fs", float64(p.WaitedMS)/1000) }
