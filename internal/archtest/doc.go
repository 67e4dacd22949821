// Package archtest holds no code, only tests that keep flow's structure
// from drifting (docs/architecture.md): the import direction of its layers,
// internal (ordered, secret, ratelimit, proc, gitwork, sandbox) ← schema ← flows ←
// engine/record ← rundir ← engine ← steps ← reuse ← temporal,
// internal/trace ← runner ← sweep, serve ← cmd ← the test kits, where an
// arrow reads "is imported by" (a layer may import its own layer and the
// layers to its left, never one to its right); that every package is in a
// layer; and that runs start, resume and stop only through package runner.
package archtest
