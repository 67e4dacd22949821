// Package sweep runs a flow over a grid (docs/sweeps.md) and compares the
// outcomes: model assignments (every agent on one model, or single agents
// on their own lists), tasks, swept input fields and repetitions. Each
// cell of the grid is an ordinary run — runner.Backend.Start into a run
// directory under the sweep's cells/ — so `flow show` and `flow resume`
// take any of them.
//
// Lifecycle: Create checks the grid against the plan and writes the sweep
// directory's sweep.json (the grid, the flow as read, each cell with its
// run id and status); Run runs the cells that have not ended, model-major,
// Concurrency at a time under one shared cap on live agent turns, refusing
// a cell whose forecast (History, from earlier runs of the same flow) the
// budget's left-over cannot cover, and rewrites report.{md,csv,json,html}
// after every cell; Open and Run again resume a sweep that was cut off,
// resuming a cell's run from its journal rather than running it again.
// Pin writes the chosen assignment into the flow file's models:.
//
// The statistics (Wilson, pass@k, pass^k, McNemar, percentiles) are plain
// functions in stats.go. The package owns the sweep directory's layout:
// sweep.json, cells/ and the report files; package rundir owns each run
// directory. A *Sweep is safe for concurrent use.
package sweep
