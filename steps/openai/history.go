package openai

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/flowrun/flow/internal/secret"
)

// history is the conversation of one memory session, kept in the home so a
// resumed run continues it.
type history struct {
	Session  string    `json:"session"`
	Messages []message `json:"messages"`
}

func historyPath(home, agent string) string {
	return filepath.Join(home, agent+".history.json")
}

// loadHistory returns the history of session, or an empty one for "".
func loadHistory(home, agent, session string) (*history, error) {
	if session == "" {
		return &history{}, nil
	}
	b, err := os.ReadFile(historyPath(home, agent))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("continuing session %s: no history in %s", session, historyPath(home, agent))
	}
	if err != nil {
		return nil, fmt.Errorf("continuing session %s: %w", session, err)
	}
	var h history
	if err := json.Unmarshal(b, &h); err != nil {
		return nil, fmt.Errorf("continuing session %s: reading %s: %w", session, historyPath(home, agent), err)
	}
	if h.Session != session {
		return nil, fmt.Errorf("continuing session %s: %s holds session %s", session, historyPath(home, agent), h.Session)
	}
	return &h, nil
}

// save appends one exchange and writes the history, redacted of secrets,
// under a new session id when it had none. It returns the session id.
func (h *history) save(home, agent, prompt, answer string, secrets *secret.Redactor) (string, error) {
	if h.Session == "" {
		h.Session = newSessionID()
	}
	h.Messages = append(h.Messages, message{Role: "user", Content: prompt}, message{Role: "assistant", Content: answer})
	b, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return h.Session, fmt.Errorf("saving the session history: %w", err)
	}
	path := historyPath(home, agent)
	if err := os.WriteFile(path+".tmp", secrets.JSON(b), 0o644); err != nil {
		return h.Session, fmt.Errorf("saving the session history: %w", err)
	}
	if err := os.Rename(path+".tmp", path); err != nil {
		return h.Session, fmt.Errorf("saving the session history: %w", err)
	}
	return h.Session, nil
}
