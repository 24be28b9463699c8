package model

import _ "embed"

// Example is the built-in example config that `grpc-config-dns serve`
// serves when no --config is given. It shows a canary by percentage, a
// language-specific choice, a single service config and a plain host.
//
//go:embed example.yaml
var Example []byte
