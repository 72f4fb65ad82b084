//go:build !linux

package bolt

import "os"

// fdatasync syncs f (fsync: this system has no fdatasync for Go).
func fdatasync(f *os.File) error { return f.Sync() }
