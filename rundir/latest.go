package rundir

// Latest is the newest run under runsDir that match accepts, or nil: List's
// first match, read from the runs directory's index (Summaries), so flow run
// --reuse with hundreds of earlier runs reads no journal whose line in the
// index is current (docs/performance.md). Its RunInfo has no Facts.
func Latest(runsDir string, match func(*RunInfo) bool) (*RunInfo, error) {
	runs, err := Summaries(runsDir)
	if err != nil {
		return nil, err
	}
	for _, r := range runs {
		if match(r) {
			return r, nil
		}
	}
	return nil, nil
}

// inspectRun is Inspect; a test counts what Summaries reads.
var inspectRun = Inspect
