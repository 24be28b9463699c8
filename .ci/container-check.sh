#!/usr/bin/env bash
# The container image, built and run offline: the Dockerfile's final stage
# FROM scratch, from a static binary built here (--target prebuilt;
# nothing to pull), with Debian's buildah on its own vfs storage under a
# temporary directory. Checks the image's user and command, runs `version`
# in it, runs `serve` in it as user 65532 on a loopback port, asks dig and
# /readyz, stops it with SIGTERM, checks that the state file was written by
# 65532, and removes everything it made. Installs buildah and dig on
# Debian when run as root. Takes a few seconds once Go's cache is warm.
#
# Networking: buildah run with chroot isolation (the only one that works
# without a container runtime or user namespaces here) shares the host's
# network namespace, as --network host would: the server listens on
# 127.0.0.1 on a port the kernel picks, read from its log.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v buildah >/dev/null || need+=(buildah)
command -v dig >/dev/null || need+=(dnsutils)
command -v curl >/dev/null || need+=(curl)
if ((${#need[@]})); then
	if [[ $(id -u) -ne 0 ]] || ! command -v apt-get >/dev/null; then
		echo "container-check: missing ${need[*]}: install them (Debian/Ubuntu packages) or run this script as root" >&2
		exit 1
	fi
	echo "container-check: installing ${need[*]}" >&2
	apt-get update -qq
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

work=$(mktemp -d /tmp/container-check.XXXXXX)
B=(buildah --root "$work/root" --runroot "$work/run" --storage-driver vfs)
image=localhost/grpc-config-dns-ci:$$
ctr=
run_pid=
server=
cleanup() {
	local rc=$?
	set +e
	[[ -z $run_pid ]] || find_server
	if [[ -n $server ]]; then
		kill "$server" 2>/dev/null
		for _ in $(seq 50); do kill -0 "$run_pid" 2>/dev/null || break; sleep 0.1; done
	fi
	if [[ -n $run_pid ]] && kill -0 "$run_pid" 2>/dev/null; then
		kill "$run_pid" 2>/dev/null
	fi
	[[ -z $run_pid ]] || wait "$run_pid" 2>/dev/null
	[[ -n $ctr ]] && "${B[@]}" rm "$ctr" >/dev/null 2>&1
	"${B[@]}" rmi -f "$image" >/dev/null 2>&1
	"${B[@]}" rmi --prune >/dev/null 2>&1
	# Never follow a mount left by an interrupted run (chroot isolation
	# bind-mounts /dev, /proc and /sys into the container's root).
	grep -F " $work/" /proc/mounts | awk '{print $2}' | sort -r | xargs -r -n1 umount -l 2>/dev/null
	rm -rf --one-file-system "$work"
	exit "$rc"
}
trap cleanup EXIT
trap "exit 130" INT TERM

# find_server sets server to the pid of the server that our buildah run
# (run_pid) started: the process whose parent chain leads to it.
find_server() {
	local p q
	server=
	for p in $(pgrep -f '^/grpc-config-dns serve --listen 127.0.0.1:0 ' || true); do
		q=$p
		while [[ $q -gt 1 ]]; do
			q=$(awk '{print $4}' "/proc/$q/stat" 2>/dev/null || echo 1)
			[[ $q == "$run_pid" ]] && { server=$p; return 0; }
		done
	done
	return 0 # (explicit: in a trap, a bare return returns the trap's status)
}

fail() {
	echo "container-check: $*" >&2
	[[ -s $work/serve.log ]] && { echo "--- serve's log:" >&2; cat "$work/serve.log" >&2; }
	exit 1
}

# The documented build (docker build / buildah bud -t grpc-config-dns .)
# cannot finish here: it pulls the golang image. It must get that far,
# every stage resolved (buildah 1.28 took a stage chosen by a build arg
# in FROM for an image's short name, and failed before any pull).
if "${B[@]}" bud --isolation chroot -f "$PWD/Dockerfile" -t "$image-default" . >"$work/default.log" 2>&1; then
	echo "container-check: the default build finished (a registry was reachable)"
	"${B[@]}" rmi -f "$image-default" >/dev/null 2>&1
elif grep -q 'docker.io/library/golang:1.26' "$work/default.log" && ! grep -qi 'short-name' "$work/default.log"; then
	echo "container-check: the default build resolved its stages and stopped pulling docker.io/library/golang:1.26 (offline)"
else
	cat "$work/default.log" >&2
	fail "the documented build (buildah bud -t grpc-config-dns .) failed before pulling its golang image"
fi

# The context: a static binary and the empty state directory.
mkdir -p "$work/ctx/state"
CGO_ENABLED=0 go build -trimpath -o "$work/ctx/grpc-config-dns" ./cmd/grpc-config-dns
"${B[@]}" bud --quiet --isolation chroot --target prebuilt --build-arg VERSION=v0.0.0-ci --build-arg REVISION=$$ \
	-f "$PWD/Dockerfile" -t "$image" "$work/ctx" >/dev/null ||
	fail "buildah bud --target prebuilt failed (it must not pull anything: is a stage other than scratch used?)"

labels=$("${B[@]}" inspect --format '{{index .OCIv1.Config.Labels "org.opencontainers.image.version"}} {{index .OCIv1.Config.Labels "org.opencontainers.image.revision"}} {{index .OCIv1.Config.Labels "org.opencontainers.image.source"}}' "$image")
[[ $labels == "v0.0.0-ci $$ https://github.com/grpc-config-dns/grpc-config-dns" ]] ||
	fail "the image's OCI labels (version, revision, source) are '$labels'"

user=$("${B[@]}" inspect --format '{{.OCIv1.Config.User}}' "$image")
cmd=$("${B[@]}" inspect --format '{{.OCIv1.Config.Entrypoint}} {{.OCIv1.Config.Cmd}}' "$image")
[[ $user == 65532:65532 ]] || fail "the image runs as '$user', want 65532:65532 (USER in the Dockerfile)"
[[ $cmd == "[/grpc-config-dns] [serve --listen 0.0.0.0:1053 "*"--state /var/lib/grpc-config-dns/"* ]] ||
	fail "the image's command is '$cmd': want /grpc-config-dns serve on 0.0.0.0:1053 with --state under /var/lib/grpc-config-dns"

ctr=$("${B[@]}" from --quiet "$image")
run=("${B[@]}" run --isolation chroot --user "$user" "$ctr" --)

version=$("${run[@]}" /grpc-config-dns version) || fail "version failed in the image"
[[ $version == "grpc-config-dns "* ]] || fail "version printed '$version'"
echo "container-check: $version, in an image FROM scratch as $user"

# serve as the image would, but on loopback ports the kernel picks.
"${run[@]}" /grpc-config-dns serve --listen 127.0.0.1:0 --metrics 127.0.0.1:0 \
	--state /var/lib/grpc-config-dns/serials --shutdown-grace 1s >"$work/serve.log" 2>&1 &
run_pid=$!
addr= metrics=
for _ in $(seq 100); do
	addr=$(sed -n 's/.*msg=serving udp=127\.0\.0\.1:\([0-9]*\) .*/\1/p' "$work/serve.log" | head -1)
	metrics=$(sed -n 's|.*msg=metrics url=\(http://[^ ]*\)/metrics.*|\1|p' "$work/serve.log" | head -1)
	[[ -n $addr && -n $metrics ]] && break
	kill -0 "$run_pid" 2>/dev/null || fail "serve exited in the image"
	sleep 0.1
done
[[ -n $addr && -n $metrics ]] || fail "serve did not log its addresses within 10 s"

txt=$(dig @127.0.0.1 -p "$addr" +short +time=2 +tries=2 TXT _grpc_config.echo.example.test)
[[ $txt == *grpc_config=* ]] || fail "dig @127.0.0.1 -p $addr TXT _grpc_config.echo.example.test answered '$txt'"
curl -fsS --max-time 5 "$metrics/readyz" >/dev/null || fail "$metrics/readyz is not ready"
echo "container-check: serve in the image answered dig on 127.0.0.1:$addr and $metrics/readyz"

# Stop it as a runtime would: SIGTERM to the server.
find_server
[[ -n $server ]] || fail "cannot find the server under buildah run (pid $run_pid)"
[[ $(awk '/^Uid:/ {print $2}' "/proc/$server/status") == 65532 ]] || fail "serve runs as uid $(awk '/^Uid:/ {print $2}' "/proc/$server/status"), want 65532"
kill -TERM "$server"
wait "$run_pid" || fail "serve exited $? on SIGTERM, want 0"
run_pid=
grep -q 'msg=stopped' "$work/serve.log" || fail "serve did not log 'stopped' after SIGTERM"

mnt=$("${B[@]}" mount "$ctr")
owner=$(stat -c %u:%g "$mnt/var/lib/grpc-config-dns/serials" 2>/dev/null) || fail "serve wrote no state file at /var/lib/grpc-config-dns/serials"
"${B[@]}" umount "$ctr" >/dev/null
[[ $owner == 65532:65532 ]] || fail "the state file belongs to $owner, want 65532:65532"
echo "container-check: stopped on SIGTERM; state written by 65532; removing the image"
