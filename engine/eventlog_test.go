package engine

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// Events added from many goroutines, through many buffer writes, land in
// events.jsonl whole, once each, and in the order each goroutine added
// them; nothing is added after close.
func TestEventLogKeepsEveryEventInOrder(t *testing.T) {
	path := filepath.Join(t.TempDir(), "events.jsonl")
	l, err := openEventLog(path)
	if err != nil {
		t.Fatal(err)
	}
	const writers, each = 8, 3000
	pad := strings.Repeat("x", 100)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				l.add(fmt.Appendf(nil, "%d %d %s\n", w, i, pad))
				if i%500 == 0 {
					l.flush()
				}
			}
		})
	}
	wg.Wait()
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	l.add([]byte("late\n"))
	l.flush()
	if err := l.close(); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	next := make([]int, writers)
	lines := 0
	for sc := bufio.NewScanner(f); sc.Scan(); lines++ {
		var w, i int
		var rest string
		if _, err := fmt.Sscanf(sc.Text(), "%d %d %s", &w, &i, &rest); err != nil || rest != pad {
			t.Fatalf("line %d is not a whole event: %q", lines+1, sc.Text())
		}
		if i != next[w] {
			t.Fatalf("writer %d: event %d came where %d was due", w, i, next[w])
		}
		next[w]++
	}
	if lines != writers*each {
		t.Fatalf("%d events in the file, want %d", lines, writers*each)
	}
}
