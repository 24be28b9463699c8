package main

import (
	sc "github.com/grpc-config-dns/grpc-config-dns/serviceconfig"
)

// languages is the clientLanguage each client matches with (gRFC A2's
// examples name "go", "java", "python"; grpc-js compares with "node").
var languages = map[string]string{grpcGo: "go", ours: "go", grpcJS: "node", grpcPy: "python", grpcJava: "java"}

// specIntent is the outcome gRFC A2 and A21 prescribe for client on
// records, the TXT records of one case as served: what
// serviceconfig.Choose, which our resolver runs, decides for a client of
// that language, bucket and hostname without a default service config. A
// chosen empty config changes nothing a probe can see.
func specIntent(client, owner string, records [][]string) string {
	o := sc.Choose(sc.Answer{Owner: owner, Records: records}, sc.Client{Language: languages[client], Hostname: "interop-client", Bucket: 50})
	switch {
	case o.Result == sc.Invalid:
		return fails // the channel fails until the record is fixed
	case o.Result == sc.NoConfig, string(o.ServiceConfig) == "{}":
		return noConfig
	}
	return applied
}
