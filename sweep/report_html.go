package sweep

import (
	"bytes"
	"cmp"
	_ "embed"
	"fmt"
	"html/template"
	"math"
	"slices"
	"strconv"
	"sync"
	"time"

	"github.com/flowrun/flow/rundir"
)

var (
	//go:embed report.html.tmpl
	htmlSource string
	// htmlPage is parsed on first use, not when every flow command starts
	// (docs/performance.md, start-up).
	htmlPage = sync.OnceValue(func() *template.Template { return template.Must(template.New("report").Parse(htmlSource)) })
)

// htmlData is what report.html.tmpl shows.
type htmlData struct {
	R               *Report
	Counts, Updated string
	Spent           string
	C               chart
	Columns         []string
	Rows, ParamRows []htmlRow
	NodeColumns     []string
	Nodes           [][]string
	TaskColumns     []string
	Tasks           [][]string
}

type htmlRow struct {
	Label  string
	Pinned bool
	Cells  []string
}

// htmlReport renders report.html: self-contained, no script, no fetch;
// the chart is inline SVG.
func htmlReport(r *Report) ([]byte, error) {
	d := htmlData{R: r, Counts: r.Cells.text(), Updated: r.Updated.Format(time.DateTime), C: drawChart(r),
		Spent:   rundir.TokensText(r.Spent) + " tokens, cost " + rundir.CostText(r.Spent),
		Columns: r.columns(), NodeColumns: nodeColumns, TaskColumns: taskColumns}
	for _, t := range r.Tasks {
		d.Tasks = append(d.Tasks, t.cells())
	}
	for _, row := range r.Assignments {
		d.Rows = append(d.Rows, htmlRow{Label: row.Assignment, Pinned: row.Pinned, Cells: r.cells(row)})
	}
	for _, row := range r.ByParams {
		d.ParamRows = append(d.ParamRows, htmlRow{Label: row.Assignment, Cells: r.cells(row)})
	}
	for _, n := range r.Nodes {
		d.Nodes = append(d.Nodes, n.cells())
	}
	var b bytes.Buffer
	if err := htmlPage().Execute(&b, d); err != nil {
		return nil, fmt.Errorf("rendering the report page: %w", err)
	}
	return b.Bytes(), nil
}

// chart is the cost-against-success chart, laid out in pixels.
type chart struct {
	W, H, Left, Right, Top, Bottom   int
	TickX, TickY, MidX, MidY, LabelY int
	LegendX, LegendY, LegendTextX    int
	XLabel                           string
	XTicks, YTicks                   []tick
	Points                           []point
	Frontier                         string // the polyline's points, cheapest first
}

type tick struct {
	Pos   string
	Label string
}

type point struct {
	Label, Text                   string
	X, Y, Low, High, TextX, TextY string
	Frontier                      bool
}

func drawChart(r *Report) chart {
	c := chart{W: 720, H: 400, Left: 80, Right: 560, Top: 20, Bottom: 340}
	c.TickX, c.TickY, c.MidX, c.MidY, c.LabelY = c.Left-8, c.Bottom+18, (c.Left+c.Right)/2, (c.Top+c.Bottom)/2, c.Bottom+40
	c.LegendX, c.LegendY, c.LegendTextX = c.Left+6, c.H-10, c.Left+16
	c.XLabel = map[string]string{"cost": "cost per run (USD)", "tokens": "tokens per run (no cost reported)", "wall": "wall time per run, s (no cost or tokens reported)"}[r.Basis]
	pts := points(r.Assignments)
	maxX := 0.0
	for _, p := range pts {
		maxX = max(maxX, *p.PerRun)
	}
	maxX = niceCeil(maxX * 1.05)
	x := func(v float64) float64 { return float64(c.Left) + v/maxX*float64(c.Right-c.Left) }
	y := func(v float64) float64 { return float64(c.Bottom) - v*float64(c.Bottom-c.Top) }
	num := func(v float64) string { return strconv.FormatFloat(v, 'f', 1, 64) }
	for i := 0; i <= 4; i++ {
		v := float64(i) / 4
		c.YTicks = append(c.YTicks, tick{Pos: num(y(v)), Label: strconv.Itoa(i*25) + "%"})
		xv := maxX * float64(i) / 4
		c.XTicks = append(c.XTicks, tick{Pos: num(x(xv)), Label: r.tickText(xv)})
	}
	var front []*Row
	var placed [][3]float64 // labels so far: x from, x to, y
	for _, p := range byCost(pts) {
		px, py := x(*p.PerRun), y(*p.SuccessRate)
		ly := labelY(placed, px+10, px+10+7*float64(len(p.Assignment)), py)
		placed = append(placed, [3]float64{px + 10, px + 10 + 7*float64(len(p.Assignment)), ly})
		c.Points = append(c.Points, point{Label: p.Assignment, Frontier: p.Frontier,
			Text: fmt.Sprintf("%d/%d succeeded, %s per run", p.Successes, p.N, r.perRun(p.PerRun)),
			X:    num(px), Y: num(py), Low: num(y(*p.WilsonLow)), High: num(y(*p.WilsonHigh)), TextX: num(px + 10), TextY: num(ly)})
		if p.Frontier {
			front = append(front, p)
		}
	}
	var line []byte
	for i, p := range front {
		if i > 0 {
			line = append(line, ' ')
		}
		line = fmt.Appendf(line, "%s,%s", num(x(*p.PerRun)), num(y(*p.SuccessRate)))
	}
	c.Frontier = string(line)
	return c
}

// byCost sorts rows by their cost per run, cheapest first.
func byCost(rows []*Row) []*Row {
	out := slices.Clone(rows)
	slices.SortStableFunc(out, func(a, b *Row) int { return cmp.Compare(*a.PerRun, *b.PerRun) })
	return out
}

// labelY moves a point's label down, line by line, until it overlaps no
// label placed before it.
func labelY(placed [][3]float64, from, to, y float64) float64 {
	for moved := true; moved; {
		moved = false
		for _, p := range placed {
			if from < p[1] && p[0] < to && math.Abs(p[2]-y) < 14 {
				y, moved = p[2]+14, true
			}
		}
	}
	return y
}

// niceCeil rounds v up to 1, 2, 2.5 or 5 times a power of ten, so that
// quarters of it are round numbers.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func (r *Report) tickText(v float64) string {
	switch r.Basis {
	case "cost":
		return "$" + strconv.FormatFloat(v, 'g', 4, 64)
	case "tokens":
		return strconv.FormatFloat(v, 'f', 0, 64)
	}
	return strconv.FormatFloat(v, 'f', 1, 64) + "s"
}
