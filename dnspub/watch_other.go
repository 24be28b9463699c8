//go:build !linux

package dnspub

import (
	"log/slog"
	"os"
)

// newFileTracker: without inotify, how a file changed cannot be seen.
func newFileTracker(string, *slog.Logger) fileTracker { return pollTracker{} }

func stampOf(path string) fileStamp {
	fi, err := os.Stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{size: fi.Size(), mtime: fi.ModTime(), ok: true}
}
