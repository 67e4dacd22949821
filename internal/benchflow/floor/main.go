// Command floor is the baseline that internal/benchflow measures flow
// against: it spawns the same processes a benchmark flow spawns, with plain
// os/exec and the same concurrency, and does nothing else — no plan, no
// journal, no run directory. Being a Go program too, it pays the same
// process start-up as the flow binary, so the difference between the two is
// flow's own cost.
//
//	floor -n 1000 -k 8 true    # 1,000 processes of `true`, 8 at a time
//	floor -n 100 true          # 100 in a row (-k 1, a chain)
//	floor -n 0                 # start and exit: the cost of a Go process
//	floor -capture -n 100 true # read each one's output through a pipe, as flow does
//
// It exits 1 if any process fails to start or exits non-zero.
package main

import (
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sync"
)

func main() {
	n := flag.Int("n", 1, "how many processes to spawn")
	k := flag.Int("k", 1, "how many at a time")
	capture := flag.Bool("capture", false, "read each process's stdout and stderr through a pipe")
	flag.Parse()
	argv := flag.Args()
	if *n > 0 && len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "usage: floor [-n N] [-k K] COMMAND [ARG...]")
		os.Exit(2)
	}
	if err := spawn(*n, max(*k, 1), *capture, argv); err != nil {
		fmt.Fprintln(os.Stderr, "floor:", err)
		os.Exit(1)
	}
}

// spawn runs argv n times, at most k at a time, and returns the errors.
// Every process is waited on before it returns.
func spawn(n, k int, capture bool, argv []string) error {
	if k == 1 {
		for range n {
			if err := once(capture, argv); err != nil {
				return err
			}
		}
		return nil
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
		next = make(chan struct{})
	)
	for range k {
		wg.Go(func() {
			for range next {
				if err := once(capture, argv); err != nil {
					mu.Lock()
					errs = append(errs, err)
					mu.Unlock()
				}
			}
		})
	}
	for range n {
		next <- struct{}{}
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// once runs argv and waits for it; with capture, its output is read from a
// pipe into memory and dropped.
func once(capture bool, argv []string) error {
	cmd := exec.Command(argv[0], argv[1:]...)
	var err error
	if capture {
		_, err = cmd.CombinedOutput()
	} else {
		err = cmd.Run()
	}
	if err != nil {
		return fmt.Errorf("running %s: %w", argv[0], err)
	}
	return nil
}
