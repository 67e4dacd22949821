package engine

import (
	"errors"
	"syscall"
	"unsafe"
)

// fallocate reserves size bytes of the file from its start.
func fallocate(fd int, size int64) error { return syscall.Fallocate(fd, 0, 0, size) }

// madvPopulateWrite is MADV_POPULATE_WRITE (Linux 5.14): fault pages in
// writable, as a write would, without writing.
const madvPopulateWrite = 23

// populateWrite makes the pages of b ready to be written.
func populateWrite(b []byte) error {
	_, _, errno := syscall.Syscall(syscall.SYS_MADVISE, uintptr(unsafe.Pointer(&b[0])), uintptr(len(b)), madvPopulateWrite)
	if errno != 0 {
		return errno
	}
	return nil
}

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE: start writing back, do not
// wait.
const syncFileRangeWrite = 2

// startWriteback starts writing the file's dirty pages to the disk.
func startWriteback(fd int) error {
	err := syscall.SyncFileRange(fd, 0, 0, syncFileRangeWrite)
	if errors.Is(err, syscall.ENOSYS) || errors.Is(err, syscall.EINVAL) {
		return nil
	}
	return err
}
