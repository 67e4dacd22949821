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
// A Stderr writer that is not a file is copied the same way, by this
// process. Whatever the program wrote to either before it exited is read
// whole, however late the copying runs on a busy machine (Copier); the
// grace bounds only the wait for what descendants write after.
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
	var errR, errW *os.File
	errOut := c.Cmd.Stderr
	if _, isFile := errOut.(*os.File); errOut != nil && !isFile {
		if errR, errW, err = os.Pipe(); err != nil {
			w.Close()
			return Output{}, err
		}
		defer errR.Close()
		c.Cmd.Stderr = errW
	}
	err = c.Start()
	w.Close() // the child has its own copy; EOF comes when every copy is closed
	if errW != nil {
		errW.Close()
	}
	if err != nil {
		return Output{}, err
	}
	stdout := StartCopy(r, out)
	var stderr *Copier
	if errR != nil {
		stderr = StartCopy(errR, errOut)
	}
	var (
		end    Output
		exitAt time.Time
		wg     conc.WaitGroup
		exited = make(chan struct{})
	)
	wg.Go(func() {
		defer close(exited)
		end.Err = c.Wait()
		exitAt = time.Now()
	})
	select {
	case <-exited:
		end.HeldOpen = !stdout.Finish(exitAt.Add(c.grace()))
	case <-stdout.Done():
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
	if stderr != nil && !stderr.Finish(exitAt.Add(c.grace())) {
		end.HeldOpen = true
	}
	return end, nil
}
