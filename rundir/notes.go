package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/flowrun/flow/engine/record"
	"os"
	"path/filepath"
	"strings"
)

// Notes are the distinct messages of the note events of the run in dir
// that start with prefix, in the order first written (the mirror of a
// Temporal run notes what holds it up so: flow show prints them).
func Notes(dir, prefix string) ([]string, error) {
	f, err := os.Open(filepath.Join(dir, eventsFile))
	if err != nil {
		if os.IsNotExist(err) {
			return nil, nil
		}
		return nil, err
	}
	defer f.Close()
	var out []string
	seen := map[string]bool{}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if prefix != "" && !bytes.Contains(line, []byte(prefix)) {
			continue // most events are progress: not decoded
		}
		var e struct {
			Type    record.EventType `json:"type"`
			Message string           `json:"message"`
		}
		if json.Unmarshal(line, &e) != nil || e.Type != record.EventNote || !strings.HasPrefix(e.Message, prefix) || seen[e.Message] {
			continue
		}
		seen[e.Message] = true
		out = append(out, e.Message)
	}
	return out, sc.Err()
}
