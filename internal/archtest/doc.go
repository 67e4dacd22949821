// Package archtest holds no code, only a test that keeps the import direction
// of flow's layers from drifting: schema ← flows ← engine ← steps ← cmd, where
// an arrow reads "is imported by". A layer may import its own layer and the
// layers to its left, never one to its right.
package archtest
