package main

import (
	"github.com/grpc-config-dns/grpc-config-dns/model"
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// Publisher configs are checked by package model, which positions every
// diagnostic (its own and those of the service configs inside) at the
// file's line and column.
func init() {
	lintPublisher = func(_ string, text []byte) (sc.Diagnostics, error) {
		_, ds := model.Parse(text)
		return ds, nil
	}
}
