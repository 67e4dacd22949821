package osdisk

import (
	"io/fs"
	"os"
)

// Disk reads the machine's disk.
type Disk struct{}

// OS is the machine's disk.
var OS Disk

// Open opens a file.
func (Disk) Open(path string) (fs.File, error) { return os.Open(path) }

// ReadDir lists a directory.
func (Disk) ReadDir(dir string) ([]fs.DirEntry, error) { return os.ReadDir(dir) }

// Stat describes a file.
func (Disk) Stat(path string) (fs.FileInfo, error) { return os.Stat(path) }

// Getwd is the process's working directory.
func (Disk) Getwd() (string, error) { return os.Getwd() }

// UserHomeDir is the user's home directory.
func (Disk) UserHomeDir() (string, error) { return os.UserHomeDir() }
