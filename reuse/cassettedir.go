package reuse

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/flowrun/flow/internal/secret"
)

// NotCassetteError is a --record target flow will not replace: it holds
// something that is not a cassette's own (docs/reuse-and-tests.md).
type NotCassetteError struct {
	Dir, Why string
}

func (e *NotCassetteError) Error() string {
	return fmt.Sprintf("%s is not a cassette flow may replace: %s; name a new directory, or a cassette directory (journal.jsonl, input.json, answers/, changes/ and nothing else)", e.Dir, e.Why)
}

// cassetteEntries are what a cassette directory holds, each with the
// suffix of the files under it ("" for a file).
var cassetteEntries = map[string]string{
	cassetteJournal: "",
	cassetteInput:   "",
	cassetteAnswers: ".md",
	cassetteChanges: ".patch",
}

// CheckCassetteDir says whether dir may be written as a cassette: it is
// not there, it is an empty directory, or it is recognisably a cassette
// — its journal is there, and it holds nothing but a cassette's files.
// Anything else (a project, a directory of the user's files, a run
// directory) is a *NotCassetteError: flow never deletes what is not its
// own.
func CheckCassetteDir(dir string) error {
	_, err := cassetteFiles(dir)
	return err
}

// cassetteFiles lists what a cassette at dir holds (files, then the
// directories they are in), for replacing it; an error if dir is not one.
func cassetteFiles(dir string) ([]string, error) {
	st, err := os.Lstat(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	if st.Mode()&fs.ModeSymlink != 0 {
		return nil, &NotCassetteError{dir, "it is a symbolic link"}
	}
	if !st.IsDir() {
		return nil, &NotCassetteError{dir, "it is not a directory"}
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	if len(entries) == 0 {
		return nil, nil
	}
	var files, dirs []string
	journal := false
	for _, e := range entries {
		suffix, ok := cassetteEntries[e.Name()]
		p := filepath.Join(dir, e.Name())
		switch {
		case strings.HasPrefix(e.Name(), cassetteJournal+".tmp") && e.Type().IsRegular():
			files = append(files, p) // a write cut short
		case !ok:
			return nil, &NotCassetteError{dir, fmt.Sprintf("it holds %s, which no cassette holds", e.Name())}
		case suffix == "" && e.Type().IsRegular():
			journal = journal || e.Name() == cassetteJournal
			files = append(files, p)
		case suffix != "" && e.IsDir():
			in, err := os.ReadDir(p)
			if err != nil {
				return nil, err
			}
			for _, f := range in {
				if !f.Type().IsRegular() || !strings.HasSuffix(f.Name(), suffix) {
					return nil, &NotCassetteError{dir, fmt.Sprintf("%s holds %s, which no cassette holds", e.Name(), f.Name())}
				}
				files = append(files, filepath.Join(p, f.Name()))
			}
			dirs = append(dirs, p)
		default:
			return nil, &NotCassetteError{dir, fmt.Sprintf("its %s is not what a cassette's is", e.Name())}
		}
	}
	if !journal {
		return nil, &NotCassetteError{dir, "it has no " + cassetteJournal}
	}
	return append(files, dirs...), nil
}

// clearCassette empties the cassette at dir, file by file: only what
// cassetteFiles recognised is removed, never a whole tree.
func clearCassette(dir string) error {
	old, err := cassetteFiles(dir)
	if err != nil {
		return err
	}
	for _, p := range old {
		if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// cassetteFile is one file of a cassette being written, by its name in
// the cassette.
type cassetteFile struct {
	name string
	data []byte
}

// SecretError is a cassette refused because a file of it would hold
// what has the shape of a secret (secret.Scan): a cassette is meant to be
// committed (docs/reuse-and-tests.md).
type SecretError struct {
	Dir   string
	Found []string // FILE:LINE: KIND, never the secret
}

func (e *SecretError) Error() string {
	return fmt.Sprintf("the cassette %s is not written: it would hold what looks like a secret, at\n  %s\n"+
		"a cassette is meant to be committed: keep the secret out of the agents' answers and the commands' output (pass it in an environment variable whose name says it is one: docs/drivers.md, Secrets), then record again",
		e.Dir, strings.Join(e.Found, "\n  "))
}

// scanCassette refuses files that hold a secret's shape.
func scanCassette(dir string, files []cassetteFile) error {
	var found []string
	for _, f := range files {
		for _, s := range secret.Scan(f.data) {
			found = append(found, fmt.Sprintf("%s:%d: %s", filepath.Join(dir, f.name), s.Line, s.Kind))
		}
	}
	if len(found) > 0 {
		return &SecretError{Dir: dir, Found: found}
	}
	return nil
}
