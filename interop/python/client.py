#!/usr/bin/python3
"""The Python grpcio (gRPC C-core) client of the interop suite.

It reads a probe request (JSON) on stdin, probes each target through
C-core's dns resolver, and prints what the published service config did, in
the same protocol as interop/goclient (interop/README.md). Run it with the
system python3, which sees Debian's python3-grpcio.

C-core only reads TXT service configs when the channel argument
grpc.service_config_disable_resolution is 0. The test service's messages
are written by hand (a few varints and one string) so that neither protoc
nor generated code is needed.
"""

import concurrent.futures
import json
import socket
import sys
import time

import grpc

SERVICE = "/grpcconfigdns.test.v1.Echo/"
OPTIONS = [("grpc.service_config_disable_resolution", 0)]


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def echo_request(sleep_ms=0, fail_first=0, key=""):
    """EchoRequest: sleep_ms = 3, fail_first = 4, key = 5 (echo.proto)."""
    msg = b""
    if sleep_ms:
        msg += b"\x18" + varint(sleep_ms)
    if fail_first:
        msg += b"\x20" + varint(fail_first)
    if key:
        raw = key.encode()
        msg += b"\x2a" + varint(len(raw)) + raw
    return msg


def call(channel, method, request):
    """Returns (code name, details, backend header values)."""
    rpc = channel.unary_unary(SERVICE + method)
    try:
        _, c = rpc.with_call(request, timeout=10)
        md = c.initial_metadata() or ()
        return "OK", "", [v for k, v in md if k == "backend"]
    except grpc.RpcError as e:
        return e.code().name, e.details() or "", []


def target_of(req, t):
    return "dns://%s/%s:%d" % (t["ns"], t["host"], req["port"])


def probe(req, t):
    r = {"case": t["case"], "fast": "", "slow": "", "flaky": "", "backends": []}

    def note(res):
        if res[0] != "OK" and "detail" not in r:
            r["detail"] = res[1]
        return res

    with grpc.insecure_channel(target_of(req, t), options=OPTIONS) as ch:
        r["fast"] = note(call(ch, "Echo", b""))[0]
        for _ in range(30):
            for b in note(call(ch, "Echo", b""))[2]:
                if b not in r["backends"]:
                    r["backends"].append(b)
            time.sleep(0.015)
        start = time.monotonic()
        r["slow"] = note(call(ch, "Slow", echo_request(sleep_ms=5000)))[0]
        r["slowMs"] = int((time.monotonic() - start) * 1000)
        key = "python/%s/%s" % (t["case"], req.get("key", ""))
        r["flaky"] = note(call(ch, "Flaky", echo_request(fail_first=2, key=key)))[0]
    return r


def emit(obj):
    sys.stdout.write(json.dumps(obj) + "\n")
    sys.stdout.flush()


def watch(req, t):
    """Calls Flaky (failing once per key) until a published retry policy
    makes it succeed."""
    n = [0]

    def flaky(ch):
        n[0] += 1
        key = "python/watch/%s/%d" % (req.get("key", ""), n[0])
        return call(ch, "Flaky", echo_request(fail_first=1, key=key))

    with grpc.insecure_channel(target_of(req, t), options=OPTIONS) as ch:
        code, detail, _ = flaky(ch)
        if code != "UNAVAILABLE":
            emit({"event": "error", "detail": "first call: %s %s, want UNAVAILABLE" % (code, detail)})
            return
        emit({"event": "ready"})
        deadline = time.monotonic() + req["watchMs"] / 1000
        while time.monotonic() < deadline:
            if flaky(ch)[0] == "OK":
                emit({"event": "applied"})
                return
            time.sleep(0.05)
        emit({"event": "timeout"})


def main():
    req = json.load(sys.stdin)
    if req["mode"] == "probe":
        with concurrent.futures.ThreadPoolExecutor(max_workers=len(req["targets"]) or 1) as pool:
            results = list(pool.map(lambda t: probe(req, t), req["targets"]))
        # C-core matches clientHostname with gethostname(2), as this does.
        emit({"client": "grpcio", "version": grpc.__version__, "hostname": socket.gethostname(),
              "results": results})
    elif req["mode"] == "watch":
        watch(req, req["targets"][0])
    else:
        sys.exit("mode %r: want probe or watch" % req["mode"])


if __name__ == "__main__":
    main()
