#!/bin/sh
set -e
if [ "$1" = remove ] && [ -d /run/systemd/system ]; then
	systemctl stop jarvis.service || true
	systemctl disable jarvis.service || true
fi
