package store

import (
	"context"
	"errors"
)

// backend is a revisioned key-value store: every committed transaction
// gets the next revision; past revisions can be read until they are
// compacted. The embedded store (bolt.go) and etcd (etcd.go) are the two.
type backend interface {
	// rev returns the latest revision, read consistently (a quorum read
	// on etcd).
	rev(ctx context.Context) (int64, error)
	// rangeKeys returns up to limit (0: all) live keys with prefix, from
	// key from on, in key order, as of revision at: 0 is the latest
	// (consistent), -1 any recent one (a local read on etcd), > 0 exactly
	// that revision (errCompacted, errFuture). more says whether live keys
	// follow; read is the revision the answer is for.
	rangeKeys(ctx context.Context, prefix, from string, limit int, at int64) (kvs []kv, more bool, read int64, err error)
	// rangePages calls page with every live key with prefix as of
	// revision at (as rangeKeys reads it), in key order, some keys at a
	// time, and returns the revision read: how a whole prefix is read (a
	// snapshot, a cache's load), as each backend reads one fastest.
	rangePages(ctx context.Context, prefix string, at int64, page func([]kv)) (read int64, err error)
	// txn applies t atomically if every compare holds; ok is false (and
	// nothing is written) when one does not.
	txn(ctx context.Context, t *txn) (res txnResult, err error)
	// watch sends the changes of keys with prefix after revision after,
	// in order, in batches; progress-only batches say the store reached a
	// revision. The channel closes when ctx ends or after a batch with
	// Err set (errCompacted when after was compacted).
	watch(ctx context.Context, prefix string, after int64) <-chan batch
	// requestProgress asks watches for a progress batch.
	requestProgress(ctx context.Context)
	// serialBase is a number fixed when the store was created, added to
	// revisions to make SOA serials.
	serialBase(ctx context.Context) (uint32, error)
	// compactTo forgets the revisions before rev (none when they are
	// already forgotten).
	compactTo(ctx context.Context, rev int64) error
	close() error
}

// pagesOf reads a prefix for rangePages by pages of rangeKeys: what the
// embedded store does, whose limited reads seek to where they start.
func pagesOf(ctx context.Context, b backend, prefix string, at int64, page func([]kv)) (int64, error) {
	from := ""
	for {
		kvs, more, read, err := b.rangeKeys(ctx, prefix, from, pageKeys, at)
		if err != nil {
			return 0, err
		}
		at = read
		if len(kvs) > 0 {
			page(kvs)
		}
		if !more || len(kvs) == 0 {
			return at, nil
		}
		from = kvs[len(kvs)-1].key + "\x00"
	}
}

// pageKeys is how many keys rangePages hands over at a time.
const pageKeys = 1000

// kv is a key at a revision.
type kv struct {
	key       string
	value     []byte
	modRev    int64
	createRev int64
}

// txn is a transaction: compares, then puts and deletes.
type txn struct {
	cmps []cmp
	puts []kvPut
	dels []string
}

type kvPut struct {
	key   string
	value []byte
}

// cmp is a condition on a key (or on every key with a prefix).
type cmp struct {
	key string
	// empty: no key has the prefix key.
	empty bool
	// notAfter, when > 0: no key with the prefix key was written after
	// this revision.
	notAfter int64
	// modRev: the key's modification revision is this (0: it does not
	// exist); -1 means it exists, at any revision.
	modRev int64
}

type txnResult struct {
	ok  bool
	rev int64 // of the transaction when ok, else the latest
	// prev holds the previous versions of the keys deleted or put, by key
	// (absent when they did not exist).
	prev map[string]kv
}

// batch is a part of a watch.
type batch struct {
	events []change
	// rev: the store has sent every change up to this revision.
	rev int64
	err error
}

// change is one key changing.
type change struct {
	kv kv // for a deletion, value is the last value and modRev the deletion's revision
	// deleted is set for a deletion, created for a put of a key that did
	// not exist.
	deleted, created bool
}

var (
	errCompacted = errors.New("store: revision compacted")
	errFuture    = errors.New("store: revision not reached yet")
)
