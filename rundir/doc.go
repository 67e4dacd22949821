// Package rundir is the run directory as a format (docs/run-directory.md): what a run
// records and how it is read back. It owns every file name under
// .flow/runs/<run-id>/ — the snapshot, the journal, the events, the lock,
// the homes, output.json, usage.json and report.html — so that neither the
// engine nor the command line joins a run-directory path itself.
//
// Writing: Create (a new run) or Reopen (a resume) takes the run's lock and
// returns a Writer, which one engine owns until Close. A Writer is safe for
// concurrent use: visits append facts and events from many goroutines.
// Every fact is one JSON line appended with one write(2) to a file opened
// with O_APPEND, so journal.jsonl is valid JSONL at every moment and a crash
// leaves at most a torn last line. The end of a visit that spent tokens is
// fsynced before the engine goes on (see docs/run-directory.md).
//
// Secrets are redacted on the way in: a Writer has one redactor (package
// secret) of the environment's secrets and those its creator names
// (Create, Reopen), which every fact, event and whole file it writes
// passes; Secrets hands it to the drivers for their files in the homes,
// and RedactHome redacts what an agent CLI wrote into a home itself.
//
// Reading: ReadJournal, Visits, Inspect, List, ReadSnapshot, Transcript and
// WriteReport read a run directory whether its run is alive, ended or was
// killed; they never need the engine.
package rundir
