package rundir

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/flowrun/flow/internal/secret"
)

// CreateAnswerFile creates a new file for a long answer of agent in home
// (created if needed): <agent>-answer.md, or -2, -3, … when a visit of the
// same memory scope left one already, so that no answer replaces another.
func CreateAnswerFile(home, agent string) (*os.File, error) {
	if err := os.MkdirAll(home, 0o755); err != nil {
		return nil, fmt.Errorf("creating the answer file: %w", err)
	}
	base := fileName(agent) + "-answer"
	for n := 1; ; n++ {
		name := base + ".md"
		if n > 1 {
			name = base + "-" + strconv.Itoa(n) + ".md"
		}
		f, err := os.OpenFile(filepath.Join(home, name), os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, fs.ErrExist) || n == 1000 {
			return nil, fmt.Errorf("creating the answer file: %w", err)
		}
	}
}

// fileName keeps an agent's name inside the home, whatever it holds.
func fileName(agent string) string {
	name := strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == 0 {
			return '_'
		}
		return r
	}, agent)
	if name == "" || name == "." || name == ".." {
		return "agent"
	}
	return name
}

// StoreAnswer writes a long answer of agent whole into a new answer file
// in home (CreateAnswerFile), through secrets, and returns its path.
func StoreAnswer(home, agent, answer string, secrets *secret.Redactor) (string, error) {
	f, err := CreateAnswerFile(home, agent)
	if err != nil {
		return "", err
	}
	w := secrets.Writer(f)
	_, err = io.WriteString(w, answer)
	if err == nil {
		err = w.Flush()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return "", fmt.Errorf("writing %s: %w", f.Name(), err)
	}
	return f.Name(), nil
}

// WholeAnswer is an answer as a person reads it before approving (an
// ask's `show:`): the file that holds it whole when there is one and it
// can be read as a regular file, else text, its bounded prefix.
func WholeAnswer(text, file string) string {
	if file == "" {
		return text
	}
	b, err := ReadRegular(file)
	if err != nil {
		return text
	}
	return string(b)
}
