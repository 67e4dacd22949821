package sweep

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
)

// ReadTasks reads a JSON Lines file of tasks: one input a line (blank
// lines are skipped). See TaskOf for how a line names its task.
func ReadTasks(path string, keepID bool) ([]Task, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading tasks: %w", err)
	}
	var values []any
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 16<<20)
	for line := 1; sc.Scan(); line++ {
		text := bytes.TrimSpace(sc.Bytes())
		if len(text) == 0 {
			continue
		}
		var v any
		if err := json.Unmarshal(text, &v); err != nil {
			return nil, fmt.Errorf("%s:%d: a task is one JSON value a line: %v", path, line, err)
		}
		values = append(values, v)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", path, err)
	}
	if len(values) == 0 {
		return nil, fmt.Errorf("%s holds no task: write one JSON input a line", path)
	}
	tasks, err := TasksOf(values, keepID)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return tasks, nil
}

// TasksOf names a list of task values (see TaskOf) and checks that their
// ids are unique.
func TasksOf(values []any, keepID bool) ([]Task, error) {
	tasks := make([]Task, len(values))
	seen := map[string]int{}
	for i, v := range values {
		tasks[i] = TaskOf(v, i+1, keepID)
		if prev, dup := seen[tasks[i].ID]; dup {
			return nil, fmt.Errorf("tasks %d and %d both have id %q; task ids pair cells across assignments, so they must be unique", prev, i+1, tasks[i].ID)
		}
		seen[tasks[i].ID] = i + 1
	}
	return tasks, nil
}

// TaskOf reads one task. An object {"id": …, "input": …} and nothing else
// is a named input; any other object with an "id" is named by it, and the
// id is left out of the input unless the flow's input declares an id field
// (keepID); anything else is an input named by its place, "t<n>".
func TaskOf(v any, n int, keepID bool) Task {
	t := Task{ID: "t" + strconv.Itoa(n), Input: v}
	m, ok := v.(map[string]any)
	if !ok {
		return t
	}
	id, hasID := m["id"]
	if !hasID {
		return t
	}
	t.ID = valueText(id)
	if in, ok := m["input"]; ok && len(m) == 2 {
		t.Input = in
		return t
	}
	if !keepID {
		rest := make(map[string]any, len(m)-1)
		for k, x := range m {
			if k != "id" {
				rest[k] = x
			}
		}
		t.Input = rest
	}
	return t
}
