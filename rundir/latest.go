package rundir

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// Latest is the newest run under runsDir that match accepts, or nil: what
// List's first match would be, without reading every run. Run ids begin
// with their start time to the second (NewRunID), so the runs are read
// newest id first, and only until a match and the runs started in the
// same second as it (which List orders by their start to the instant)
// are read: flow run --reuse with hundreds of earlier runs reads one or
// two journals, not all (docs/performance.md).
func Latest(runsDir string, match func(*RunInfo) bool) (*RunInfo, error) {
	entries, err := os.ReadDir(runsDir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("listing runs: %w", err)
	}
	var names []string
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		if idSecond(e.Name()) == "" { // not an id of NewRunID's: its name says nothing of its start
			return latestOfAll(runsDir, match)
		}
		names = append(names, e.Name())
	}
	slices.Sort(names)
	slices.Reverse(names)
	var best *RunInfo
	second := ""
	for _, name := range names {
		if best != nil && !strings.HasPrefix(name, second) {
			break
		}
		dir := filepath.Join(runsDir, name)
		info, err := inspectRun(dir)
		if ce := (*CorruptError)(nil); errors.As(err, &ce) {
			info, err = corrupt(dir, ce), nil
		}
		if err != nil || !match(info) {
			continue
		}
		if best == nil {
			best, second = info, idSecond(name)
			continue
		}
		if info.Started.After(best.Started) || info.Started.Equal(best.Started) && info.ID > best.ID {
			best = info
		}
	}
	return best, nil
}

// inspectRun is Inspect; a test counts what Latest reads.
var inspectRun = Inspect

// idSecond is the start second an id of NewRunID's begins with
// ("20260102-150405-"), or "".
func idSecond(id string) string {
	const layout = "20060102-150405-"
	if len(id) <= len(layout) || id[8] != '-' || id[15] != '-' {
		return ""
	}
	for i, c := range id[:15] {
		if i != 8 && (c < '0' || c > '9') {
			return ""
		}
	}
	return id[:16]
}

// latestOfAll is Latest by reading every run (List).
func latestOfAll(runsDir string, match func(*RunInfo) bool) (*RunInfo, error) {
	runs, err := List(runsDir)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if match(r) {
			return r, nil
		}
	}
	return nil, nil
}
