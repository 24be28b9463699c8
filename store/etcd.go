package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"go.etcd.io/etcd/api/v3/mvccpb"
	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
)

// The etcd backend: keys live under PREFIX/, etcd's revision is the
// resourceVersion, a precondition is a transaction comparing mod_revision,
// and a revision older than etcd's compaction is ErrCompacted (410). The
// history window is kept by compacting etcd to latest - History every few
// seconds (every replica does; compacting twice is harmless). Compaction
// is etcd-wide: do not share the etcd with an application that needs a
// longer history.
type etcdBackend struct {
	c       *clientv3.Client
	prefix  string // "/PREFIX/"
	history int64
	timeout time.Duration

	stop    context.CancelFunc
	wg      sync.WaitGroup
	compact atomic.Int64
}

// opTimeout bounds one etcd request: while etcd is down, requests fail
// (503) instead of hanging.
const opTimeout = 5 * time.Second

func openEtcd(ctx context.Context, location string, opts Options) (*etcdBackend, error) {
	hosts, prefix, ok := strings.Cut(location, "/")
	prefix = strings.Trim(prefix, "/")
	if !ok || hosts == "" || prefix == "" {
		return nil, fmt.Errorf("store etcd://%s: write etcd://HOST:PORT[,HOST:PORT…]/PREFIX, with a prefix naming this publisher's keys", location)
	}
	var endpoints []string
	for _, h := range strings.Split(hosts, ",") {
		if h == "" || strings.ContainsAny(h, "@?#") {
			return nil, fmt.Errorf("store etcd://%s: %q is not HOST:PORT (credentials and options are not supported)", location, h)
		}
		endpoints = append(endpoints, h)
	}
	c, err := clientv3.New(clientv3.Config{
		Endpoints:            endpoints,
		DialTimeout:          5 * time.Second,
		DialKeepAliveTime:    2 * time.Second,
		DialKeepAliveTimeout: 2 * time.Second,
		Logger:               zap.NewNop(),
		// Reconnect within a second of etcd's return: a replica that lost
		// etcd catches up as soon as it can.
		DialOptions: []grpc.DialOption{grpc.WithConnectParams(grpc.ConnectParams{
			Backoff:           backoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second},
			MinConnectTimeout: time.Second,
		})},
		Context: context.Background(),
	})
	if err != nil {
		return nil, fmt.Errorf("store etcd://%s: %w", location, err)
	}
	b := &etcdBackend{c: c, prefix: "/" + prefix + "/", history: opts.History, timeout: opTimeout}
	if _, err := b.serialBaseAt(ctx, opts.Now()); err != nil {
		c.Close()
		return nil, fmt.Errorf("store etcd://%s does not answer: %w", location, err)
	}
	cctx, cancel := context.WithCancel(context.Background())
	b.stop = cancel
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		b.compactLoop(cctx)
	}()
	return b, nil
}

func (b *etcdBackend) close() error {
	b.stop()
	b.wg.Wait()
	return b.c.Close()
}

func etcdErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, rpctypes.ErrCompacted):
		return errCompacted
	case errors.Is(err, rpctypes.ErrFutureRev):
		return errFuture
	}
	return fmt.Errorf("etcd: %w", err)
}

// failed is the error of a request made with op, which is ctx bounded by
// b.timeout. The client waits for etcd to be reachable until op ends, so
// op's end (and not ctx's, the caller's) means that etcd did not answer:
// it is down, without a leader, or out of reach. That is the store being
// unavailable (503, which clients retry), not one request being slow.
func (b *etcdBackend) failed(ctx, op context.Context, err error) error {
	if ctx.Err() == nil && op.Err() != nil {
		return fmt.Errorf("etcd did not answer within %v: %w", b.timeout, errUnavailable)
	}
	return etcdErr(err)
}

func (b *etcdBackend) metaKey() string { return b.prefix + "meta/base" }

func (b *etcdBackend) rev(ctx context.Context) (int64, error) {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	r, err := b.c.Get(op, b.metaKey(), clientv3.WithCountOnly())
	if err != nil {
		return 0, b.failed(ctx, op, err)
	}
	return r.Header.Revision, nil
}

func (b *etcdBackend) rangeKeys(ctx context.Context, prefix, from string, limit int, at int64) ([]kv, bool, int64, error) {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	start := prefix
	if from > start {
		start = from
	}
	opts := atRevision(at, clientv3.WithRange(clientv3.GetPrefixRangeEnd(b.prefix+prefix)))
	if limit > 0 {
		opts = append(opts, clientv3.WithLimit(int64(limit)))
	}
	r, err := b.c.Get(op, b.prefix+start, opts...)
	if err != nil {
		return nil, false, 0, b.failed(ctx, op, err)
	}
	read := r.Header.Revision
	if at > 0 {
		read = at
	}
	out := make([]kv, 0, len(r.Kvs))
	for _, k := range r.Kvs {
		out = append(out, kv{key: strings.TrimPrefix(string(k.Key), b.prefix), value: k.Value, modRev: k.ModRevision, createRev: k.CreateRevision})
	}
	return out, r.More, read, nil
}

// rangePages reads the keys first, then their values by exact ranges of
// pageKeys keys, a few at once, all at the revision of the keys' read:
// etcd 3.4 walks the whole rest of a key range to answer a limited read
// (to count it), so that a snapshot of 100 000 services read in limited
// pages of 1 000 took 0.8-1.0 s, and this 0.3 s.
func (b *etcdBackend) rangePages(ctx context.Context, prefix string, at int64, page func([]kv)) (int64, error) {
	_, read, err := b.readAll(ctx, prefix, at, page)
	return read, err
}

// readAll is rangePages, and returns the keys it read too: a read of the
// whole store gives the list cache its keys (cachedBackend.rangePages).
// The kvs' keys are those strings.
func (b *etcdBackend) readAll(ctx context.Context, prefix string, at int64, page func([]kv)) ([]string, int64, error) {
	keys, read, err := b.keyNames(ctx, prefix, at)
	if err != nil {
		return nil, 0, err
	}
	type chunk struct {
		kvs  []kv
		err  error
		done chan struct{}
	}
	chunks := make([]*chunk, (len(keys)+pageKeys-1)/pageKeys)
	for i := range chunks {
		chunks[i] = &chunk{done: make(chan struct{})}
	}
	busy := make(chan struct{}, 4)
	fctx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		for i, c := range chunks {
			select {
			case busy <- struct{}{}:
			case <-fctx.Done():
				c.err = fctx.Err()
				close(c.done)
				continue
			}
			go func() {
				defer func() { <-busy; close(c.done) }()
				c.kvs, c.err = b.rangeExact(fctx, keys[i*pageKeys:min((i+1)*pageKeys, len(keys))], read)
			}()
		}
	}()
	for _, c := range chunks {
		<-c.done
		if c.err != nil {
			return nil, 0, c.err
		}
		if len(c.kvs) > 0 {
			page(c.kvs)
		}
	}
	return keys, read, nil
}

// atRevision adds to opts what reads at revision at as rangeKeys says: 0
// the latest (a quorum read), -1 any recent one (the member's own), > 0
// exactly that one.
func atRevision(at int64, opts ...clientv3.OpOption) []clientv3.OpOption {
	switch {
	case at < 0:
		opts = append(opts, clientv3.WithSerializable())
	case at > 0:
		opts = append(opts, clientv3.WithRev(at))
	}
	return opts
}

// keyNames returns the live keys with prefix as of revision at (as
// rangeKeys reads it), without their values, and the revision read.
func (b *etcdBackend) keyNames(ctx context.Context, prefix string, at int64) ([]string, int64, error) {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	opts := atRevision(at, clientv3.WithRange(clientv3.GetPrefixRangeEnd(b.prefix+prefix)), clientv3.WithKeysOnly())
	r, err := b.c.Get(op, b.prefix+prefix, opts...)
	if err != nil {
		return nil, 0, b.failed(ctx, op, err)
	}
	read := r.Header.Revision
	if at > 0 {
		read = at
	}
	keys := make([]string, len(r.Kvs))
	for i, k := range r.Kvs {
		keys[i] = strings.TrimPrefix(string(k.Key), b.prefix)
	}
	return keys, read, nil
}

// rangeExact returns the live keys from keys[0] to the last of keys,
// both included, as of revision at (> 0): a range etcd reads without
// walking past it. A key that is one of keys, at its place, is that
// string (no copy of it is made: a snapshot's items and the list cache
// share them).
func (b *etcdBackend) rangeExact(ctx context.Context, keys []string, at int64) ([]kv, error) {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	r, err := b.c.Get(op, b.prefix+keys[0], clientv3.WithRange(b.prefix+keys[len(keys)-1]+"\x00"), clientv3.WithRev(at))
	if err != nil {
		return nil, b.failed(ctx, op, err)
	}
	out := make([]kv, 0, len(r.Kvs))
	for i, k := range r.Kvs {
		name := ""
		if p := len(b.prefix); i < len(keys) && len(k.Key) == p+len(keys[i]) &&
			string(k.Key[:p]) == b.prefix && string(k.Key[p:]) == keys[i] {
			name = keys[i]
		} else {
			name = strings.TrimPrefix(string(k.Key), b.prefix)
		}
		out = append(out, kv{key: name, value: k.Value, modRev: k.ModRevision, createRev: k.CreateRevision})
	}
	return out, nil
}

func (b *etcdBackend) txn(ctx context.Context, t *txn) (txnResult, error) {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	var cmps []clientv3.Cmp
	for _, c := range t.cmps {
		k := b.prefix + c.key
		switch {
		case c.empty:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k).WithPrefix(), "=", 0))
		case c.notAfter > 0:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k).WithPrefix(), "<", c.notAfter+1))
		case c.modRev == -1:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), ">", 0))
		case c.modRev == 0:
			cmps = append(cmps, clientv3.Compare(clientv3.CreateRevision(k), "=", 0))
		default:
			cmps = append(cmps, clientv3.Compare(clientv3.ModRevision(k), "=", c.modRev))
		}
	}
	var ops []clientv3.Op
	for _, d := range t.dels {
		ops = append(ops, clientv3.OpDelete(b.prefix+d, clientv3.WithPrevKV()))
	}
	for _, p := range t.puts {
		ops = append(ops, clientv3.OpPut(b.prefix+p.key, string(p.value), clientv3.WithPrevKV()))
	}
	r, err := b.c.Txn(op).If(cmps...).Then(ops...).Commit()
	if err != nil {
		return txnResult{}, b.failed(ctx, op, err)
	}
	res := txnResult{ok: r.Succeeded, rev: r.Header.Revision, prev: map[string]kv{}}
	if !r.Succeeded {
		return res, nil
	}
	add := func(p *mvccpb.KeyValue) {
		if p != nil {
			key := strings.TrimPrefix(string(p.Key), b.prefix)
			res.prev[key] = kv{key: key, value: p.Value, modRev: p.ModRevision, createRev: p.CreateRevision}
		}
	}
	for _, op := range r.Responses {
		if d := op.GetResponseDeleteRange(); d != nil {
			for _, p := range d.PrevKvs {
				add(p)
			}
		}
		if p := op.GetResponsePut(); p != nil {
			add(p.PrevKv)
		}
	}
	return res, nil
}

func (b *etcdBackend) watch(ctx context.Context, prefix string, after int64) <-chan batch {
	out := make(chan batch, 1)
	go func() {
		defer close(out)
		send := func(bt batch) bool {
			select {
			case out <- bt:
				return true
			case <-ctx.Done():
				return false
			}
		}
		wctx := clientv3.WithRequireLeader(ctx)
		wc := b.c.Watch(wctx, b.prefix+prefix, clientv3.WithPrefix(), clientv3.WithRev(after+1), clientv3.WithPrevKV(), clientv3.WithProgressNotify())
		for r := range wc {
			if r.CompactRevision != 0 {
				send(batch{err: errCompacted})
				return
			}
			if err := r.Err(); err != nil {
				if ctx.Err() == nil {
					send(batch{err: etcdErr(err)})
				}
				return
			}
			bt := batch{rev: r.Header.Revision}
			if len(r.Events) > 0 {
				// The header may be ahead of events still to come while the
				// watch catches up: the batch reaches its last event only.
				bt.rev = r.Events[len(r.Events)-1].Kv.ModRevision
			}
			for _, ev := range r.Events {
				c := change{kv: kv{key: strings.TrimPrefix(string(ev.Kv.Key), b.prefix), value: ev.Kv.Value, modRev: ev.Kv.ModRevision, createRev: ev.Kv.CreateRevision}}
				if ev.Type == clientv3.EventTypeDelete {
					c.deleted = true
					if ev.PrevKv != nil {
						c.kv.value, c.kv.createRev = ev.PrevKv.Value, ev.PrevKv.CreateRevision
					}
				} else {
					c.created = ev.IsCreate()
				}
				bt.events = append(bt.events, c)
			}
			if !send(bt) {
				return
			}
		}
		if ctx.Err() == nil {
			send(batch{err: errors.New("etcd: the watch closed")})
		}
	}()
	return out
}

func (b *etcdBackend) requestProgress(ctx context.Context) {
	ctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	b.c.RequestProgress(clientv3.WithRequireLeader(ctx))
}

func (b *etcdBackend) serialBase(ctx context.Context) (uint32, error) {
	return b.serialBaseAt(ctx, time.Time{})
}

// serialBaseAt reads the serial base, creating it from now (when not
// zero) if the store has none.
func (b *etcdBackend) serialBaseAt(ctx context.Context, now time.Time) (uint32, error) {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	k := b.metaKey()
	r, err := b.c.Txn(op).If(clientv3.Compare(clientv3.CreateRevision(k), "=", 0)).
		Then(clientv3.OpPut(k, strconv.FormatUint(uint64(uint32(now.Unix())), 10))).
		Else(clientv3.OpGet(k)).Commit()
	if err != nil {
		return 0, b.failed(ctx, op, err)
	}
	if r.Succeeded {
		if now.IsZero() {
			return 0, errors.New("etcd: the store has no serial base")
		}
		return uint32(now.Unix()), nil
	}
	kvs := r.Responses[0].GetResponseRange().Kvs
	if len(kvs) == 0 {
		return 0, errors.New("etcd: the serial base vanished")
	}
	v, err := strconv.ParseUint(string(kvs[0].Value), 10, 32)
	if err != nil {
		return 0, fmt.Errorf("etcd: the serial base %q at %s is corrupt", kvs[0].Value, k)
	}
	return uint32(v), nil
}

func (b *etcdBackend) compactTo(ctx context.Context, rev int64) error {
	op, cancel := context.WithTimeout(ctx, b.timeout)
	defer cancel()
	_, err := b.c.Compact(op, rev)
	if errors.Is(err, rpctypes.ErrCompacted) {
		return nil
	}
	if err != nil {
		return b.failed(ctx, op, err)
	}
	if rev > b.compact.Load() {
		b.compact.Store(rev)
	}
	return nil
}

// compactLoop keeps the history window: every few seconds, compact to
// latest - history when that moved on.
func (b *etcdBackend) compactLoop(ctx context.Context) {
	t := time.NewTicker(2 * time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		rev, err := b.rev(ctx)
		if err != nil || rev-b.history <= b.compact.Load() {
			continue
		}
		b.compactTo(ctx, rev-b.history)
	}
}
