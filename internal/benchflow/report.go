package main

import (
	"fmt"
	"io"
	"runtime"
	"slices"
	"text/tabwriter"
	"time"
)

// The targets docs/performance.md sets.
const (
	targetChainRatio  = 1.30
	targetMapRatio    = 1.20
	compassRatio      = 1.15
	targetVersionOver = 5 * time.Millisecond  // flow --version over a Go program that starts and exits
	targetReuse       = 50 * time.Millisecond // flow run --reuse of one node, 200 earlier runs
	targetMapRSS      = 64 << 20              // bytes, for the map of 1,000
	targetValidate    = 100 * time.Millisecond
)

// stats sums up one program's samples of a workload.
type stats struct {
	wall, min, max time.Duration // median, fastest, slowest
	cpu            time.Duration // median
	rss            int64         // largest
}

func summarize(s []sample) stats {
	walls := make([]time.Duration, len(s))
	cpus := make([]time.Duration, len(s))
	var st stats
	for i, x := range s {
		walls[i], cpus[i] = x.wall, x.cpu
		st.rss = max(st.rss, x.rss)
	}
	st.wall, st.cpu = median(walls), median(cpus)
	st.min, st.max = slices.Min(walls), slices.Max(walls)
	return st
}

// median of a non-empty list; the mean of the middle two for an even count.
func median[T ~int64 | ~float64](d []T) T {
	d = slices.Clone(d)
	slices.Sort(d)
	n := len(d)
	if n%2 == 1 {
		return d[n/2]
	}
	return (d[n/2-1] + d[n/2]) / 2
}

// report writes the table and the targets, and returns how many targets
// (not compass goals) were missed.
func report(w io.Writer, c config, results []result, engine []engineBench) (missed int) {
	fmt.Fprintf(w, "\nflow against the os/exec floor: median of %d rounds each, interleaved; %s/%s, %d CPUs, %s\n\n",
		c.rounds, runtime.GOOS, runtime.GOARCH, runtime.NumCPU(), time.Now().Format("2006-01-02 15:04"))
	width := len("workload")
	for _, r := range results {
		width = max(width, len(r.name))
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintf(tw, "%-*s\tfloor\t[min–max]\tflow\t[min–max]\tratio\tper process\tfloor CPU\tflow CPU\tflow peak RSS\t\n", width, "workload")
	type row struct {
		workload
		flow      stats
		floorWall time.Duration
		ratio     float64
	}
	var rows []row
	for _, r := range results {
		f, g := summarize(r.floor), summarize(r.flow)
		ratio := float64(g.wall) / float64(max(f.wall, 1))
		ratioCell, per := "—", "—"
		if r.vsFloor {
			ratioCell = fmt.Sprintf("%.2f×", ratio)
		}
		if r.procs > 0 {
			per = ms(time.Duration(int64(g.wall-f.wall) / int64(r.procs)))
		}
		fmt.Fprintf(tw, "%-*s\t%s\t[%s–%s]\t%s\t[%s–%s]\t%s\t%s\t%s\t%s\t%s\t\n", width, r.name,
			ms(f.wall), ms(f.min), ms(f.max), ms(g.wall), ms(g.min), ms(g.max),
			ratioCell, per, ms(f.cpu), ms(g.cpu), mib(g.rss))
		rows = append(rows, row{workload: r.workload, flow: g, floorWall: f.wall, ratio: ratio})
	}
	_ = tw.Flush()
	for _, r := range results {
		if r.maxPer > 0 {
			fmt.Fprintf(w, "  (%s: its floor is the same chain run locally by flow run)\n", r.name)
		}
	}

	fmt.Fprintln(w, "\ntargets (docs/performance.md):")
	tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	line := func(pass bool, compass bool, what, got, want string) {
		verdict := "PASS"
		if !pass {
			verdict = "MISS"
			if !compass {
				missed++
			}
		}
		if compass {
			want += " (compass)"
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%s\n", verdict, what, got, want)
	}
	for _, r := range rows {
		if r.vsFloor {
			got := fmt.Sprintf("%.2f×", r.ratio)
			line(r.ratio <= r.workload.ratio, false, r.name+": flow / floor", got, fmt.Sprintf("≤ %.2f×", r.workload.ratio))
			line(r.ratio <= compassRatio, true, r.name+": flow / floor", got, fmt.Sprintf("≤ %.2f×", compassRatio))
		}
		if r.maxRSS > 0 {
			line(r.flow.rss <= r.maxRSS, false, r.name+": flow peak RSS", mib(r.flow.rss), "≤ "+mib(r.maxRSS))
		}
		if r.maxPer > 0 {
			per := time.Duration(int64(r.flow.wall-r.floorWall) / int64(r.procs))
			line(per <= r.maxPer, false, r.name+": per visit over a local run", ms(per), "≤ "+ms(r.maxPer))
		}
		if r.maxOver > 0 {
			over := r.flow.wall - r.floorWall
			line(over <= r.maxOver, false, r.name+": over the floor", ms(over), "≤ "+ms(r.maxOver))
		}
		if r.maxWall > 0 {
			line(r.flow.wall <= r.maxWall, false, r.name+": whole process", ms(r.flow.wall), "≤ "+ms(r.maxWall))
		}
	}
	engineTargets(engine, func(pass bool, what, got, want string) { line(pass, false, what, got, want) })
	_ = tw.Flush()
	if len(engine) > 0 {
		fmt.Fprintf(w, "  (the engine's lines: Go benchmarks in ./engine, median of %d invocations)\n", c.engine)
	}
	if !c.isDefault() {
		fmt.Fprintln(w, "  (the targets are set for the default sizes: -chain 100 -items 1000 -concurrency 8 -nodes 1000)")
	}
	return missed
}

// ms renders a duration in milliseconds, to a tenth below 100 ms.
func ms(d time.Duration) string {
	v := float64(d) / float64(time.Millisecond)
	if v < 100 && v > -100 {
		return fmt.Sprintf("%.1f ms", v)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// mib renders bytes in MiB.
func mib(b int64) string {
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}
