//go:build !linux

package engine

import "errors"

// Elsewhere than on Linux the journal is written with write(2): reserving
// space fails, so it is never mapped.
func fallocate(int, int64) error { return errors.ErrUnsupported }

func populateWrite([]byte) error { return errors.ErrUnsupported }

func startWriteback(int) error { return nil }
