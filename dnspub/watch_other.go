//go:build !linux

package dnspub

import "log/slog"

// newFileTracker: without inotify, how a file changed cannot be seen.
func newFileTracker(string, *slog.Logger) fileTracker { return pollTracker{} }
