// Package clitest holds what the agent drivers' tests share: finding the
// real agent CLI (pi, claude, codex), a turn for the scripted model server
// (package modelserver) to answer, a progress recorder, and the checks
// every end-to-end test ends with — no API key in any file, no process of
// the turn left behind.
//
// It also holds the one rule for a test that needs a program Go does not
// bring, an agent CLI or Chromium: Missing skips it on a developer's
// machine and fails it with CI=true.
//
// It is imported by tests only. Everything in it is safe to call from
// parallel tests; a Progress is safe for concurrent use.
package clitest
