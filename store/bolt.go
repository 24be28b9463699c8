package store

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// The embedded backend keeps every version of every key within the
// history window in one bbolt file (DIR/store.db): bbolt commits a
// transaction with a copy-on-write B+tree and an fsync of its pages and
// then of its meta page, so after a crash or power loss the file holds
// every committed transaction and nothing of an uncommitted one. A
// transaction that cannot be written (a full disk) fails whole, and the
// write is not acknowledged.
//
// Buckets:
//   - meta: "rev" the latest revision, "compact" the compacted revision
//     (the oldest that can be read), "base" the serial base.
//   - kv: key NUL revision (8 bytes, big-endian) → flags (1 byte: 1 for a
//     deletion), creation revision (8 bytes), value (for a deletion the
//     last value). Versions of a key sort by revision, keys by name, so a
//     page of a list at a revision is one cursor walk.
//   - log: revision → the keys it changed, NUL-separated: what watches
//     read and compaction cleans.
type boltBackend struct {
	db      *bolt.DB
	path    string
	history int64

	cur     atomic.Int64
	compact atomic.Int64

	mu     sync.Mutex
	notify chan struct{} // closed and replaced on every commit
}

var (
	bucketMeta = []byte("meta")
	bucketKV   = []byte("kv")
	bucketLog  = []byte("log")
)

const flagDeleted = 1

// openBolt opens (or creates) the store in dir.
func openBolt(dir string, history int64, now time.Time) (*boltBackend, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("store %s: %w", dir, err)
	}
	path := filepath.Join(dir, "store.db")
	// bbolt opens whatever is there read-write and, finding it empty,
	// writes its first pages into it: into a device, if a symbolic link
	// leads to one. Refuse what is not a file first, by name.
	if fi, err := os.Stat(path); err == nil && !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("store %s is %s, not the store's file: move it away, or give serve another --store", path, fileKind(fi.Mode()))
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{Timeout: 2 * time.Second, FreelistType: bolt.FreelistMapType})
	if errors.Is(err, berrors.ErrTimeout) {
		return nil, fmt.Errorf("store %s is in use by another process (its file lock is held): stop that serve, or give this one another --store", path)
	}
	if err != nil {
		return nil, fmt.Errorf("opening store %s: %w", path, err)
	}
	b := &boltBackend{db: db, path: path, history: history, notify: make(chan struct{})}
	err = db.Update(func(tx *bolt.Tx) error {
		meta, err := tx.CreateBucketIfNotExists(bucketMeta)
		if err != nil {
			return err
		}
		for _, name := range [][]byte{bucketKV, bucketLog} {
			if _, err := tx.CreateBucketIfNotExists(name); err != nil {
				return err
			}
		}
		if meta.Get([]byte("base")) == nil {
			var v [4]byte
			binary.BigEndian.PutUint32(v[:], uint32(now.Unix()))
			if err := meta.Put([]byte("base"), v[:]); err != nil {
				return err
			}
		}
		b.cur.Store(getU64(meta, "rev"))
		b.compact.Store(getU64(meta, "compact"))
		return nil
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialising store %s: %w", path, err)
	}
	return b, nil
}

// fileKind names what a mode that is not a regular file's is.
func fileKind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeDevice != 0:
		return "a device"
	case m&fs.ModeSocket != 0:
		return "a socket"
	}
	return fmt.Sprintf("not a regular file (mode %v)", m)
}

func getU64(b *bolt.Bucket, name string) int64 {
	v := b.Get([]byte(name))
	if len(v) != 8 {
		return 0
	}
	return int64(binary.BigEndian.Uint64(v))
}

func putU64(b *bolt.Bucket, name string, v int64) error {
	var buf [8]byte
	binary.BigEndian.PutUint64(buf[:], uint64(v))
	return b.Put([]byte(name), buf[:])
}

func versionKey(key string, rev int64) []byte {
	out := make([]byte, 0, len(key)+9)
	out = append(out, key...)
	out = append(out, 0)
	return binary.BigEndian.AppendUint64(out, uint64(rev))
}

func revKey(rev int64) []byte { return binary.BigEndian.AppendUint64(nil, uint64(rev)) }

// splitVersion returns the key and revision of a kv bucket key.
func splitVersion(k []byte) (string, int64, bool) {
	key, rev, ok := splitVersionBytes(k)
	return string(key), rev, ok
}

// splitVersionBytes is splitVersion without a copy of the key.
func splitVersionBytes(k []byte) ([]byte, int64, bool) {
	if len(k) < 9 || k[len(k)-9] != 0 {
		return nil, 0, false
	}
	return k[:len(k)-9], int64(binary.BigEndian.Uint64(k[len(k)-8:])), true
}

type version struct {
	rev       int64
	createRev int64
	deleted   bool
	value     []byte
}

func decodeVersion(rev int64, v []byte) version {
	if len(v) < 9 {
		return version{rev: rev, deleted: true}
	}
	return version{rev: rev, deleted: v[0]&flagDeleted != 0, createRev: int64(binary.BigEndian.Uint64(v[1:9])), value: v[9:]}
}

func encodeVersion(deleted bool, createRev int64, value []byte) []byte {
	out := make([]byte, 9, 9+len(value))
	if deleted {
		out[0] = flagDeleted
	}
	binary.BigEndian.PutUint64(out[1:], uint64(createRev))
	return append(out, value...)
}

func (b *boltBackend) rev(context.Context) (int64, error) { return b.cur.Load(), nil }

func (b *boltBackend) serialBase(context.Context) (uint32, error) {
	var base uint32
	err := b.db.View(func(tx *bolt.Tx) error {
		v := tx.Bucket(bucketMeta).Get([]byte("base"))
		if len(v) == 4 {
			base = binary.BigEndian.Uint32(v)
		}
		return nil
	})
	return base, err
}

func (b *boltBackend) close() error { return b.db.Close() }

// readRev checks that revision at can be read in tx and returns it (the
// latest for 0 or -1).
func readRev(tx *bolt.Tx, at int64) (int64, error) {
	meta := tx.Bucket(bucketMeta)
	cur, compact := getU64(meta, "rev"), getU64(meta, "compact")
	switch {
	case at <= 0:
		return cur, nil
	case at > cur:
		return 0, errFuture
	case at < compact:
		return 0, errCompacted
	}
	return at, nil
}

func (b *boltBackend) rangeKeys(_ context.Context, prefix, from string, limit int, at int64) (kvs []kv, more bool, read int64, err error) {
	p := rangePage{limit: limit}
	if limit > 0 {
		p.kvs = make([]kv, 0, min(limit, 4096))
	}
	err = b.db.View(func(tx *bolt.Tx) error {
		if p.read, err = readRev(tx, at); err != nil {
			return err
		}
		start := prefix
		if from > start {
			start = from
		}
		c := tx.Bucket(bucketKV).Cursor()
		for k, v := c.Seek([]byte(start)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
			key, rev, ok := splitVersionBytes(k)
			if !ok || string(key) < from {
				continue // from is a key, not a version: "k\x00" is the one after k
			}
			if p.group == nil || !bytes.Equal(key, p.group) {
				if !p.flush() {
					return nil
				}
				p.group = key // valid for the transaction, like k
			}
			if rev <= p.read {
				p.best, p.found = decodeVersion(rev, v), true
			}
		}
		p.flush()
		return nil
	})
	return p.kvs, p.more, p.read, err
}

func (b *boltBackend) rangePages(ctx context.Context, prefix string, at int64, page func([]kv)) (int64, error) {
	return pagesOf(ctx, b, prefix, at, page)
}

// rangePage is a page of keys that rangeKeys reads: the newest version
// at or before read of each key, unless it is a deletion, up to limit
// keys (none when 0). A page of 500 keys reads 500 or more versions:
// nothing is allocated per version, only per key kept (its name and
// value).
type rangePage struct {
	limit int
	read  int64
	kvs   []kv
	more  bool // keys are left past the limit
	// group is the key whose versions are being read, and best the newest
	// of them at or before read, if found.
	group []byte
	best  version
	found bool
	// buf holds the values kept, many to an allocation: a snapshot reads
	// every object, and a publisher keeps each value as long as its object
	// (one allocation each left them scattered among the reading's
	// garbage, holding its pages).
	buf []byte
}

// flush ends the versions of group: it keeps the key unless its version
// is a deletion. It reports false, with more set, when the page is full.
func (p *rangePage) flush() bool {
	if p.found && !p.best.deleted {
		if p.limit > 0 && len(p.kvs) == p.limit {
			p.more = true
			return false
		}
		v := p.best.value
		if cap(p.buf)-len(p.buf) < len(v) {
			p.buf = make([]byte, 0, max(64<<10, len(v)))
		}
		start := len(p.buf)
		p.buf = append(p.buf, v...)
		p.kvs = append(p.kvs, kv{key: string(p.group), value: p.buf[start:len(p.buf):len(p.buf)], modRev: p.best.rev, createRev: p.best.createRev})
	}
	p.found = false
	return true
}

// latest returns the newest version of key in tx, if any.
func latest(c *bolt.Cursor, key string) (version, bool) {
	// The version after the newest one possible, then one step back.
	var k, v []byte
	if after, _ := c.Seek(versionKey(key, math.MaxInt64)); after == nil {
		k, v = c.Last()
	} else {
		k, v = c.Prev()
	}
	if k == nil {
		return version{}, false
	}
	group, rev, ok := splitVersion(k)
	if !ok || group != key {
		return version{}, false
	}
	return decodeVersion(rev, v), true
}

// anyLive reports whether a key with prefix exists in tx now.
func anyLive(c *bolt.Cursor, prefix string) bool {
	var group string
	var last version
	seen := false
	for k, v := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, v = c.Next() {
		key, rev, ok := splitVersion(k)
		if !ok {
			continue
		}
		if key != group && seen && !last.deleted {
			return true
		}
		group, last, seen = key, decodeVersion(rev, v), true
	}
	return seen && !last.deleted
}

// newestUnder returns the newest revision of a key with prefix in tx.
func newestUnder(c *bolt.Cursor, prefix string) int64 {
	var newest int64
	for k, _ := c.Seek([]byte(prefix)); k != nil && bytes.HasPrefix(k, []byte(prefix)); k, _ = c.Next() {
		if _, rev, ok := splitVersion(k); ok && rev > newest {
			newest = rev
		}
	}
	return newest
}

func (b *boltBackend) txn(_ context.Context, t *txn) (txnResult, error) {
	var res txnResult
	err := b.db.Update(func(tx *bolt.Tx) error {
		meta, kvb := tx.Bucket(bucketMeta), tx.Bucket(bucketKV)
		cur := getU64(meta, "rev")
		res = txnResult{rev: cur, prev: map[string]kv{}}
		c := kvb.Cursor()
		if !cmpsHold(c, t.cmps) {
			return nil
		}
		rev := cur + 1
		keys, err := writeVersions(kvb, c, t, rev, res.prev)
		if err != nil {
			return err
		}
		if len(keys) == 0 {
			// Nothing to do (deleting what does not exist): no revision.
			res.ok = true
			return nil
		}
		if err := b.logRevision(tx, rev, keys); err != nil {
			return err
		}
		res.ok, res.rev = true, rev
		return nil
	})
	if err != nil {
		return txnResult{}, fmt.Errorf("writing to store %s: %w", b.path, err)
	}
	if res.ok && b.advance(res.rev) {
		b.mu.Lock()
		close(b.notify)
		b.notify = make(chan struct{})
		b.mu.Unlock()
	}
	return res, nil
}

// cmpsHold reports whether every comparison of a transaction holds in the
// store as c reads it.
func cmpsHold(c *bolt.Cursor, cmps []cmp) bool {
	for _, cm := range cmps {
		if !cmpHolds(c, cm) {
			return false
		}
	}
	return true
}

// cmpHolds reports whether comparison cm holds in the store as c reads it.
func cmpHolds(c *bolt.Cursor, cm cmp) bool {
	switch {
	case cm.empty:
		return !anyLive(c, cm.key)
	case cm.notAfter > 0:
		return newestUnder(c, cm.key) <= cm.notAfter
	}
	v, ok := latest(c, cm.key)
	live := ok && !v.deleted
	switch {
	case cm.modRev == -1:
		return live
	case cm.modRev == 0:
		return !live
	case cm.modRev > 0:
		return live && v.rev == cm.modRev
	}
	return true
}

// writeVersions writes, at revision rev, a deletion of each key of t.dels
// that is live and a version of each key of t.puts, notes in prev the
// versions they replace, and returns the keys written.
func writeVersions(kvb *bolt.Bucket, c *bolt.Cursor, t *txn, rev int64, prev map[string]kv) ([]string, error) {
	var keys []string
	for _, key := range t.dels {
		v, ok := latest(c, key)
		if !ok || v.deleted {
			continue
		}
		prev[key] = kv{key: key, value: bytes.Clone(v.value), modRev: v.rev, createRev: v.createRev}
		if err := kvb.Put(versionKey(key, rev), encodeVersion(true, v.createRev, v.value)); err != nil {
			return nil, err
		}
		keys = append(keys, key)
	}
	for _, p := range t.puts {
		createRev := rev
		if v, ok := latest(c, p.key); ok && !v.deleted {
			createRev = v.createRev
			prev[p.key] = kv{key: p.key, value: bytes.Clone(v.value), modRev: v.rev, createRev: v.createRev}
		}
		if err := kvb.Put(versionKey(p.key, rev), encodeVersion(false, createRev, p.value)); err != nil {
			return nil, err
		}
		keys = append(keys, p.key)
	}
	return keys, nil
}

// logRevision makes rev, which wrote keys, the latest revision, and
// compacts the versions the history no longer keeps.
func (b *boltBackend) logRevision(tx *bolt.Tx, rev int64, keys []string) error {
	meta := tx.Bucket(bucketMeta)
	if err := tx.Bucket(bucketLog).Put(revKey(rev), []byte(strings.Join(keys, "\x00"))); err != nil {
		return err
	}
	if err := putU64(meta, "rev", rev); err != nil {
		return err
	}
	if b.history > 0 && rev-b.history > getU64(meta, "compact") {
		return compactTx(tx, rev-b.history)
	}
	return nil
}

// advance moves the latest revision to rev unless a transaction that
// committed after this one's commit moved it further already: two writers
// returning from their commits at once must not leave it at the older.
func (b *boltBackend) advance(rev int64) bool {
	for {
		cur := b.cur.Load()
		if rev <= cur {
			return false
		}
		if b.cur.CompareAndSwap(cur, rev) {
			return true
		}
	}
}

// compactTx forgets every version that no revision from to on needs: for
// each key changed since the last compaction, the versions older than its
// newest at or before to, and that one too when it is a deletion.
func compactTx(tx *bolt.Tx, to int64) error {
	meta, kvb := tx.Bucket(bucketMeta), tx.Bucket(bucketKV)
	touched, err := trimLog(tx.Bucket(bucketLog), getU64(meta, "compact"), to)
	if err != nil {
		return err
	}
	c := kvb.Cursor()
	for key := range touched {
		if err := compactKey(kvb, c, key, to); err != nil {
			return err
		}
	}
	return putU64(meta, "compact", to)
}

// trimLog deletes the entries of the revisions after from up to to from
// the log, and returns the keys they changed.
func trimLog(logb *bolt.Bucket, from, to int64) (map[string]bool, error) {
	lc := logb.Cursor()
	touched := map[string]bool{}
	var logKeys [][]byte
	for k, v := lc.Seek(revKey(from + 1)); k != nil && int64(binary.BigEndian.Uint64(k)) <= to; k, v = lc.Next() {
		for _, key := range strings.Split(string(v), "\x00") {
			touched[key] = true
		}
		logKeys = append(logKeys, bytes.Clone(k))
	}
	for _, k := range logKeys {
		if err := logb.Delete(k); err != nil {
			return nil, err
		}
	}
	return touched, nil
}

// compactKey deletes the versions of key older than its newest at or
// before to, and that one too when it is a deletion.
func compactKey(kvb *bolt.Bucket, c *bolt.Cursor, key string, to int64) error {
	var old [][]byte
	var last []byte
	lastDeleted := false
	for k, v := c.Seek(versionKey(key, 0)); k != nil; k, v = c.Next() {
		group, rev, ok := splitVersion(k)
		if !ok || group != key || rev > to {
			break
		}
		if last != nil {
			old = append(old, last)
		}
		last, lastDeleted = bytes.Clone(k), decodeVersion(rev, v).deleted
	}
	if last != nil && lastDeleted {
		old = append(old, last)
	}
	for _, k := range old {
		if err := kvb.Delete(k); err != nil {
			return err
		}
	}
	return nil
}

// maxWatchRevs bounds the revisions one watch batch reads.
const maxWatchRevs = 1024

func (b *boltBackend) watch(ctx context.Context, prefix string, after int64) <-chan batch {
	out := make(chan batch, 1)
	go func() {
		defer close(out)
		for {
			b.mu.Lock()
			wake := b.notify
			b.mu.Unlock()
			var bt batch
			err := b.db.View(func(tx *bolt.Tx) error {
				var err error
				bt, err = watchBatch(tx, prefix, after)
				return err
			})
			if err != nil {
				select {
				case out <- batch{err: err}:
				case <-ctx.Done():
				}
				return
			}
			if bt.rev > after || len(bt.events) > 0 {
				select {
				case out <- bt:
				case <-ctx.Done():
					return
				}
				after = bt.rev
			}
			if after < b.cur.Load() {
				continue
			}
			select {
			case <-wake:
			case <-ctx.Done():
				return
			}
		}
	}()
	return out
}

// watchBatch reads from tx the changes to keys with prefix in the
// revisions after after, up to maxWatchRevs of them.
func watchBatch(tx *bolt.Tx, prefix string, after int64) (batch, error) {
	meta := tx.Bucket(bucketMeta)
	cur, compact := getU64(meta, "rev"), getU64(meta, "compact")
	if after < compact {
		return batch{}, errCompacted
	}
	upTo := min(cur, after+maxWatchRevs)
	bt := batch{rev: upTo}
	lc, kc := tx.Bucket(bucketLog).Cursor(), tx.Bucket(bucketKV)
	for k, v := lc.Seek(revKey(after + 1)); k != nil; k, v = lc.Next() {
		rev := int64(binary.BigEndian.Uint64(k))
		if rev > upTo {
			break
		}
		for _, key := range strings.Split(string(v), "\x00") {
			if !strings.HasPrefix(key, prefix) {
				continue
			}
			raw := kc.Get(versionKey(key, rev))
			if raw == nil {
				continue
			}
			ver := decodeVersion(rev, raw)
			bt.events = append(bt.events, change{
				kv:      kv{key: key, value: bytes.Clone(ver.value), modRev: rev, createRev: ver.createRev},
				deleted: ver.deleted, created: !ver.deleted && ver.createRev == rev,
			})
		}
	}
	return bt, nil
}

func (b *boltBackend) requestProgress(context.Context) {}

func (b *boltBackend) compactTo(_ context.Context, rev int64) error {
	err := b.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket(bucketMeta)
		if rev > getU64(meta, "rev") || rev <= getU64(meta, "compact") {
			return nil
		}
		return compactTx(tx, rev)
	})
	if err != nil {
		return fmt.Errorf("compacting store %s: %w", b.path, err)
	}
	return nil
}
