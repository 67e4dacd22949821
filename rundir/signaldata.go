package rundir

import "encoding/json"

// EventData is an event's data as a delivery keeps it: one JSON value,
// compact with sorted keys, so that the same data delivered twice
// compares equal however it was spaced (also on Temporal, where the run's
// workflow keeps it: docs/waits.md).
func EventData(data []byte) (json.RawMessage, error) { return canonicalJSON(data) }
