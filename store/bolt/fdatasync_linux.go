package bolt

import (
	"os"
	"syscall"
)

// fdatasync syncs f's data, and its size only if it changed.
func fdatasync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }
