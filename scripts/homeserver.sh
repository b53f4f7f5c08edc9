#!/usr/bin/env bash
# The real Matrix homeserver for Jarvis's tests and demo: Dendrite, built
# from the Go module proxy and started on 127.0.0.1.
#
#   scripts/homeserver.sh build        build the binaries (cached after the first time)
#   scripts/homeserver.sh start DIR    start a fresh homeserver with its state in DIR;
#                                      writes DIR/url, DIR/pid and DIR/secret
#   scripts/homeserver.sh stop DIR     stop the homeserver started in DIR
#   scripts/homeserver.sh restart DIR  start it again on the same port with the same state
#
# Environment:
#   JARVIS_DENDRITE_BIN   where the binaries live (default: the user cache dir)
#   JARVIS_HS_PORT        the port to start on (default: a free one below the
#                         kernel's ephemeral range)
#   JARVIS_HS_APPSERVICE  an application service registration file to load
#   JARVIS_HS_RATE_LIMIT  "THRESHOLD COOLOFF_MS": turn the client API's rate
#                         limiting on, THRESHOLD requests per device (per
#                         address before login) within COOLOFF_MS; Dendrite
#                         v0.13.8 limits /messages, joins, typing, receipts
#                         and the like, not /send
set -euo pipefail

VERSION=v0.13.8
BIN=${JARVIS_DENDRITE_BIN:-${XDG_CACHE_HOME:-$HOME/.cache}/jarvis/dendrite-$VERSION}

build() {
	if [[ -x $BIN/dendrite && -x $BIN/generate-keys && -x $BIN/generate-config ]]; then
		return
	fi
	echo "building Dendrite $VERSION into $BIN (a few minutes, once)" >&2
	mkdir -p "$BIN"
	# Built outside any module so that the project's go.mod plays no part.
	(cd "$(mktemp -d)" && GOFLAGS=-mod=mod GOBIN="$BIN" go install \
		"github.com/matrix-org/dendrite/cmd/dendrite@$VERSION" \
		"github.com/matrix-org/dendrite/cmd/generate-keys@$VERSION" \
		"github.com/matrix-org/dendrite/cmd/generate-config@$VERSION")
}

# free_port is JARVIS_HS_PORT when the caller reserved one (the tests do:
# see internal/testkit/testport), or a port below the kernel's ephemeral range,
# where no outgoing connection can be holding it, that nothing listens on.
free_port() {
	if [[ -n ${JARVIS_HS_PORT:-} ]]; then
		echo "$JARVIS_HS_PORT"
		return
	fi
	local port low
	read -r low _ </proc/sys/net/ipv4/ip_local_port_range 2>/dev/null || low=32768
	((low > 11000)) || low=32768
	for _ in $(seq 100); do
		port=$((10000 + RANDOM % (low - 10000)))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	echo "no free port found" >&2
	return 1
}

start() {
	local dir=$1
	build
	mkdir -p "$dir"
	dir=$(cd "$dir" && pwd)
	local port secret
	port=$(free_port)
	secret=$(head -c 18 /dev/urandom | base64 | tr -d '/+=')
	"$BIN/generate-keys" --private-key "$dir/matrix_key.pem" >/dev/null
	"$BIN/generate-config" -ci -dir "$dir" -server localhost >"$dir/dendrite.yaml"
	local appservice=""
	if [[ -n ${JARVIS_HS_APPSERVICE:-} ]]; then
		appservice="[\"$JARVIS_HS_APPSERVICE\"]"
	fi
	# -ci turns rate limiting off and logs at trace; make the rest explicit.
	sed -i \
		-e "s|^  private_key: .*|  private_key: $dir/matrix_key.pem|" \
		-e "s|^  disable_federation: .*|  disable_federation: true|" \
		-e "s|^  registration_shared_secret: .*|  registration_shared_secret: \"$secret\"|" \
		-e "s|^  level: trace|  level: warn|" \
		-e "s|^  registration_disabled: .*|  registration_disabled: true|" \
		-e "0,/^    in_memory: true/s||    in_memory: false|" \
		"$dir/dendrite.yaml"
	if [[ -n $appservice ]]; then
		sed -i -e "s|^  config_files: \[\]|  config_files: $appservice|" "$dir/dendrite.yaml"
	fi
	if [[ -n ${JARVIS_HS_RATE_LIMIT:-} ]]; then
		local threshold cooloff
		read -r threshold cooloff <<<"$JARVIS_HS_RATE_LIMIT"
		[[ $threshold =~ ^[0-9]+$ && $cooloff =~ ^[0-9]+$ ]] || { echo "JARVIS_HS_RATE_LIMIT must be \"THRESHOLD COOLOFF_MS\"" >&2; return 1; }
		sed -i -e "/^  rate_limiting:/,/^    cooloff_ms:/{s|enabled: false|enabled: true|;s|threshold: .*|threshold: $threshold|;s|cooloff_ms: .*|cooloff_ms: $cooloff|}" \
			"$dir/dendrite.yaml"
		grep -A3 "^  rate_limiting:" "$dir/dendrite.yaml" | grep -q "enabled: true" || { echo "could not turn rate limiting on" >&2; return 1; }
	fi
	grep -q "registration_shared_secret: \"$secret\"" "$dir/dendrite.yaml" || { echo "could not set the shared secret" >&2; return 1; }
	grep -q "disable_federation: true" "$dir/dendrite.yaml" || { echo "could not turn federation off" >&2; return 1; }

	echo "$secret" >"$dir/secret"
	echo "http://127.0.0.1:$port" >"$dir/url"
	launch "$dir"
}

launch() {
	local dir=$1
	local url
	url=$(cat "$dir/url")
	(cd "$dir" && exec "$BIN/dendrite" --config "$dir/dendrite.yaml" --http-bind-address "${url#http://}" \
		>>"$dir/dendrite.log" 2>&1) &
	local pid=$!
	echo "$pid" >"$dir/pid"
	for _ in $(seq 300); do
		if curl -fsS "$url/_matrix/client/versions" >/dev/null 2>&1; then
			echo "$url"
			return
		fi
		if ! kill -0 "$pid" 2>/dev/null; then
			echo "Dendrite exited; last lines of its log:" >&2
			tail -20 "$dir/dendrite.log" >&2
			return 1
		fi
		sleep 0.1
	done
	echo "Dendrite did not answer on $url within 30 s" >&2
	kill "$pid" 2>/dev/null || true
	return 1
}

stop() {
	local dir=$1
	[[ -f $dir/pid ]] || return 0
	local pid
	pid=$(cat "$dir/pid")
	kill "$pid" 2>/dev/null || true
	for _ in $(seq 100); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -9 "$pid" 2>/dev/null || true
	rm -f "$dir/pid"
}

case ${1:-} in
build) build ;;
start) start "${2:?usage: $0 start DIR}" ;;
stop) stop "${2:?usage: $0 stop DIR}" ;;
restart) launch "${2:?usage: $0 restart DIR}" ;;
*)
	echo "usage: $0 build | start DIR | stop DIR | restart DIR" >&2
	exit 2
	;;
esac
