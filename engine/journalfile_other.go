//go:build !linux

package engine

import "errors"

// Elsewhere than on Linux the journal is written with write(2): its pages
// cannot be made ready ahead, so it is never mapped.
func populateWrite([]byte) error { return errors.ErrUnsupported }

func dropPages([]byte) error { return nil }
