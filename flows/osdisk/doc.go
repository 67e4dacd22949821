// Package osdisk is the machine's disk as package flows reads it
// (flows.Disk): the files, directories, working directory and home of
// this process. It is apart from flows so that the loader and compiler,
// which the walker and the Temporal workflow import, import no os.
package osdisk
