#!/bin/sh
# deps.sh - install the Debian packages a make target needs, when missing.
# Usage: tools/deps.sh build|test|fuzz|bench|deb
# Uses apt-get directly as root, sudo otherwise; does nothing when all the
# packages are already installed, so it is cheap to call from make.
set -eu

build="libuv1-dev liblmdb-dev libsystemd-dev libcurl4-openssl-dev libjansson-dev libssl-dev pkg-config gcc make"
units="systemd"
# The Python client: its tests (pytest), its pip install (setuptools,
# wheel, pip) and its TLS tests (openssl makes their certificates).
python="python3 python3-pytest python3-setuptools python3-wheel python3-pip python3-venv openssl"
# The packages (python3-lockd through dh-python and pybuild).
deb="debhelper dpkg-dev lintian dh-python python3-all python3-setuptools pybuild-plugin-pyproject"
# The packages under a real systemd: a Debian root booted by systemd-nspawn.
nspawn="systemd-container debootstrap"
# The Go client (client/go): its vet, gofmt and tests.
golang="golang-go"
# The cluster test's partition: network namespaces (ip netns) and nft.
netns="iproute2 nftables"
case "${1:-build}" in
build) want="$build" ;;
test)  want="$build $units $nspawn etcd-server curl libcmocka-dev clang libclang-rt-14-dev lmdb-utils prometheus faketime netcat-openbsd $python $golang $deb $netns" ;;
fuzz)  want="$build clang libclang-rt-14-dev" ;;
deb)   want="$build $deb" ;;
bench) want="$build redis-server etcd-server etcd-client libhiredis-dev util-linux" ;;
*) echo "usage: $0 build|test|fuzz|bench|deb" >&2; exit 2 ;;
esac

missing=""
for p in $want; do
	if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed"; then
		missing="$missing $p"
	fi
done
[ -z "$missing" ] && exit 0

echo "deps: installing$missing" >&2
if [ "$(id -u)" -eq 0 ]; then sudo=""; else sudo="sudo"; fi
$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
# shellcheck disable=SC2086
$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing >/dev/null
