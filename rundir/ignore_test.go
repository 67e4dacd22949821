package rundir

import (
	"os"
	"path/filepath"
	"testing"
)

func TestMkdirIgnored(t *testing.T) {
	root := t.TempDir()
	// A fresh .flow: ignored whole, and nothing below it again.
	if err := MkdirIgnored(filepath.Join(root, "a", ".flow", "sweeps")); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(filepath.Join(root, "a", ".gitignore")); err != nil || string(b) != "*\n" {
		t.Errorf("the topmost directory made: %q %v", b, err)
	}
	if err := MkdirIgnored(filepath.Join(root, "a", ".flow", "sweeps", "s1", "cells")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "a", ".flow", "sweeps", "s1", ".gitignore")); err == nil {
		t.Error("a second .gitignore below an ignored directory")
	}
	// A directory that is there is left as it is.
	if err := os.MkdirAll(filepath.Join(root, "b", ".flow"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := MkdirIgnored(filepath.Join(root, "b", ".flow")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "b", ".flow", ".gitignore")); err == nil {
		t.Error("a .gitignore in a directory that was there")
	}
}
