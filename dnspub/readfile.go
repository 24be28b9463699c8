package dnspub

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"syscall"
)

// readOwnFile reads a file serve wrote itself (the serial state, the
// answers kept), refusing anything else found at its path before reading
// it: a named pipe would block the open until a writer comes, before the
// server listens and with SIGTERM waiting on it; a device such as
// /dev/zero never ends; a directory, or a regular file larger than max,
// is not one serve writes. The read is bounded by the file's size as the
// open file reports it, never by what the bytes say of themselves.
//
// A missing file is an error satisfying errors.Is(err, fs.ErrNotExist);
// every other error says what was found, without the path (the callers
// name the file and what it is for).
func readOwnFile(path string, max int64) ([]byte, error) {
	// Stat first (through symbolic links, which an operator may use), so
	// that a device is never opened: opening one can do things.
	fi, err := os.Stat(path)
	if err != nil {
		return nil, err
	}
	if err := ownFile(fi, max); err != nil {
		return nil, err
	}
	// O_NONBLOCK: should a named pipe replace the file between the Stat
	// and the open, the open returns at once instead of waiting for a
	// writer, and the Stat of the open file below refuses it. It changes
	// nothing for a regular file.
	f, err := os.OpenFile(path, os.O_RDONLY|syscall.O_NONBLOCK, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := ownFile(fi, max); err != nil {
		return nil, err
	}
	b := make([]byte, fi.Size())
	if _, err := io.ReadFull(f, b); err != nil {
		// Shorter than its size: cut while being read.
		return nil, fmt.Errorf("it changed while being read: %v", err)
	}
	return b, nil
}

// ownFile says why fi is not a file serve could have written, of at most
// max bytes, or nil when it can be.
func ownFile(fi fs.FileInfo, max int64) error {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		if fi.Size() > max {
			return fmt.Errorf("it is %d bytes, larger than the %d bytes serve writes there", fi.Size(), max)
		}
		return nil
	case m.IsDir():
		return errors.New("it is a directory, not a file")
	case m&fs.ModeNamedPipe != 0:
		return errors.New("it is a named pipe (FIFO), not a file")
	case m&fs.ModeDevice != 0:
		return errors.New("it is a device, not a file")
	case m&fs.ModeSocket != 0:
		return errors.New("it is a socket, not a file")
	}
	return fmt.Errorf("it is not a regular file (mode %v)", m)
}
