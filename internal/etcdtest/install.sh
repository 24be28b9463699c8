#!/usr/bin/env bash
# Makes sure etcd (Debian's etcd-server package) is installed: installs it
# when run as root with apt-get, without starting the package's own etcd
# service; otherwise fails, saying what to install. Used by
# store/etcdtest.sh and faults/run.sh.
set -euo pipefail

command -v etcd >/dev/null && exit 0
if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
	echo "etcd is missing: install Debian's etcd-server package (apt-get install etcd-server), or run as root" >&2
	exit 1
fi
echo "installing etcd-server" >&2
# Keep the package's own etcd service from starting.
made_policy=
if [[ ! -e /usr/sbin/policy-rc.d ]]; then
	printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
	chmod +x /usr/sbin/policy-rc.d
	made_policy=1
fi
apt-get update -qq
DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends etcd-server >/dev/null
[[ -n $made_policy ]] && rm -f /usr/sbin/policy-rc.d
command -v etcd >/dev/null
