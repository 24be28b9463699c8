package dnspub

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/grpc-config-dns/grpc-config-dns/model"
)

// The file watcher must never publish a half-written config: a prefix of
// a YAML file, cut at a line boundary, is often a valid config with zones,
// services or choices missing, and publishing it would answer REFUSED or
// NXDOMAIN, drop a TXT record or a setting, and make every secondary copy
// the truncated zone. A poll alone cannot tell a writer that paused from
// one that finished, so the watcher asks the operating system how the file
// changed (fileTracker):
//
//   - replaced atomically (renamed over, or a symlink in its path swapped,
//     as editors that save by rename and Kubernetes ConfigMaps do): the new
//     file is complete; it is loaded once it has been quiet for Debounce;
//   - written in place while a writer still holds it open after writing:
//     held, however long the writer pauses;
//   - written in place by several opens, one after the other (a shell
//     loop of `echo … >> file`, a script that truncates then appends):
//     each close looks like the end, and the parts before the last are
//     prefixes, so any change must have been quiet for Settle. Opens
//     belong together until the file has been left alone for Settle, so
//     loading one part does not make the next look like a fresh save;
//   - written in place by one open, closed: loaded after Debounce, unless
//     it removes zones or services (what a prefix looks like): then it
//     must have been quiet for Settle;
//   - how it changed is unknown (no inotify, a file that cannot be
//     watched, an overflowed event queue, a file created in place whose
//     close we may have missed): every change waits for Settle.
//
// SIGHUP (Server.Reload) loads the file as it is, at once.

// changeKind is how the config file's content last changed.
type changeKind uint8

const (
	// changeNone: no change observed since the watcher settled; a content
	// change without an event came from a swap elsewhere in the path.
	changeNone changeKind = iota
	changeReplaced
	changeInPlace
	changeUnknown
)

func (k changeKind) String() string {
	return [...]string{"none", "replaced", "in place", "unknown"}[k]
}

// fileStamp is what stat tells of a file: enough to notice most changes.
type fileStamp struct {
	size         int64
	mtime, ctime time.Time
	ino          uint64
	ok           bool
}

// fileState is what a fileTracker saw happen to the file.
type fileState struct {
	// exact is set when every change of the file bumps seq (inotify).
	exact bool
	// writing: a writer has written and not closed the file.
	writing bool
	kind    changeKind
	// seq counts events, so that settle forgets only what was read.
	seq uint64
	// writes counts the opens that wrote the file in place and closed
	// it, since the tracker began (exact trackers only).
	writes uint64
	// last is when the last event arrived.
	last time.Time
}

// fileTracker follows how the config file changes.
type fileTracker interface {
	state() fileState
	// settle marks the content read when state().seq was seq as loaded.
	settle(seq uint64)
	// recheck watches the file the path names now, when the content
	// changed without an event: how it was written is unknown.
	recheck()
	close()
}

// pollTracker is the tracker where the OS tells nothing: every change is
// of unknown kind.
type pollTracker struct{}

func (pollTracker) state() fileState { return fileState{kind: changeUnknown} }
func (pollTracker) settle(uint64)    {}
func (pollTracker) recheck()         {}
func (pollTracker) close()           {}

// errHeld is returned by load when its hold function kept the config back.
type heldError struct{ reason string }

func (e *heldError) Error() string { return "held: " + e.reason }

// removals describes the zones and services that serving cfg instead of
// old would remove, or "" for none.
func removals(cfg *model.Config, old *snapshot) string {
	if old == nil {
		return ""
	}
	next := map[string]map[string]bool{}
	for _, z := range cfg.Zones {
		names := map[string]bool{}
		for _, svc := range z.Services {
			names[svc.Name] = true
		}
		next[z.Origin] = names
	}
	var zones, services []string
	for origin, ze := range old.zones {
		names, ok := next[origin]
		if !ok {
			zones = append(zones, origin)
			continue
		}
		for _, svc := range ze.cfg.Services {
			if !names[svc.Name] {
				services = append(services, svc.Name)
			}
		}
	}
	if len(zones)+len(services) == 0 {
		return ""
	}
	slices.Sort(zones)
	slices.Sort(services)
	var parts []string
	if len(zones) > 0 {
		parts = append(parts, fmt.Sprintf("%d zones (%s)", len(zones), abbreviate(zones)))
	}
	if len(services) > 0 {
		parts = append(parts, fmt.Sprintf("%d services (%s)", len(services), abbreviate(services)))
	}
	return "it removes " + strings.Join(parts, " and ")
}

func abbreviate(names []string) string {
	if len(names) <= 5 {
		return strings.Join(names, ", ")
	}
	return strings.Join(names[:5], ", ") + ", …"
}

// watch polls the config file and loads it when it has changed and the
// rules above say it is complete.
func (s *Server) watch(tr fileTracker) {
	defer tr.close()
	tick := time.NewTicker(s.opts.WatchInterval)
	defer tick.Stop()
	w := &watchState{}
	for {
		select {
		case <-s.done:
			return
		case <-tick.C:
		}
		s.watchPoll(tr, w, time.Now())
	}
}

// watchState is what the watcher remembers between polls.
type watchState struct {
	// writes is the tracker's count of writing opens at the last poll,
	// lastWrite the poll that saw it grow, and burst the count when the
	// current run of writes began: the opens since then wrote the file
	// with no pause as long as Settle between them.
	writes, burst uint64
	lastWrite     time.Time
	pending       fileSum
	pendingSince  time.Time
	told          string // what was last logged about pending
	retryAt       time.Time
	retryDelay    time.Duration
	// idle describes the file when it last held what is loaded, so that
	// an unchanged file is not read again every second: a config of
	// 100 000 services is 30 MB.
	idle      bool
	idleHash  fileSum
	idleSeq   uint64
	idleStamp fileStamp
	idleReads int
}

// unchanged reports whether the file is known to still hold what is
// loaded, without reading it: as the kernel says (inotify sees every write
// and replacement) or, without inotify, as its size, times and inode say;
// then it is still read now and then, for file systems with coarse times.
func (w *watchState) unchanged(st fileState, stamp fileStamp, loaded fileSum) bool {
	if !w.idle || loaded != w.idleHash || st.writing {
		return false
	}
	if st.exact && st.seq == w.idleSeq || !st.exact && stamp == w.idleStamp && w.idleReads < 30 {
		w.idleReads++
		return true
	}
	return false
}

// watchPoll is one poll of the config file: read it unless it is known
// unchanged, and load it once it is complete by the rules of the change
// the tracker saw.
func (s *Server) watchPoll(tr fileTracker, w *watchState, now time.Time) {
	tell := func(msg string, args ...any) {
		if key := fmt.Sprint(w.pending, msg); key != w.told {
			w.told = key
			s.log.Info(msg, append([]any{"config", s.opts.ConfigFile}, args...)...)
		}
	}
	st := tr.state()
	if st.writes != w.writes {
		if now.Sub(w.lastWrite) >= s.opts.Settle {
			w.burst = w.writes // quiet for Settle since the last ones
		}
		w.writes, w.lastWrite = st.writes, now
	}
	s.reloadMu.Lock()
	last := s.lastHash
	s.reloadMu.Unlock()
	stamp := stampOf(s.opts.ConfigFile)
	if w.unchanged(st, stamp, last) {
		return
	}
	w.idle = false
	s.watchReads.Add(1)
	h, err := s.hashConfigFile()
	if err != nil {
		// Being replaced, or gone, or too large: keep serving; the next
		// poll sees it again (SIGHUP says why).
		return
	}
	if h == last {
		w.pendingSince = time.Time{}
		if !st.writing {
			tr.settle(st.seq)
			w.idle, w.idleHash, w.idleSeq, w.idleStamp, w.idleReads = true, h, st.seq, stamp, 0
		}
		return
	}
	if h != w.pending || w.pendingSince.IsZero() {
		w.pending, w.pendingSince = h, now
		return
	}
	if st.writing {
		tell("config file changed but a writer still has it open; waiting for it to close the file (or SIGHUP to load it as it is)")
		return
	}
	if now.Before(w.retryAt) {
		return
	}
	quietSince := w.pendingSince
	if st.last.After(quietSince) {
		quietSince = st.last
	}
	quiet := now.Sub(quietSince)
	if quiet < s.opts.Debounce {
		return
	}
	kind := st.kind
	if kind == changeNone {
		// Changed without an event on the file: the path names another
		// file now (a symlink swapped where nothing is watched), written
		// in a way nobody saw. Watch that one, or writes to it go unseen
		// too.
		tr.recheck()
		kind = changeUnknown
	}
	if !st.exact {
		kind = changeUnknown // writes to the file are not all seen
	}
	var hold func(*model.Config, *snapshot) string
	switch kind {
	case changeUnknown:
		if quiet < s.opts.Settle {
			tell("config file changed in a way the watcher cannot see the end of; loading it once it has been unchanged for a while (or on SIGHUP); write it by rename to load it at once", "wait", s.opts.Settle)
			return
		}
	case changeInPlace:
		if opens := st.writes - w.burst; opens > 1 && quiet < s.opts.Settle {
			tell("config file written in place by several opens in a row, as a writer that appends in parts does (it closes the file between them); loading it once it has been unchanged for a while (or on SIGHUP); write it by rename to load it at once", "opens", opens, "wait", s.opts.Settle)
			return
		}
		if quiet < s.opts.Settle {
			hold = removals
		}
	}
	start := time.Now()
	text, err := readConfigFile(s.opts.ConfigFile)
	if err != nil {
		return
	}
	if th := s.sums.sum(text); th != h {
		// Written again since it was looked at: wait for it to be quiet.
		w.pending, w.pendingSince = th, now
		return
	}
	_, err = s.load(text, start, "file changed ("+kind.String()+")", hold)
	var held *heldError
	var se *StateError
	switch {
	case errors.As(err, &held):
		tell("config file written in place holds back a change: "+held.reason+", as a half-written file would; loading it once the file has been unchanged for a while (or on SIGHUP)", "wait", s.opts.Settle)
		return
	case errors.As(err, &se):
		// Not loaded: keep it pending, and how it was written, so that
		// the retry judges it as this attempt did.
		w.retryDelay = min(max(2*w.retryDelay, time.Second), time.Minute)
		w.retryAt = now.Add(w.retryDelay)
		return
	default:
		w.retryDelay = 0
	}
	w.pendingSince = time.Time{}
	tr.settle(st.seq)
}
