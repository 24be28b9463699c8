package store

import (
	"context"
	"fmt"
)

func openEtcd(ctx context.Context, location string, opts Options) (backend, error) {
	return nil, fmt.Errorf("etcd: not yet")
}
