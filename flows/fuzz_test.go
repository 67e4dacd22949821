package flows

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/flowrun/flow/flows/osdisk"
)

// FuzzLoad holds the loader to two promises for any input: it never panics,
// and every diagnostic about the file points inside it (line 1 to the last
// line, column 1 or more; one line past the end, column 1, for an error at
// the end of the file).
func FuzzLoad(f *testing.F) {
	var seeds []string
	for _, pattern := range []string{"../examples/*.yaml", "testdata/ok/*.yaml"} {
		files, err := filepath.Glob(pattern)
		if err != nil {
			f.Fatal(err)
		}
		seeds = append(seeds, files...)
	}
	for _, path := range seeds {
		src, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, src := range goldenFlows(f) {
		f.Add(src)
	}
	// Called flows and agent directories resolve beside the file: an empty
	// directory keeps the fuzzer away from the seeds' neighbours.
	dir := f.TempDir()
	file := filepath.Join(dir, "fuzz.yaml")
	opts := Options{Disk: osdisk.OS, UserAgentDirs: []string{}, WorkDir: dir, Drivers: testDrivers}
	f.Fuzz(func(t *testing.T, src []byte) {
		_, diags := LoadSource(file, src, opts)
		lines := countLines(src)
		for _, d := range diags {
			if d.Pos.File != file {
				continue // another file's problem, e.g. an agent file
			}
			p := d.Pos
			inside := p.Line >= 1 && p.Line <= lines && p.Col >= 1
			atEOF := p.Line == lines+1 && p.Col == 1
			if !inside && !atEOF {
				t.Errorf("diagnostic outside the file (%d lines): %s\nsource: %q", lines, d, src)
			}
		}
	})
}

// countLines counts lines as YAML does: \n, \r\n and a lone \r each end
// one; text after the last break is one more line.
func countLines(src []byte) int {
	n := 0
	for i := 0; i < len(src); i++ {
		switch src[i] {
		case '\n':
			n++
		case '\r':
			if i+1 < len(src) && src[i+1] == '\n' {
				i++
			}
			n++
		}
	}
	if len(src) > 0 && src[len(src)-1] != '\n' && src[len(src)-1] != '\r' {
		n++
	}
	return n
}
