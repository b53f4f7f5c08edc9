#!/usr/bin/env bash
# Prometheus Alertmanager for Jarvis's tests: built from the Go module proxy
# and cached beside the test homeserver.
#
#   scripts/alertmanager.sh build   build the binary (cached after the first time)
#   scripts/alertmanager.sh path    print where the binary is
#
# Environment:
#   JARVIS_ALERTMANAGER_BIN   where the binary lives (default: the user cache dir)
set -euo pipefail

VERSION=v0.35.0
BIN=${JARVIS_ALERTMANAGER_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/jarvis/alertmanager-$VERSION}

build() {
	if [[ -x $BIN/alertmanager ]]; then
		return
	fi
	# Tests run side by side: one builds, the others wait for it.
	mkdir -p "$(dirname "$BIN")"
	exec 9>"$BIN.lock"
	flock 9
	if [[ -x $BIN/alertmanager ]]; then
		return
	fi
	echo "building Alertmanager $VERSION into $BIN (a few minutes, once)" >&2
	mkdir -p "$BIN"
	# The module as the proxy serves it lacks the web UI's built assets,
	# which the binary embeds: the source is copied and given an empty UI,
	# which the tests never open, and built with its own go.mod.
	local src work
	src=$(cd "$(mktemp -d)" && GOFLAGS=-mod=mod go mod download -json \
		"github.com/prometheus/alertmanager@$VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
	[[ -d $src ]] || { echo "could not download Alertmanager $VERSION" >&2; return 1; }
	work=$(mktemp -d)
	cp -r "$src/." "$work"
	chmod -R u+w "$work"
	for ui in elm mantine; do
		mkdir -p "$work/ui/app/dist/$ui"
		echo "Alertmanager's web UI is not built for Jarvis's tests." >"$work/ui/app/dist/$ui/index.html"
	done
	# Built under another name and moved, so that no one runs half a binary.
	(cd "$work" && GOFLAGS=-mod=mod go build -o "$BIN/alertmanager.new" ./cmd/alertmanager)
	mv "$BIN/alertmanager.new" "$BIN/alertmanager"
	rm -rf "$work"
}

case ${1:-} in
build) build ;;
path)
	build
	echo "$BIN/alertmanager"
	;;
*)
	echo "usage: $0 build | path" >&2
	exit 2
	;;
esac
