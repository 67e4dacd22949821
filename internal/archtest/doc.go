// Package archtest holds no code, only tests that keep flow's structure
// from drifting (docs/architecture.md): the import direction of its layers,
// schema ← flows ← rundir ← engine ← steps ← temporal ← runner ← sweep,
// serve ← cmd, where an arrow reads "is imported by" (a layer may import
// its own layer and the layers to its left, never one to its right), and
// that runs start, resume and stop only through package runner.
package archtest
