package store

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// cachedBackend keeps every key of an etcd store in memory, fed by a
// watch, and answers ranges with it: etcd 3.4 walks the whole rest of a
// key range to answer a limited read, so a 500-item list page of a
// 100 000-service zone cost 32 ms (p50) there against 1.5 ms on the
// embedded store. The cache knows which keys a page holds, and reads
// their values from etcd by their exact range, at the cache's revision,
// which etcd answers without walking further. (A whole prefix, a
// snapshot, is read as etcd reads it: rangePages.) This is kube-apiserver's
// watch cache in small, without the values: they were 40 MB at 100 000
// services, a fifth of a publisher's memory.
//
// A range is answered from the cache when the cache is at a revision the
// range may be read at: any recent one (at < 0); exactly at (at > 0); or,
// for a consistent read of the latest (at == 0), etcd's current revision,
// read from etcd (a quorum read). Else, and until the cache has read the
// store, etcd answers as before.
//
// The cache's revision moves with the events it applies, never with
// etcd's progress reports: etcd 3.4 before 3.4.25 may report a revision
// before it has sent the events up to it (etcd#15220), and a cache that
// believed it would answer with data missing at that revision (as
// TestListCacheIsEtcd found at once). So a consistent read right after a
// write elsewhere in etcd (another prefix) goes to etcd.
type cachedBackend struct {
	indexedBackend
	log *slog.Logger

	mu    sync.RWMutex
	ready bool
	at    int64       // the cache holds every key as of this revision
	keys  *sortedKeys // in blocks: a new key moves one block, not all
	// moved is closed, and replaced, whenever at moves.
	moved chan struct{}
	// reread ends the current follow, so that the keys are read again
	// (rereadKeys).
	reread context.CancelFunc
	// seed carries the keys of a read of the whole store (rangePages),
	// for follow to start from.
	seed chan keysRead
	// wrote is the revision of the last write made through this
	// backend: reads of any recent version wait for the copy to have it,
	// so that a replica reads its own writes (as it did from etcd).
	wrote atomic.Int64

	stop context.CancelFunc
	done chan struct{}
}

// indexedBackend is a backend that reads a prefix's keys alone, and the
// keys of an exact range: etcd.
type indexedBackend interface {
	backend
	// keyNames returns the live keys with prefix as of revision at (as
	// rangeKeys reads it), and the revision read.
	keyNames(ctx context.Context, prefix string, at int64) ([]string, int64, error)
	// rangeExact returns the live keys from keys[0] to the last of keys,
	// both included, as of revision at (> 0); a key that is one of keys,
	// at its place, is that string.
	rangeExact(ctx context.Context, keys []string, at int64) ([]kv, error)
	// readAll is rangePages, and returns the keys it read.
	readAll(ctx context.Context, prefix string, at int64, page func([]kv)) ([]string, int64, error)
}

func newCachedBackend(b indexedBackend, log *slog.Logger) *cachedBackend {
	ctx, cancel := context.WithCancel(context.Background())
	c := &cachedBackend{indexedBackend: b, log: log, moved: make(chan struct{}), seed: make(chan keysRead, 1), stop: cancel, done: make(chan struct{})}
	go c.run(ctx)
	return c
}

func (c *cachedBackend) close() error {
	c.stop()
	<-c.done
	return c.indexedBackend.close()
}

// run fills the cache and follows the store, reading it whole again when
// the watch fails (compacted while behind, etcd gone).
func (c *cachedBackend) run(ctx context.Context) {
	defer close(c.done)
	first := true
	for ctx.Err() == nil {
		fctx, cancel := context.WithCancel(ctx)
		c.mu.Lock()
		c.reread = cancel
		c.mu.Unlock()
		err := c.follow(fctx, first)
		first = false
		reread := fctx.Err() != nil // asked before cancel, which sets it
		cancel()
		if reread && ctx.Err() == nil {
			continue // rereadKeys: read the keys again at once
		}
		if err != nil && ctx.Err() == nil {
			c.log.Warn("the store's list cache stopped following etcd; lists are read from etcd until it has read the store again", "err", err)
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
			}
		}
	}
}

// keysRead is the keys of the store as of revision at.
type keysRead struct {
	keys []string
	at   int64
}

// rangePages reads as etcd does, and gives the keys of a read of the
// whole store to the cache. A publisher's start reads every key anyway:
// the cache reading the same 100 000 at the same moment took 4 % of the
// start's time on etcd, and kept a second copy of each key (5 MB).
func (c *cachedBackend) rangePages(ctx context.Context, prefix string, at int64, page func([]kv)) (int64, error) {
	keys, read, err := c.indexedBackend.readAll(ctx, prefix, at, page)
	if err == nil && prefix == "" && at == 0 {
		// The newest read replaces one still waiting: a cache that
		// starts from a seed must not start behind a later read.
		s := keysRead{keys, read}
		for range 3 { // the channel holds one; a racing read may refill it
			select {
			case c.seed <- s:
				return read, nil
			default:
			}
			select {
			case old := <-c.seed:
				if old.at > s.at {
					s = old
				}
			default:
			}
		}
	}
	return read, err
}

// startKeys returns the keys for follow to start from, and their
// revision: a whole read's (rangePages) when one has come, or comes
// within seedWait on the first follow (a store opened by a publisher
// reads itself whole at once); else the cache's own read. Keys read at
// a revision, then the events after it, are the store's keys at every
// revision after it; a read older than the revision the cache held is
// not taken, so that a re-read never moves the cache back.
func (c *cachedBackend) startKeys(ctx context.Context, first bool) ([]string, int64, error) {
	c.mu.RLock()
	had := c.at // a seed older than what the cache held would move it back
	c.mu.RUnlock()
	select {
	case s := <-c.seed:
		if s.at >= had {
			return s.keys, s.at, nil
		}
	default:
	}
	if first {
		timer := time.NewTimer(seedWait)
		defer timer.Stop()
		select {
		case s := <-c.seed:
			return s.keys, s.at, nil
		case <-ctx.Done():
			return nil, 0, ctx.Err()
		case <-timer.C:
		}
	}
	return c.indexedBackend.keyNames(ctx, "", 0)
}

// seedWait is how long a store just opened waits for a whole read's keys
// before the cache reads them itself: lists are answered by etcd until
// then.
const seedWait = 2 * time.Second

func (c *cachedBackend) follow(ctx context.Context, first bool) error {
	c.setReady(false)
	keys, at, err := c.startKeys(ctx, first)
	if err != nil {
		return err
	}
	c.mu.Lock()
	c.keys, c.at, c.ready = newSortedKeys(keys), at, true
	c.signal()
	c.mu.Unlock()
	for b := range c.indexedBackend.watch(ctx, "", at) {
		if b.err != nil {
			return b.err
		}
		c.mu.Lock()
		for _, ch := range b.events {
			if ch.deleted {
				c.keys.remove(ch.kv.key) // if it is there
			} else {
				c.keys.add(ch.kv.key) // if it is not
			}
		}
		// A batch of events ends at the revision of its last event, and
		// every event up to it has come (see above for progress reports).
		if len(b.events) > 0 && b.rev > c.at {
			c.at = b.rev
			c.signal()
		}
		c.mu.Unlock()
	}
	return ctx.Err()
}

// signal wakes the reads waiting for the copy to move; c.mu is held.
func (c *cachedBackend) signal() {
	close(c.moved)
	c.moved = make(chan struct{})
}

func (c *cachedBackend) txn(ctx context.Context, t *txn) (txnResult, error) {
	res, err := c.indexedBackend.txn(ctx, t)
	if err == nil && res.ok {
		for {
			w := c.wrote.Load()
			if res.rev <= w || c.wrote.CompareAndSwap(w, res.rev) {
				break
			}
		}
	}
	return res, err
}

// ownWrites waits, briefly, for the copy to hold this replica's last
// write; false when it does not in time.
func (c *cachedBackend) ownWrites(ctx context.Context) bool {
	want := c.wrote.Load()
	timer := time.NewTimer(ownWritesWait)
	defer timer.Stop()
	for {
		c.mu.RLock()
		ready, ok, moved := c.ready, c.at >= want, c.moved
		c.mu.RUnlock()
		if !ready {
			return false // etcd answers until the cache has read the store
		}
		if ok {
			return true
		}
		select {
		case <-moved:
		case <-timer.C:
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// ownWritesWait bounds the wait of ownWrites: the events of a write come
// back within milliseconds.
const ownWritesWait = 100 * time.Millisecond

func (c *cachedBackend) setReady(ready bool) {
	c.mu.Lock()
	c.ready = ready
	c.mu.Unlock()
}

func (c *cachedBackend) rangeKeys(ctx context.Context, prefix, from string, limit int, at int64) ([]kv, bool, int64, error) {
	want := at
	if at == 0 {
		cur, err := c.indexedBackend.rev(ctx)
		if err != nil {
			return nil, false, 0, err
		}
		want = cur // the cache answers if it is exactly there
	} else if at < 0 && !c.ownWrites(ctx) {
		return c.indexedBackend.rangeKeys(ctx, prefix, from, limit, at)
	}
	kvs, more, read, ok, err := c.cached(ctx, prefix, from, limit, want)
	if err != nil {
		return nil, false, 0, err
	}
	if ok {
		return kvs, more, read, nil
	}
	return c.indexedBackend.rangeKeys(ctx, prefix, from, limit, at)
}

// cached answers a range with the cache, if it can (ok): its keys from
// the cache, their values read from etcd by their exact range at the
// revision the cache holds them at. When etcd does not answer with
// exactly those keys, the range is etcd's to answer (not ok).
func (c *cachedBackend) cached(ctx context.Context, prefix, from string, limit int, at int64) (out []kv, more bool, read int64, ok bool, err error) {
	c.mu.RLock()
	if !c.ready || at > 0 && c.at != at {
		c.mu.RUnlock()
		return nil, false, 0, false, nil
	}
	var keys []string
	c.keys.from(max(prefix, from), func(k string) bool {
		if !strings.HasPrefix(k, prefix) {
			return false
		}
		if limit > 0 && len(keys) == limit {
			more = true
			return false
		}
		keys = append(keys, k)
		return true
	})
	read = c.at
	c.mu.RUnlock()
	if len(keys) == 0 {
		return nil, more, read, true, nil
	}
	out, err = c.indexedBackend.rangeExact(ctx, keys, read)
	switch {
	case errors.Is(err, errCompacted):
		// The cache is behind a compaction: its prefix has been quiet
		// while others moved etcd on. Its keys are read again, at
		// etcd's revision; meanwhile etcd answers.
		c.rereadKeys()
		return nil, false, 0, false, nil
	case err != nil:
		return nil, false, 0, false, err // etcd would not answer either
	case len(out) != len(keys):
		return nil, false, 0, false, nil
	}
	for i := range out {
		if out[i].key != keys[i] {
			return nil, false, 0, false, nil
		}
	}
	return out, more, read, true, nil
}

// rereadKeys makes the cache read the store's keys again.
func (c *cachedBackend) rereadKeys() {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.reread != nil && c.ready {
		c.ready = false
		c.reread()
	}
}
