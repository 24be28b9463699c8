package store

import "context"

// dryRunKey marks a context whose writes are checked and not made.
type dryRunKey struct{}

// DryRun returns ctx for a dry run, kube-apiserver's dryRun=All: a write
// made with it is validated and its preconditions checked as usual, and
// answered with the object as it would be stored, but nothing is stored:
// no revision, no watch event, no serial. The object's resourceVersion
// is then the one it has (none for a new object).
func DryRun(ctx context.Context) context.Context {
	return context.WithValue(ctx, dryRunKey{}, true)
}

func isDryRun(ctx context.Context) bool {
	dry, _ := ctx.Value(dryRunKey{}).(bool)
	return dry
}

// commit runs t. In a dry run it stores nothing and reads what t would
// replace instead; the result's rev is then 0 (see resultRV).
func (s *Store) commit(ctx context.Context, t *txn) (txnResult, error) {
	if !isDryRun(ctx) {
		return s.b.txn(ctx, t)
	}
	res := txnResult{ok: true, prev: map[string]kv{}}
	keys := t.dels
	for _, p := range t.puts {
		keys = append(keys, p.key)
	}
	for _, k := range keys {
		cur, err := s.getKey(ctx, k, "")
		if err != nil {
			return txnResult{}, err
		}
		if cur != nil {
			res.prev[k] = *cur
		}
	}
	return res, nil
}

// resultRV is the resourceVersion of key after the write res: the
// write's revision, or in a dry run the one key has (none when new).
func resultRV(res txnResult, key string) string {
	if res.rev != 0 {
		return FormatRV(res.rev)
	}
	if prev, ok := res.prev[key]; ok {
		return FormatRV(prev.modRev)
	}
	return ""
}
