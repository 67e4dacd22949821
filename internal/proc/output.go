package proc

import (
	"errors"
	"io"
	"os"
	"time"

	"github.com/sourcegraph/conc"
)

// DefaultLinger is how long a program that has closed its standard output
// may live on before RunOutput ends it. Closing stdout is how a program
// says its answer is complete; a program that then keeps running (a
// helper it did not wait for, a hang at exit) would otherwise hold the
// turn until its timeout.
const DefaultLinger = 3 * time.Second

// errLingered is the cause RunOutput stops a lingering program with.
var errLingered = errors.New("the program closed its output but did not exit")

// Output is how a command run by RunOutput ended.
type Output struct {
	// Err is what Wait returned: nil, an *exec.ExitError, or the
	// cancellation's.
	Err error
	// Lingered says the program closed its stdout and had not exited
	// after the linger time, so it was ended (SIGTERM to its tree, SIGKILL
	// after the grace); Err then is its death by signal.
	Lingered bool
	// HeldOpen says the program exited but a descendant kept its stdout
	// open past the grace; reading stopped there.
	HeldOpen bool
}

// RunOutput starts c with its stdout copied into out by this process
// (not by os/exec), so that the end of stdout is seen apart from the
// program's exit, and waits for both:
//
//   - stdout ends and the program exits: the usual case;
//   - stdout ends and the program lives on: after linger (zero means
//     DefaultLinger) lingering is called (it may report progress) and the
//     program's tree is ended; Output.Lingered says so;
//   - the program exits and stdout stays open (a daemon inherited it):
//     reading stops after the grace; Output.HeldOpen says so.
//
// Cancelling the command's context ends it as Wait documents. The error
// is Start's: the program did not run.
func (c *Cmd) RunOutput(out io.Writer, linger time.Duration, lingering func()) (Output, error) {
	if linger <= 0 {
		linger = DefaultLinger
	}
	r, w, err := os.Pipe()
	if err != nil {
		return Output{}, err
	}
	defer r.Close()
	c.Cmd.Stdout = w
	err = c.Start()
	w.Close() // the child has its own copy; EOF comes when every copy is closed
	if err != nil {
		return Output{}, err
	}
	var (
		end    Output
		wg     conc.WaitGroup
		eof    = make(chan struct{})
		exited = make(chan struct{})
	)
	wg.Go(func() {
		defer close(eof)
		_, _ = io.Copy(out, r) // a write error leaves the rest unread; Wait still ends the turn
	})
	wg.Go(func() {
		defer close(exited)
		end.Err = c.Wait()
	})
	select {
	case <-exited:
		select {
		case <-eof:
		case <-time.After(c.grace()):
			end.HeldOpen = true
			r.Close() // ends the copy
		}
	case <-eof:
		select {
		case <-exited:
		case <-time.After(linger):
			end.Lingered = true
			if lingering != nil {
				lingering()
			}
			c.Stop(errLingered)
		}
	}
	wg.Wait()
	return end, nil
}
