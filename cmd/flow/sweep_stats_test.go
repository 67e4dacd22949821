package main

import (
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/engine/record"
	"github.com/flowrun/flow/rundir"
)

// Agents of known quality for the statistics test. The coder on model b
// fails task n on the first n-1 runs of every three (a counter per model
// and task in $STATE); the reviewer on model d fails task 3 always.
const (
	countedCoder = `#!/usr/bin/env bash
turn=$(cat)
n=$(printf '%s\n' "$turn" | grep -oE '"n": *[0-9]+' | grep -oE '[0-9]+$')
file="$STATE/count-$FLOW_MODEL-$n"
c=$(( $(cat "$file" 2>/dev/null || echo 0) + 1 ))
echo "$c" > "$file"
if [ "$FLOW_MODEL" = b ] && [ $(( (c - 1) % 3 )) -lt $(( n - 1 )) ]; then
  echo "coder on b fails task $n, run $c" >&2
  exit 1
fi
echo "coded task $n on $FLOW_MODEL"
`
	strictReviewer = `#!/usr/bin/env bash
turn=$(cat)
if [ "$FLOW_MODEL" = d ] && printf '%s\n' "$turn" | grep -qE '"n": *3'; then
  echo "reviewer on d rejects task 3" >&2
  exit 1
fi
echo "approved on $FLOW_MODEL"
`
)

// TestSweepStatisticsMatchTheRecordedOutcomes: --assign coder=a,b --assign
// reviewer=c,d is 4 assignments; --inputs with 3 tasks and --repeat 3 is 9
// runs each; the report's pass^3 and Wilson interval are what the test
// works out itself from the cells' run directories.
func TestSweepStatisticsMatchTheRecordedOutcomes(t *testing.T) {
	d := newSweepDir(t, map[string]string{
		"agents/coder.md":    "---\nname: coder\ndescription: codes\ndriver: exec\ncommand: [./coder.sh]\n---\nCode.\n",
		"agents/reviewer.md": "---\nname: reviewer\ndescription: reviews\ndriver: exec\ncommand: [./reviewer.sh]\n---\nReview.\n",
		"agents/coder.sh":    countedCoder,
		"agents/reviewer.sh": strictReviewer,
		"tasks.jsonl":        "{\"id\": \"one\", \"n\": 1}\n{\"id\": \"two\", \"n\": 2}\n\n{\"id\": \"three\", \"n\": 3}\n",
		"f.yaml": `name: f
agents: [./agents]
input: {n: integer}
nodes:
  - {id: code, agent: coder, reads: [input], prompt: Code.}
  - {id: review, agent: reviewer, reads: [input], prompt: Review.}
`,
	})
	out, code := d.flow("sweep", "f.yaml", "--assign", "coder=a,b", "--assign", "reviewer=c,d", "--inputs", "tasks.jsonl", "--repeat", "3")
	if code != 0 {
		t.Fatalf("flow sweep: exit %d\n%s", code, out)
	}
	s := d.sweeps()[0]
	f := s.Snapshot()
	// Outcomes as the run directories record them, by assignment and task.
	type tally struct{ n, c int }
	outcomes := map[string]map[string]*tally{}
	for _, c := range f.Cells {
		info, err := rundir.Inspect(filepath.Join(s.CellsDir(), c.Run))
		if err != nil {
			t.Fatal(err)
		}
		if outcomes[c.Assignment] == nil {
			outcomes[c.Assignment] = map[string]*tally{}
		}
		tt := outcomes[c.Assignment][c.Task]
		if tt == nil {
			tt = &tally{}
			outcomes[c.Assignment][c.Task] = tt
		}
		tt.n++
		if info.Status == record.StatusSucceeded {
			tt.c++
		}
	}
	want := map[string]int{"coder=a reviewer=c": 9, "coder=a reviewer=d": 6, "coder=b reviewer=c": 6, "coder=b reviewer=d": 5}
	r := d.report(s)
	if len(r.Assignments) != 4 {
		t.Fatalf("%d assignments, want 4", len(r.Assignments))
	}
	for _, row := range r.Assignments {
		n, c := 0, 0
		hat := 0.0
		for _, tt := range outcomes[row.Assignment] {
			n, c = n+tt.n, c+tt.c
			hat += choose(tt.c, 3) / choose(tt.n, 3)
		}
		hat /= float64(len(outcomes[row.Assignment]))
		low, high := wilson95(c, n)
		if row.N != 9 || n != 9 || row.Successes != c || c != want[row.Assignment] {
			t.Errorf("%s: report %d/%d, runs %d/%d, want %d/9", row.Assignment, row.Successes, row.N, c, n, want[row.Assignment])
		}
		if row.PassHatK == nil || !near(*row.PassHatK, hat) {
			t.Errorf("%s: pass^3 %v, want %v", row.Assignment, row.PassHatK, hat)
		}
		if !near(*row.WilsonLow, low) || !near(*row.WilsonHigh, high) {
			t.Errorf("%s: Wilson [%v, %v], want [%v, %v]", row.Assignment, *row.WilsonLow, *row.WilsonHigh, low, high)
		}
	}
}

// choose is C(n, k) by multiplication, for the test's own reckoning.
func choose(n, k int) float64 {
	if k > n {
		return 0
	}
	v := 1.0
	for i := 1; i <= k; i++ {
		v = v * float64(n-k+i) / float64(i)
	}
	return v
}

// wilson95 is the Wilson score interval, written out from its formula.
func wilson95(c, n int) (float64, float64) {
	const z = 1.959963984540054
	p, nf := float64(c)/float64(n), float64(n)
	mid := (p + z*z/(2*nf)) / (1 + z*z/nf)
	half := z / (1 + z*z/nf) * sqrtf(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(mid-half, 0), min(mid+half, 1)
}

func sqrtf(x float64) float64 {
	r := x
	for range 60 {
		if r == 0 {
			return 0
		}
		r = (r + x/r) / 2
	}
	return r
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }
