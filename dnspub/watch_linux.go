//go:build linux

package dnspub

import (
	"bytes"
	"encoding/binary"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/sys/unix"
)

// inotifyTracker follows the config file with inotify(7): a watch on the
// file itself (its inode, whatever path writes it) says when it is written
// and when a writer closes it; watches on the directory of the path and of
// the file it resolves to say when it is replaced, by rename or by a
// symlink swap (Kubernetes ConfigMaps swap a `..data` symlink).
type inotifyTracker struct {
	path string
	log  *slog.Logger
	f    *os.File
	wg   sync.WaitGroup

	mu     sync.Mutex
	st     fileState
	fileWD int32            // watch on the file's inode; -1 without one
	dirWDs map[string]int32 // watched directories
	names  map[string]bool  // the file's names in them
}

const (
	fileMask = unix.IN_MODIFY | unix.IN_CLOSE_WRITE | unix.IN_DELETE_SELF | unix.IN_MOVE_SELF
	dirMask  = unix.IN_CREATE | unix.IN_MOVED_TO | unix.IN_MOVED_FROM | unix.IN_DELETE | unix.IN_ONLYDIR
)

// newFileTracker returns an inotify tracker of path, or a pollTracker
// when inotify cannot be used (then every change waits for Settle).
func newFileTracker(path string, log *slog.Logger) fileTracker {
	fd, err := unix.InotifyInit1(unix.IN_CLOEXEC | unix.IN_NONBLOCK)
	if err != nil {
		log.Warn("inotify unavailable: the config watcher cannot see when a writer finishes, so every change waits for the file to be quiet a while", "err", err)
		return pollTracker{}
	}
	t := &inotifyTracker{path: path, log: log, f: os.NewFile(uintptr(fd), "inotify"), fileWD: -1, dirWDs: map[string]int32{}}
	t.mu.Lock()
	_, ok := t.rewatchLocked()
	t.mu.Unlock()
	if !ok {
		t.f.Close()
		log.Warn("cannot watch the config file's directory with inotify: every change waits for the file to be quiet a while", "config", path)
		return pollTracker{}
	}
	t.wg.Add(1)
	go t.read()
	return t
}

func (t *inotifyTracker) state() fileState {
	t.mu.Lock()
	defer t.mu.Unlock()
	st := t.st
	st.exact = t.fileWD >= 0
	return st
}

func stampOf(path string) fileStamp {
	var st unix.Stat_t
	if unix.Stat(path, &st) != nil {
		return fileStamp{}
	}
	return fileStamp{size: st.Size, mtime: time.Unix(st.Mtim.Unix()), ctime: time.Unix(st.Ctim.Unix()), ino: st.Ino, ok: true}
}

func (t *inotifyTracker) settle(seq uint64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.st.seq == seq {
		t.st.kind = changeNone
	}
}

func (t *inotifyTracker) recheck() {
	t.mu.Lock()
	defer t.mu.Unlock()
	if replaced, _ := t.rewatchLocked(); replaced {
		t.changedLocked(changeUnknown)
	}
}

func (t *inotifyTracker) close() {
	t.f.Close() // ends the blocked Read
	t.wg.Wait()
}

// rewatchLocked watches the directories and the file the path resolves to
// now, and reports whether that file is another one than before (a new
// inode): then the content was replaced, and a writer of the old file no
// longer matters. ok reports whether the path's own directory is watched.
func (t *inotifyTracker) rewatchLocked() (replaced, ok bool) {
	// Control, not Fd: it holds the descriptor open while the watches
	// change (close may run at any time) and leaves it non-blocking, so
	// closing it still ends the reader's Read.
	rc, err := t.f.SyscallConn()
	if err != nil {
		return false, false
	}
	if rc.Control(func(fd uintptr) { replaced, ok = t.rewatchFD(int(fd)) }) != nil {
		return false, false
	}
	return replaced, ok
}

func (t *inotifyTracker) rewatchFD(fd int) (replaced, ok bool) {
	dirs := map[string]bool{filepath.Dir(t.path): true}
	t.names = map[string]bool{filepath.Base(t.path): true}
	resolved, err := filepath.EvalSymlinks(t.path)
	if err == nil {
		dirs[filepath.Dir(resolved)] = true
		t.names[filepath.Base(resolved)] = true
	}
	for d, wd := range t.dirWDs {
		if !dirs[d] {
			unix.InotifyRmWatch(fd, uint32(wd))
			delete(t.dirWDs, d)
		}
	}
	for d := range dirs {
		if _, ok := t.dirWDs[d]; ok {
			continue
		}
		if wd, err := unix.InotifyAddWatch(fd, d, dirMask); err == nil {
			t.dirWDs[d] = int32(wd)
		}
	}
	wd := int32(-1)
	if err == nil {
		if w, err := unix.InotifyAddWatch(fd, resolved, fileMask); err == nil {
			wd = int32(w)
		}
	}
	if wd != t.fileWD {
		if t.fileWD >= 0 {
			unix.InotifyRmWatch(fd, uint32(t.fileWD))
		}
		t.fileWD = wd
		replaced = true
	}
	_, ok = t.dirWDs[filepath.Dir(t.path)]
	return replaced, ok
}

func (t *inotifyTracker) touchLocked() {
	t.st.seq++
	t.st.last = time.Now()
}

func (t *inotifyTracker) read() {
	defer t.wg.Done()
	buf := make([]byte, 64<<10)
	for {
		n, err := t.f.Read(buf)
		if err != nil {
			return // closed
		}
		t.mu.Lock()
		for off := 0; off+unix.SizeofInotifyEvent <= n; {
			wd := int32(binary.NativeEndian.Uint32(buf[off:]))
			mask := binary.NativeEndian.Uint32(buf[off+4:])
			nameLen := int(binary.NativeEndian.Uint32(buf[off+12:]))
			off += unix.SizeofInotifyEvent
			name := string(bytes.TrimRight(buf[off:min(off+nameLen, n)], "\x00"))
			off += nameLen
			t.handleLocked(wd, mask, name)
		}
		t.mu.Unlock()
	}
}

func (t *inotifyTracker) handleLocked(wd int32, mask uint32, name string) {
	switch {
	case mask&unix.IN_Q_OVERFLOW != 0:
		// Events were lost: how the file changed is unknown.
		t.rewatchLocked()
		t.changedLocked(changeUnknown)
	case wd == t.fileWD && mask&unix.IN_MODIFY != 0:
		// A file created in place stays of unknown kind: its writer may
		// have written and closed it before it was watched.
		kind := changeInPlace
		if t.st.kind == changeUnknown {
			kind = changeUnknown
		}
		t.changedLocked(kind)
		t.st.writing = true
	case wd == t.fileWD && mask&unix.IN_CLOSE_WRITE != 0:
		if t.st.writing {
			t.st.writes++ // an open that wrote the file is done
		}
		t.st.writing = false
		t.touchLocked()
	case wd == t.fileWD:
		// Deleted or moved away.
		if replaced, _ := t.rewatchLocked(); replaced {
			t.changedLocked(changeReplaced)
		}
	case mask&unix.IN_CREATE != 0 && t.names[name]:
		// A file created in place at the path: its writer may have
		// written, or even closed it, before it was watched.
		t.rewatchLocked()
		t.changedLocked(changeUnknown)
	case mask&unix.IN_MOVED_TO != 0 && t.names[name]:
		t.rewatchLocked()
		t.changedLocked(changeReplaced)
	default:
		// Something else in a watched directory (a symlink swapped, the
		// file deleted): the path may now name another file. Events come
		// in batches, so it may be the final file of a rename still to be
		// reported; that one is complete.
		if replaced, _ := t.rewatchLocked(); replaced {
			t.changedLocked(changeReplaced)
		}
	}
}

// changedLocked records a change of the content: a writer of what was
// there before no longer matters.
func (t *inotifyTracker) changedLocked(kind changeKind) {
	t.st.kind = kind
	t.st.writing = false
	t.touchLocked()
}
