package store

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"

	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
	"github.com/grpc-config-dns/grpc-config-dns/serviceconfig/policy"
)

// Loading a fleet one PUT at a time took 212 s for 100 000 services: a
// transaction, a zone read and a validation of the zone for each. A
// batch is validated once against its zone and written in as few
// transactions as the backend takes: one on the embedded store, chunks
// within etcd's request limits (--max-txn-ops, 128 by default, and
// --max-request-bytes, 1.5 MiB) on etcd. Each transaction is
// all-or-nothing; a batch that needs several is reported chunk by chunk.

// BatchResult says what a batch write did.
type BatchResult struct {
	// ResourceVersion is the revision of the last transaction written
	// (empty when nothing had to be).
	ResourceVersion string `json:"resourceVersion,omitempty"`
	// Created, Configured and Unchanged count the items: new, replaced,
	// and already stored as given (not written again).
	Created    int `json:"created"`
	Configured int `json:"configured"`
	Unchanged  int `json:"unchanged"`
	// Transactions is how many transactions the items took.
	Transactions int `json:"transactions"`
}

// etcdTxnOps and etcdTxnSize are etcd's default bounds of a transaction:
// operations in each of its lists, and bytes (less room for the rest of
// the request).
const (
	etcdTxnOps  = 128
	etcdTxnSize = 1 << 20
)

// batchItem is one service of a batch, checked.
type batchItem struct {
	name  string
	obj   *Object
	value []byte // as stored
	spec  []byte
	want  int64 // precondition, 0 for none
	cur   *kv
}

// PutServices creates or replaces services of zone, as PutService does
// each one, in as few transactions as the store allows (see above):
// every item is checked and validated against the zone before anything
// is written, so an invalid item (422) or a bad one (400) stores nothing;
// a precondition that fails stores nothing of its transaction. Items name
// their service in metadata.name; two items of one name are refused.
func (s *Store) PutServices(ctx context.Context, zone string, objs []*Object) (*BatchResult, error) {
	z, err := zoneName(zone)
	if err != nil {
		return nil, err
	}
	items, err := checkBatch(z, objs)
	if err != nil {
		return nil, err
	}
	res := &BatchResult{}
	todo := items
	for range maxRetries {
		zc, zkv, ps, err := s.zoneConfig(ctx, z)
		if err != nil {
			return nil, s.batchError(err, res)
		}
		if err := s.validateBatch(zc, z, todo, items); err != nil {
			return nil, s.batchError(err, res)
		}
		if err := s.readCurrent(ctx, z, todo); err != nil {
			return nil, s.batchError(err, res)
		}
		write, err := changedItems(z, todo, res)
		if err != nil {
			return nil, s.batchError(err, res)
		}
		if todo, err = s.writeBatch(ctx, z, zkv, ps, write, res); err != nil {
			return nil, s.batchError(err, res)
		}
		if len(todo) == 0 {
			return res, nil
		}
	}
	return nil, s.batchError(conflict("services of zone %s, or the zone, kept changing while the batch was written; try again", z), res)
}

// checkBatch checks the items of a batch of services of zone z, each on
// its own, and against the others: each names its service, once.
func checkBatch(z string, objs []*Object) ([]*batchItem, error) {
	items := make([]*batchItem, len(objs))
	seen := make(map[string]int, len(objs))
	for i, obj := range objs {
		if obj.Metadata.Name == "" {
			return nil, badRequest("item %d of the batch has no metadata.name: name each service", i)
		}
		_, name, err := serviceName(z, obj.Metadata.Name)
		if err != nil {
			return nil, itemError(err, i)
		}
		if first, dup := seen[name]; dup {
			return nil, badRequest("items %d and %d of the batch are both service %s of zone %s: give each service once", first, i, name, z)
		}
		seen[name] = i
		it := &batchItem{name: name, obj: obj}
		if it.value, it.spec, it.want, err = serviceValue(z, name, obj); err != nil {
			return nil, itemError(err, i)
		}
		items[i] = it
	}
	return items, nil
}

// changedItems checks the preconditions of todo, whose stored services
// are read, and returns the items that change their service. It counts
// the others in res, as unchanged.
func changedItems(z string, todo []*batchItem, res *BatchResult) ([]*batchItem, error) {
	var write []*batchItem
	for _, it := range todo {
		if e := checkPrecondition(it.cur, it.want, "service "+it.name+" of zone "+z); e != nil {
			return nil, e
		}
		if it.cur != nil && bytes.Equal(it.cur.value, it.value) {
			res.Unchanged++
			continue
		}
		write = append(write, it)
	}
	return write, nil
}

// writeBatch writes the items of write in transactions of as many as the
// store allows (see chunk), each on the condition that zone z, as zkv, its
// policies, as ps, and the services of its items are as read, and counts
// what each did in res. When a condition fails it returns the items not
// yet written, to be checked again against the store as it is now.
func (s *Store) writeBatch(ctx context.Context, z string, zkv *kv, ps *zonePolicies, write []*batchItem, res *BatchResult) ([]*batchItem, error) {
	for len(write) > 0 {
		n := s.chunk(write)
		chunk := write[:n]
		r, err := s.commit(ctx, batchTxn(z, zkv, ps, chunk, s.writtenAt()))
		if err != nil {
			return nil, s.internal(err)
		}
		if !r.ok {
			// The zone, its policies or an item changed meanwhile.
			return write, nil
		}
		for _, it := range chunk {
			if _, existed := r.prev[serviceKey(z, it.name)]; existed {
				res.Configured++
			} else {
				res.Created++
			}
		}
		res.Transactions++
		if r.rev != 0 { // else a dry run
			res.ResourceVersion = FormatRV(r.rev)
		}
		write = write[n:]
	}
	return nil, nil
}

// batchTxn is the transaction that writes the services of chunk to zone
// z, on the condition that the zone, as zkv, its policies, as ps, and
// those services are as read.
func batchTxn(z string, zkv *kv, ps *zonePolicies, chunk []*batchItem, at []byte) *txn {
	t := &txn{cmps: []cmp{{key: zoneKey(z), modRev: zkv.modRev}, {key: policyMarkerKey(z), modRev: ps.marker}}}
	for _, it := range chunk {
		key := serviceKey(z, it.name)
		t.cmps = append(t.cmps, cmp{key: key, modRev: modRev(it.cur)})
		t.puts = append(t.puts, kvPut{key, it.value})
	}
	t.puts = append(t.puts, kvPut{markerKey(z), at})
	return t
}

// serviceValue checks what a PUT of service name of zone z carries and
// returns the value to store, its spec, and its precondition.
func serviceValue(z, name string, obj *Object) (value, spec []byte, want int64, err error) {
	if err := sameName(obj, name, z); err != nil {
		return nil, nil, 0, err
	}
	if want, err = precondition(putPrecondition, obj.Metadata.ResourceVersion); err != nil {
		return nil, nil, 0, err
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(obj.Spec, &top) == nil && top["labels"] != nil {
		return nil, nil, 0, badRequest("the spec of service %s of zone %s has labels: a stored service's labels are its metadata.labels, which label policies select it by; move them there", name, z)
	}
	for k, v := range obj.Metadata.Labels {
		if msg := policy.CheckLabel(k, v); msg != "" {
			return nil, nil, 0, badRequest("metadata.labels of service %s of zone %s: %s", name, z, msg)
		}
	}
	if value, err = body(obj, "service "+name+" of zone "+z, name, z); err != nil {
		return nil, nil, 0, err
	}
	var st stored
	json.Unmarshal(value, &st)
	return value, st.Spec, want, nil
}

// invalidService is the 422 of service name of zone z, naming the
// policies that select it.
func invalidService(zc *model.Zone, z, name string, labels map[string]string, ds []Diagnostic) *Error {
	what := "the spec of service " + name + " of zone " + z
	if zc.PolicySet != nil {
		if sel := zc.PolicySet.Select(zc.ServiceTarget(name, labels, nil)); len(sel) > 0 {
			names := make([]string, len(sel))
			for i, p := range sel {
				names[i] = p.Name
			}
			what += ", with the policies that select it (" + strings.Join(names, ", ") + "),"
		}
	}
	e := errorf(http.StatusUnprocessableEntity, ReasonInvalid, "%s is invalid: nothing was stored; fix the errors listed in diagnostics", what)
	e.Diagnostics = ds
	return e
}

// validateBatch validates todo against zc, in parallel, and returns the
// 422 of the first invalid item (its diagnostics' paths under
// /items/N/spec) with the others' errors, up to 100 diagnostics.
func (s *Store) validateBatch(zc *model.Zone, z string, todo, all []*batchItem) error {
	index := make(map[*batchItem]int, len(all))
	for i, it := range all {
		index[it] = i
	}
	bad := make([][]Diagnostic, len(todo))
	var wg sync.WaitGroup
	workers := min(runtime.GOMAXPROCS(0), max(len(todo)/64, 1))
	for w := range workers {
		wg.Go(func() {
			var v model.ServiceValidator
			for k := w; k < len(todo); k += workers {
				it := todo[k]
				_, ds := v.Validate(zc, it.name, it.obj.Metadata.Labels, it.spec, s.opts.Keys)
				if !ds.HasErrors() {
					continue
				}
				for _, d := range ds {
					bad[k] = append(bad[k], Diagnostic{Severity: d.Severity.String(), Code: d.Code, Message: d.Message,
						Path: fmt.Sprintf("/items/%d/spec%s", index[it], d.Path), Line: d.Line, Column: d.Column, Clients: sc.ClientEffects(&d)})
				}
			}
		})
	}
	wg.Wait()
	var e *Error
	invalidItems := 0
	for k, ds := range bad {
		if ds == nil {
			continue
		}
		invalidItems++
		if e == nil {
			e = invalidService(zc, z, todo[k].name, todo[k].obj.Metadata.Labels, nil)
		}
		for _, d := range ds {
			if len(e.Diagnostics) < 100 {
				e.Diagnostics = append(e.Diagnostics, d)
			}
		}
	}
	if e == nil {
		return nil
	}
	if invalidItems > 1 {
		e.Message = fmt.Sprintf("%d services of the batch are invalid in zone %s (the first: %s): nothing was stored; fix the errors listed in diagnostics", invalidItems, z, strings.TrimSuffix(e.Message, " is invalid: nothing was stored; fix the errors listed in diagnostics"))
	}
	return e
}

// readCurrent reads the stored version of each item, in one read of the
// zone's services when the batch is large.
func (s *Store) readCurrent(ctx context.Context, z string, todo []*batchItem) error {
	if len(todo) < 64 {
		for _, it := range todo {
			cur, err := s.getKey(ctx, serviceKey(z, it.name), "")
			if err != nil {
				return err
			}
			it.cur = cur
		}
		return nil
	}
	kvs, _, _, err := s.b.rangeKeys(ctx, servicePrefix(z), "", 0, 0)
	if err != nil {
		return s.internal(err)
	}
	byKey := make(map[string]*kv, len(kvs))
	for i := range kvs {
		byKey[kvs[i].key] = &kvs[i]
	}
	for _, it := range todo {
		it.cur = byKey[serviceKey(z, it.name)]
	}
	return nil
}

// chunk returns how many of items (at least one) one transaction takes.
func (s *Store) chunk(items []*batchItem) int {
	if !s.boundedTxn {
		return len(items)
	}
	// Two compares beside the items', and the marker's put beside theirs.
	n, size := 0, 0
	for n < len(items) && n < etcdTxnOps-2 {
		size += len(items[n].value) + len(items[n].name) + 64
		if n > 0 && size > etcdTxnSize {
			break
		}
		n++
	}
	return n
}

// itemError names item i of a batch in err's message.
func itemError(err error, i int) error {
	if e, ok := err.(*Error); ok {
		c := *e
		c.Message = fmt.Sprintf("item %d of the batch: %s", i, e.Message)
		return &c
	}
	return err
}

// batchError returns err as it is when nothing was written yet, else
// the error with what was written (Error.Stored), which stays written.
func (s *Store) batchError(err error, res *BatchResult) error {
	if res.Transactions == 0 {
		return err
	}
	e, ok := err.(*Error)
	if !ok {
		e = s.internal(err)
	}
	c := *e
	c.Message = fmt.Sprintf("%s (%d items of the batch were stored before, in %d transactions up to resourceVersion %s; the rest were not)",
		e.Message, res.Created+res.Configured, res.Transactions, res.ResourceVersion)
	stored := *res
	c.Stored = &stored
	return &c
}
