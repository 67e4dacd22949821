package engine

import (
	"syscall"
	"unsafe"
)

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault pages in
// writable, as a write would, without writing.
const madvPopulateWrite = 23

// populateWrite makes the pages of b ready to be written: the file system
// claims their space now, and says so if it cannot. An empty b asks
// whether the kernel knows how.
func populateWrite(b []byte) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(unsafe.SliceData(b))), uintptr(len(b)), madvPopulateWrite)
	if errno != 0 {
		return errno
	}
	return nil
}

// dropPages unmaps the pages of b, which stay in the page cache, dirty or
// not, as they were.
func dropPages(b []byte) error { return syscall.Madvise(b, syscall.MADV_DONTNEED) }
