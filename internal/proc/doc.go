// Package proc owns the lifecycle of every program a step spawns: run nodes,
// exec agents and the process-backed agent drivers.
//
// A Cmd wraps an os/exec command and adds three things:
//
//   - its own process group (Setpgid), so a cancellation reaches the whole
//     pipeline a shell builds and not only the shell;
//   - an environment tag, FLOW_PROC_TAG=<run>/<pid>.<seq>, inherited by every
//     descendant, so that processes which left the group or the session (a
//     `setsid daemon &`, a grandchild reparented to init after its parent
//     exited) can still be found by scanning /proc/*/environ;
//   - cancellation: when the command's context is done, SIGTERM goes to the
//     process group and to every process carrying the tag; whatever is still
//     alive after the grace period (DefaultGrace, 5 s) gets SIGKILL. Wait
//     returns only once the child has been reaped and the escalation is over.
//
// KillTagged ends every process still carrying a tag of a run; the command
// line calls it when a run ends, so background daemons started by a step do
// not outlive the run, as GitHub Actions cleans up at the end of a job.
//
// # Why a tag and not a subreaper
//
// A child subreaper (PR_SET_CHILD_SUBREAPER) would make orphans our children,
// but then some goroutine has to wait for them, and a wait for any child races
// with os/exec's own Wait for the direct child: whichever reaps first steals
// the other's exit status. The tag needs no cooperation from the kernel's
// process tree and no global state in this process. Its limits: a descendant
// that clears or rewrites its environment (env -i) is no longer found, and a
// process running as another user is not ours to signal.
//
// # Cost
//
// The /proc scan is done only on cancellation and by KillTagged, never on a
// normal exit: a Cmd that ends by itself costs an os/exec spawn, one
// environment entry and nothing else. Cmd adds no goroutine of its own; the
// ones os/exec starts for non-file I/O and context watching end in Wait.
//
// # Reading output
//
// Copier reads a child's output pipe from a goroutine of its own, and
// stops when told to without losing what the child wrote: after the
// child's exit, the bound given to Finish limits only the wait for
// descendants that keep the pipe open; what the pipe already holds is
// read whole however late the goroutine runs (a read deadline alone
// would make a late Read fail before it looked). RunOutput copies stdout,
// and a stderr that is not a file, this way; run nodes use Copier too.
//
// # Sharing
//
// A Cmd is used by one goroutine, like exec.Cmd: configure, Start, Wait.
// Command and KillTagged are safe for concurrent use.
package proc
