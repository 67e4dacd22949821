package main

import (
	"errors"
	"os"
	"os/exec"
	"strconv"
	"testing"

	"github.com/flowrun/flow/internal/sandbox"
	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the flow command inside scripts.
func TestMain(m *testing.M) {
	// The Landlock sandbox runs flow again as its helper, by whatever name
	// this binary was started under.
	if len(os.Args) > 1 && os.Args[1] == sandbox.HelperArg {
		os.Exit(Main(os.Args[1:]))
	}
	// The tests start this binary as the flow command many times. Built with
	// -race, each of those processes would wait a second before exiting, for
	// late race reports; they still report, without the wait.
	if os.Getenv("GORACE") == "" {
		_ = os.Setenv("GORACE", "atexit_sleep_ms=0")
	}
	testscript.Main(m, map[string]func(){
		"flow": func() { os.Exit(Main(os.Args[1:])) },
	})
}

// TestScripts runs the CLI scripts in testdata/script: each runs the real
// command and pins its output. UPDATE_SCRIPTS=1 rewrites their golden files.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:           "testdata/script",
		UpdateScripts: os.Getenv("UPDATE_SCRIPTS") == "1",
		Setup: func(env *testscript.Env) error {
			env.Setenv("FLOW_DRIVER", "exec")
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"exits": exits},
	})
}

// exits is the script command `exits CODE PROGRAM [ARG...]`: exec, failing
// unless the program exits with CODE. `! exec` passes for any failure, and
// flow's exit codes say which failure it was (README.md, Commands).
func exits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE PROGRAM [ARG...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: %v", err)
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited %d, want %d", args[1], got, want)
	}
}
