package rundir

import (
	"bufio"
	"bytes"
	"encoding/json"
	"github.com/flowrun/flow/engine/record"
	"os"
	"path/filepath"
)

// Killed is what the turns of an engine that died mid-turn had reported
// spending, by visit: for each visit the journal has not ended since it
// last started, the sum over its killed attempts of the last token count
// its progress events gave (events.jsonl). An attempt is killed when its
// visit.start event is followed by neither its visit.end nor anything
// else of it before the next run.start (a resume) or the file's end. A
// resume folds the figure into the visit's usage, marked partial
// (docs/resume-and-budgets.md).
func Killed(dir string, facts []*record.Fact) (map[string]int64, error) {
	open := map[string]bool{}
	for _, f := range facts {
		switch f.Type {
		case record.FactStart:
			open[f.Visit] = true
		case record.FactEnd:
			delete(open, f.Visit)
		}
	}
	if len(open) == 0 {
		return nil, nil
	}
	f, err := os.Open(filepath.Join(dir, eventsFile))
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	killed := map[string]int64{}
	live := map[string]int64{} // the running attempts' last counts
	closeAll := func() {
		for v, n := range live {
			killed[v] += n
		}
		clear(live)
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 16<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.Contains(line, []byte(`"visit"`)) && !bytes.Contains(line, []byte(record.EventRunStart)) {
			continue
		}
		var e struct {
			Type   record.EventType `json:"type"`
			Visit  string           `json:"visit"`
			Tokens int64            `json:"tokens"`
		}
		if json.Unmarshal(line, &e) != nil {
			continue // a torn last line
		}
		switch {
		case e.Type == record.EventRunStart:
			closeAll()
		case !open[e.Visit]:
		case e.Type == record.EventVisitStart:
			killed[e.Visit] += live[e.Visit]
			live[e.Visit] = 0
		case e.Type == record.EventVisitEnd:
			delete(live, e.Visit)
			delete(killed, e.Visit) // that end folded its killed attempts in
		case e.Type == record.EventProgress && e.Tokens > 0:
			live[e.Visit] = e.Tokens
		}
	}
	closeAll()
	for v, n := range killed {
		if n <= 0 {
			delete(killed, v)
		}
	}
	return killed, sc.Err()
}
