// Package faults injects the faults a configuration server must survive
// into the real `grpc-config-dns` binary, on loopback, and checks that it
// never serves wrong data and that no SOA serial ever goes backwards:
//
//   - a writer that rewrites the config in place and stalls mid-file,
//     longer than the watcher's poll and debounce, holding it open; and
//     one that appends it line by line with `echo … >> file`, stalling
//     inside the last service;
//   - kill -9 at random moments of reloads, then a restart;
//   - a zone removed, the server killed, the zone added back;
//   - the serial state on a full disk and on a read-only disk (a small
//     tmpfs, so root is needed: these tests skip otherwise);
//   - `serve --store DIR` killed with kill -9 while four clients write
//     through the admin API, twelve times: every acknowledged write is
//     there after the restart, versions and serials never go back;
//   - two `serve --store etcd://…` replicas: one killed with kill -9
//     during writes and restarted serves its peer's serial within a
//     second (needs etcd: run.sh installs it as root, else the test skips);
//   - zones inside one another, PUT through `serve --store DIR`: refused
//     as a config with both is (422, zone-nested), DNS answers unchanged
//     byte for byte, before and after a restart; and two replicas on one
//     etcd creating a zone and a zone inside it at once: never both;
//   - clients holding every connection --metrics allows (keep-alive and
//     half-sent requests) and a hundred more, with the server's file
//     descriptors limited: SIGHUP still reloads, and /metrics answers;
//   - 300 connections held on each of --metrics and --admin (a store with
//     tokens), half sending nothing and half a header a byte at a time,
//     each reopened as soon as the server closes it, from a process of
//     their own: /healthz on both and an authenticated admin request
//     answer within a second, every time;
//   - the embedded store on a full disk: writes refused with 507 and
//     nothing changed, served again once space is freed;
//   - configs whose lines break at a lone CR, U+0085, U+2028 or U+2029:
//     `zone`, a start and a one-service reload serve the keys yaml.v3
//     reads after the break;
//   - what serve did not write where it keeps its serials (a symlink to
//     /dev/zero, a named pipe, a directory, a cut file, a 4 GiB one): a
//     refusal to start, at once, naming the file;
//   - a DNS server that answers with TC=1 over TCP too, to `select`;
//   - hostile inputs to `lint` (a 60 MB file of one-letter values, 40 000
//     choices, a million-digit number…) and hostile 58 KB answers to
//     `select`, each bounded in time and peak memory.
//
// Faults caught inside one process (a writer that stalls at every line,
// signed transfers of near-64 KiB records, truncated answers at the resolver,
// hostile packets) are tested next to the code, under plain `go test`.
//
// The tests are behind the build tag faults, because they build the binary,
// mount file systems and kill processes. Run them with ./run.sh (as root in
// CI), which requires every test to run:
//
//	faults/run.sh
package faults
