# go-env.sh - sourced (". tools/go-env.sh") by everything that builds the
# Go client (tests/go/run.sh, tests/docs/run-samples.sh, bench/go-vs-c.sh):
# offline, with Debian's golang-go as it is (no toolchain download, no
# module proxy, no VCS stamp), its caches under $go_cache (set by the
# caller: the build directory's go/).
export GOTOOLCHAIN=local GOPROXY=off GOFLAGS=-buildvcs=false \
    GOCACHE="$go_cache/cache" GOPATH="$go_cache/path"
