package exec

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"

	"github.com/flowrun/flow/engine"
	"github.com/flowrun/flow/steps/transcript"
)

// record is one transcript line: one turn.
type record struct {
	Visit  string `json:"visit"`
	Model  string `json:"model"`
	Prompt string `json:"prompt"`
	// Answer is the answer, or its first engine.AnswerLimit bytes when
	// AnswerFile holds it whole.
	Answer     string `json:"answer"`
	AnswerFile string `json:"answer_file,omitempty"`
	Exit       int    `json:"exit"`
	WallMS     int64  `json:"wall_ms"`
}

// appendTranscript appends the turn to <Home>/<agent>.jsonl in one write
// (O_APPEND), redacted of secrets, so a torn line can only be the last
// one, and returns the path.
func appendTranscript(t *engine.Turn, res *engine.TurnResult, exit int, wallMS int64) (string, error) {
	if t.Home == "" {
		return "", nil
	}
	line, err := json.Marshal(record{Visit: t.Visit, Model: t.Model, Prompt: t.Prompt, Answer: res.Output, AnswerFile: res.File,
		Exit: exit, WallMS: wallMS})
	if err != nil {
		return "", fmt.Errorf("writing transcript: %w", err)
	}
	line = t.Secrets.JSON(line)
	if err := os.MkdirAll(t.Home, 0o755); err != nil {
		return "", fmt.Errorf("writing transcript: %w", err)
	}
	path := filepath.Join(t.Home, transcript.FileName(t.Agent.Name)+".jsonl")
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return "", fmt.Errorf("writing transcript: %w", err)
	}
	_, werr := f.Write(append(line, '\n'))
	cerr := f.Close()
	if werr != nil || cerr != nil {
		return "", fmt.Errorf("writing transcript %s: %w", path, firstErr(werr, cerr))
	}
	return path, nil
}

func firstErr(errs ...error) error {
	for _, err := range errs {
		if err != nil {
			return err
		}
	}
	return nil
}
