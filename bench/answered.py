#!/usr/bin/env python3
"""Time from a publish command to the DNS answer that shows it.

    answered.py [--do] PORT NAME REGEX -- COMMAND...

Runs COMMAND (which publishes a change and tells the server), then asks
127.0.0.1:PORT for the TXT record at NAME over UDP every millisecond
until an answer matches REGEX (bytes), and prints the seconds from just
before COMMAND ran to that answer. One process, one socket: a `dig` per
poll costs 20 ms here, more than what it measures. Gives up after 60 s.
With `true` as COMMAND it waits for a server that is starting. --do
sets EDNS's DO bit (a signed zone's answer then carries its RRSIGs, and
REGEX may ask for them).
"""
import re
import socket
import struct
import subprocess
import sys
import time


def query(name, do=False):
    labels = b"".join(bytes([len(l)]) + l.encode() for l in name.split(".") if l)
    header = struct.pack(">HHHHHH", 0x2a2a, 0x0100, 1, 0, 0, 1)
    # EDNS, 4096 bytes; the DO bit is the top bit of the flags.
    opt = b"\0" + struct.pack(">HHIH", 41, 4096, 0x8000 if do else 0, 0)
    return header + labels + b"\0" + struct.pack(">HH", 16, 1) + opt


def main():
    args = sys.argv[1:]
    do = args[:1] == ["--do"]
    if do:
        args = args[1:]
    if len(args) < 5 or args[3] != "--":
        sys.exit(__doc__)
    port, name, want, command = int(args[0]), args[1], re.compile(args[2].encode(), re.DOTALL), args[4:]
    q = query(name, do)
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    # Short: before a starting server listens, nothing answers at all.
    s.settimeout(0.01)
    t0 = time.monotonic()
    subprocess.run(command, check=True)
    while time.monotonic() - t0 < 60:
        s.sendto(q, ("127.0.0.1", port))
        try:
            r = s.recv(65535)
        except socket.timeout:
            continue
        if want.search(r):
            print("%.3f" % (time.monotonic() - t0))
            return
        time.sleep(0.001)
    sys.exit("answered.py: %s never answered with %s" % (name, args[2]))


main()
