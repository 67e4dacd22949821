package rundir

import (
	"encoding/json"
	"fmt"
	"path/filepath"
)

// WriteValues writes values.json: the value of each top-level node of the
// run's root flow by id ({ok, output, error, skipped}) and the input, as
// the expressions after the last node would see them. A block's output is
// not in the journal (its children's are), so this is how a finished run's
// node values are read back without running anything: a sweep's score is
// evaluated over them.
func (w *Writer) WriteValues(values map[string]any) error {
	return writeJSONAside(filepath.Join(w.dir, valuesFile), w.secrets, values)
}

// ReadValues reads the values.json of the run in dir, as JSON decodes it
// (numbers as float64).
func ReadValues(dir string) (map[string]any, error) {
	b, err := ReadRegular(filepath.Join(dir, valuesFile))
	if err != nil {
		return nil, fmt.Errorf("reading node values: %w", err)
	}
	var v map[string]any
	if err := json.Unmarshal(b, &v); err != nil {
		return nil, fmt.Errorf("reading %s: %w", filepath.Join(dir, valuesFile), err)
	}
	return v, nil
}
