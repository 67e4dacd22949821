package main

import (
	"os"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestMain lets the test binary act as the flow command inside scripts.
func TestMain(m *testing.M) {
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
	})
}
