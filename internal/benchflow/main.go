// Command benchflow measures what `flow run` costs on top of the processes a
// flow spawns, and how long `flow validate` takes on a large file: the targets
// of docs/performance.md.
//
//	go run ./internal/benchflow            # or: go -C tools tool task bench-flow
//	go run ./internal/benchflow -rounds 11 -strict
//
// In one run it builds the flow binary and a floor program (./floor: the
// same processes through plain os/exec at the same concurrency, nothing
// else), generates the flows, and times:
//
//   - chain: a chain of 100 `run: ["true"]` nodes, against the floor
//     spawning 100 `true`s one after another;
//   - map: a map of 1,000 `run: ["true"]` items at concurrency 8, against
//     the floor spawning 1,000 `true`s 8 at a time;
//   - validate: `flow validate` of a generated 1,000-node flow (run nodes,
//     templates and guards that read earlier nodes; no agents), against the
//     floor starting and exiting (the cost of any Go process);
//   - flow --version, against the floor starting and exiting: flow's own
//     start-up (package init, the runtime's set-up of a large binary);
//   - --reuse: `flow run --reuse` of a one-node flow in a directory of 200
//     earlier runs, half of the flow and then half of another, against the
//     floor spawning one `true`; the run each round makes is removed, so
//     every round finds the run to reuse behind the other flow's.
//
// Then it runs the engine's Go benchmark MapMemory -engine times (0 skips
// it): the peak heap per item of a 10,000-item map, checked on the median.
//
// Floor and flow alternate, A B A B, for -rounds rounds each after one
// untimed warm-up pair, so drift in the machine's load hits both alike.
// Every process starts in a fresh working directory under a temporary
// directory beside the current one (not /tmp, which may be another, faster
// or slower, file system), with HOME pointing into it and no FLOW_*
// variables, so neither the user's configuration nor earlier runs weigh in.
// flow records its runs there as a user's would; the directory is removed
// at the end unless -keep is given.
//
// How to read the table: every time is the median of the rounds, with the
// fastest and slowest in brackets; "ratio" is the median flow time over the
// median floor time, and "per process" is the difference divided by the
// processes spawned, that is flow's own cost per visit. "CPU" is user plus
// system time, children included. "peak RSS" is the largest maximum
// resident set of any round. validate has no ratio: its floor is there only
// to show what starting any Go program costs. Compare figures only within one run: on a
// small shared machine the floor itself moves by tens of percent between
// runs. The targets follow the table, PASS or MISS each; the
// compass lines are goals, not targets.
//
// It exits 0 whatever it measures, unless -strict is given: then a MISS of
// a target (not of a compass goal) exits 1. Errors (a build that fails, a
// run that does not succeed) exit 2.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"time"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// config is what the flags say.
type config struct {
	rounds      int
	chain       int
	items       int
	concurrency int
	nodes       int
	dir         string
	keep        bool
	strict      bool
	engine      int
	temporal    int  // nodes of the chain timed on Temporal (0: skip)
	reuse       int  // earlier runs before the timed flow run --reuse (0: skip)
	plain       bool // the dev server with its default settings
}

// isDefault reports whether the workloads are the sizes docs/performance.md sets its
// targets for.
func (c config) isDefault() bool {
	return c.chain == 100 && c.items == 1000 && c.concurrency == 8 && c.nodes == 1000 && (c.temporal == 50 || c.temporal == 0) && (c.reuse == 200 || c.reuse == 0)
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	var c config
	fs := flag.NewFlagSet("benchflow", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.rounds, "rounds", 7, "timed rounds of each program per workload")
	fs.IntVar(&c.chain, "chain", 100, "nodes in the chain")
	fs.IntVar(&c.items, "items", 1000, "items in the map")
	fs.IntVar(&c.concurrency, "concurrency", 8, "the map's concurrency")
	fs.IntVar(&c.nodes, "nodes", 1000, "nodes in the flow to validate")
	fs.StringVar(&c.dir, "dir", ".", "where to make the temporary directory (keep it on the disk your runs use)")
	fs.BoolVar(&c.keep, "keep", false, "keep the temporary directory (binaries, flows, the last runs)")
	fs.BoolVar(&c.strict, "strict", false, "exit 1 if a target is missed")
	fs.IntVar(&c.engine, "engine", 8, "invocations of the engine's Go benchmarks (0: skip them)")
	fs.IntVar(&c.temporal, "temporal", 50, "nodes of the chain run on a Temporal dev server against the same chain run locally (0: skip; skipped without the Temporal CLI)")
	fs.IntVar(&c.reuse, "reuse", 200, "earlier runs in the runs directory of the timed flow run --reuse of a one-node flow (0: skip)")
	fs.BoolVar(&c.plain, "temporal-plain", false, "start the dev server with its default settings, not docs/temporal.md's")
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments: %s", strings.Join(fs.Args(), " "))
	}
	if c.rounds < 1 || c.chain < 1 || c.items < 1 || c.concurrency < 1 || c.nodes < 10 || c.engine < 0 || c.temporal < 0 || c.reuse < 0 {
		return c, errors.New("-rounds, -chain, -items and -concurrency must be at least 1, -nodes at least 10, -engine at least 0")
	}
	return c, nil
}

// run is the whole command; it returns the exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	c, err := parseFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		fmt.Fprintln(stderr, "benchflow:", err)
		return 2
	}
	res, engine, err := bench(ctx, c, stderr)
	if err != nil {
		fmt.Fprintln(stderr, "benchflow:", err)
		return 2
	}
	missed := report(stdout, c, res, engine)
	if c.strict && missed > 0 {
		return 1
	}
	return 0
}

// workload is one thing timed: the floor's argv against flow's, and the
// targets docs/performance.md sets for it (zero: none).
type workload struct {
	name  string
	procs int // processes spawned by one run; 0 for validate
	floor []string
	flow  []string

	vsFloor bool          // flow within ratio (and compassRatio) of the floor
	ratio   float64       // the target of flow / floor when vsFloor
	maxOver time.Duration // flow's median at most this over the floor's
	dir     string        // the working directory of every process, if not a fresh one
	maxRSS  int64         // flow's peak RSS at most this, in bytes
	maxWall time.Duration // flow's median wall time at most this
	// maxPer bounds flow's extra time per process over the floor, which
	// for the chain on Temporal is the same chain run locally.
	maxPer time.Duration
	// sameRuns removes the runs a round's flow made from dir's runs
	// directory, so that every round finds the same earlier runs.
	sameRuns bool
}

// result is a workload's samples.
type result struct {
	workload
	floor, flow []sample
}

// bench builds, generates and measures; the temporary directory is gone
// when it returns unless c.keep.
func bench(ctx context.Context, c config, log io.Writer) (_ []result, _ []engineBench, err error) {
	root, err := moduleRoot(ctx)
	if err != nil {
		return nil, nil, err
	}
	parent, err := filepath.Abs(c.dir)
	if err != nil {
		return nil, nil, err
	}
	tmp, err := os.MkdirTemp(parent, ".bench-*")
	if err != nil {
		return nil, nil, fmt.Errorf("making the temporary directory: %w", err)
	}
	if c.keep {
		fmt.Fprintf(log, "keeping %s\n", tmp)
	} else {
		defer func() { err = errors.Join(err, os.RemoveAll(tmp)) }()
	}

	bin := filepath.Join(tmp, "bin")
	flowBin, floorBin := filepath.Join(bin, "flow"), filepath.Join(bin, "floor")
	fmt.Fprintln(log, "building flow and the floor program")
	for _, b := range [][2]string{{flowBin, "./cmd/flow"}, {floorBin, "./internal/benchflow/floor"}} {
		if err := build(ctx, root, b[0], b[1]); err != nil {
			return nil, nil, err
		}
	}

	dir := filepath.Join(tmp, "flows")
	files := map[string]string{
		"chain.yaml":  chainFlow("chain", c.chain),
		"fan.yaml":    mapFlow("fan", c.items, c.concurrency),
		"large.yaml":  largeFlow("large", c.nodes),
		"serial.yaml": chainFlow("serial", max(c.temporal, 1)),
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, err
	}
	for name, src := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(src), 0o644); err != nil {
			return nil, nil, fmt.Errorf("writing %s: %w", name, err)
		}
	}

	env, err := childEnv(tmp)
	if err != nil {
		return nil, nil, err
	}
	work := []workload{
		{
			name:    fmt.Sprintf("chain of %d", c.chain),
			procs:   c.chain,
			floor:   []string{floorBin, "-n", fmt.Sprint(c.chain), "-k", "1", "true"},
			flow:    []string{flowBin, "run", filepath.Join(dir, "chain.yaml")},
			vsFloor: true,
			ratio:   targetChainRatio,
		},
		{
			name:    fmt.Sprintf("map of %d at %d", c.items, c.concurrency),
			procs:   c.items,
			floor:   []string{floorBin, "-n", fmt.Sprint(c.items), "-k", fmt.Sprint(c.concurrency), "true"},
			flow:    []string{flowBin, "run", filepath.Join(dir, "fan.yaml")},
			vsFloor: true,
			ratio:   targetMapRatio,
			maxRSS:  targetMapRSS,
		},
		{
			name:    fmt.Sprintf("validate %d nodes", 10*((c.nodes+9)/10)),
			floor:   []string{floorBin, "-n", "0"},
			flow:    []string{flowBin, "validate", filepath.Join(dir, "large.yaml")},
			maxWall: targetValidate,
		},
		{
			name:    "flow --version",
			floor:   []string{floorBin, "-n", "0"},
			flow:    []string{flowBin, "--version"},
			maxOver: targetVersionOver,
		},
	}
	if c.reuse > 0 {
		fmt.Fprintf(log, "making %d earlier runs for --reuse\n", c.reuse)
		wd, err := earlierRuns(ctx, flowBin, tmp, env, c.reuse)
		if err != nil {
			return nil, nil, err
		}
		work = append(work, workload{
			name:     fmt.Sprintf("--reuse, %d runs", c.reuse),
			procs:    1,
			floor:    []string{floorBin, "-n", "1", "true"},
			flow:     []string{flowBin, "run", "--reuse", "one.yaml"},
			maxWall:  targetReuse,
			dir:      wd,
			sameRuns: true,
		})
	}
	if c.temporal > 0 {
		if cli := temporalCLI(root); cli == "" {
			fmt.Fprintln(log, "the Temporal CLI is not installed (go -C tools tool task deps): the chain on Temporal is skipped")
		} else {
			tb, err := startTemporal(ctx, cli, flowBin, tmp, env, c.plain, log)
			if err != nil {
				return nil, nil, err
			}
			defer tb.stop()
			serial := filepath.Join(dir, "serial.yaml")
			work = append(work, workload{
				name:   fmt.Sprintf("chain of %d on Temporal", c.temporal),
				procs:  c.temporal,
				floor:  []string{flowBin, "run", serial},
				flow:   []string{flowBin, "run", "--temporal", tb.addr, serial},
				maxPer: targetTemporalVisit,
			})
		}
	}
	r := &runner{tmp: tmp, env: env}
	var results []result
	for _, w := range work {
		fmt.Fprintf(log, "%-22s", w.name)
		res := result{workload: w}
		for round := 0; round <= c.rounds; round++ { // round 0 warms up
			f, err := r.measure(ctx, w.floor, w.dir)
			if err != nil {
				return nil, nil, err
			}
			var before []string
			if w.sameRuns {
				before = runNames(w.dir)
			}
			g, err := r.measure(ctx, w.flow, w.dir)
			if err != nil {
				return nil, nil, err
			}
			if w.sameRuns {
				if err := removeRunsSince(w.dir, before); err != nil {
					return nil, nil, err
				}
			}
			if round > 0 {
				res.floor, res.flow = append(res.floor, f), append(res.flow, g)
			}
			fmt.Fprint(log, ".")
		}
		fmt.Fprintln(log)
		results = append(results, res)
	}
	if c.engine == 0 {
		return results, nil, nil
	}
	// The Go benchmarks are built and run with the user's Go environment
	// (its build cache under HOME), without FLOW_* variables.
	goEnv := slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "FLOW_") })
	engine, err := benchEngine(ctx, root, tmp, c.engine, goEnv, log)
	if err != nil {
		return nil, nil, err
	}
	return results, engine, nil
}

// moduleRoot is the directory of flow's go.mod.
func moduleRoot(ctx context.Context) (string, error) {
	out, err := exec.CommandContext(ctx, "go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("finding the module: %w", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", errors.New("run benchflow inside the flow module (go run ./internal/benchflow)")
	}
	return filepath.Dir(gomod), nil
}

// build compiles the package pkg of the module at root into out, static
// (CGO_ENABLED=0), as `task build` builds flow.
func build(ctx context.Context, root, out, pkg string) error {
	cmd := exec.CommandContext(ctx, "go", "build", "-o", out, pkg)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("building %s: %w\n%s", pkg, err, msg)
	}
	return nil
}

// childEnv is this process's environment without FLOW_* variables and with
// HOME inside tmp: the user's flow configuration and agents stay out.
func childEnv(tmp string) ([]string, error) {
	home := filepath.Join(tmp, "home")
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, err
	}
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "FLOW_") || strings.HasPrefix(kv, "HOME=") || strings.HasPrefix(kv, "XDG_CONFIG_HOME=")
	})
	return append(env, "HOME="+home), nil
}

// sample is one process's cost.
type sample struct {
	wall time.Duration
	cpu  time.Duration
	rss  int64 // bytes
}

// runner runs the measured processes.
type runner struct {
	tmp string
	env []string
	seq int
}

// measure runs argv in a fresh working directory and returns its wall time
// (start to reaped), CPU time and peak RSS. Its output goes to files in that
// directory, as it would to a log; a non-zero exit is an error showing them.
// The directory is removed afterwards, outside the timing.
func (r *runner) measure(ctx context.Context, argv []string, dir string) (sample, error) {
	r.seq++
	wd := filepath.Join(r.tmp, "work", fmt.Sprint(r.seq))
	if err := os.MkdirAll(wd, 0o755); err != nil {
		return sample{}, err
	}
	defer func() { _ = os.RemoveAll(wd) }()
	out, err := os.Create(filepath.Join(wd, "output.log"))
	cwd := wd
	if dir != "" {
		cwd = dir
	}
	if err != nil {
		return sample{}, err
	}
	defer func() { _ = out.Close() }()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = cwd, r.env, out, out
	start := time.Now()
	err = cmd.Run()
	wall := time.Since(start)
	if ctx.Err() != nil {
		return sample{}, context.Cause(ctx)
	}
	if err != nil {
		msg, _ := os.ReadFile(out.Name())
		return sample{}, fmt.Errorf("%s %s: %w\n%s", filepath.Base(argv[0]), strings.Join(argv[1:], " "), err, tail(msg, 2000))
	}
	rss, cpu := usage(cmd.ProcessState)
	return sample{wall: wall, cpu: cpu, rss: rss}, nil
}

// tail is the last n bytes of b.
func tail(b []byte, n int) []byte {
	if len(b) > n {
		return b[len(b)-n:]
	}
	return b
}
