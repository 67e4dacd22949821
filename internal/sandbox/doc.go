// Package sandbox confines the commands flow runs for an agent: every tool
// call of a native agent (steps/native), and the program of an exec agent
// or the command of a `run:` node that says `sandbox: on`
// (docs/native.md#the-sandbox).
//
// A confined command
//
//   - may write only in its working directory (the visit's worktree under
//     isolation: worktree) and in a private temporary directory (TMPDIR) that goes with it; the
//     rest of the file system is read-only, and the working directory's
//     .git is read-only too;
//   - has no network: it runs in a network namespace of its own, with only
//     a loopback of its own (the model is reached by flow, never by a tool);
//   - gets an environment of allowed variables only (Env): no key, no
//     token, nothing the run's secrets are in.
//
// The confinement is bubblewrap (`bwrap`, Debian's package bubblewrap),
// where it is installed and works; else Landlock, through flow run again
// as its own helper (HelperArg, Exec: a network namespace, then a
// Landlock ruleset, then the command), where the kernel has it and a
// network namespace can be made. With neither, Detect says so and the
// caller refuses the command unless its agent says `sandbox: off`.
// FLOW_SANDBOX=bubblewrap, landlock or none takes that one only.
//
// Detect probes once per process and is safe for concurrent use.
package sandbox
