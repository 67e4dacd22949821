package temporal

import "go.temporal.io/sdk/workflow"

// walkVersion is the version of the run workflow's commands that this
// release writes (docs/temporal.md, Upgrades): a change to what the walk
// asks of Temporal, or in which order, is a new version, reached through
// a workflow.GetVersion patch, so that runs in flight replay on the old
// path; testdata/histories/v<walkVersion> holds this version's recorded
// histories, and every earlier version's stay and replay.
const walkVersion = 1

// The changes of the walk, by version. Each is read once, at the start of
// the workflow (before any command), so that a run keeps the version it
// started with for its whole life.
const (
	// changeVisitIDs (version 1): an activity's id is its visit's path,
	// so that a replay checks the walk's order of visits, not only of
	// activity types. Version 0 used the SDK's sequence numbers.
	changeVisitIDs = "visit-activity-ids"
)

// versions are the changes a run has, as workflow.GetVersion gave them.
type versions struct {
	visitIDs bool
}

func readVersions(ctx workflow.Context) versions {
	return versions{visitIDs: workflow.GetVersion(ctx, changeVisitIDs, workflow.DefaultVersion, 1) >= 1}
}
