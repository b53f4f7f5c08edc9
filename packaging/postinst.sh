#!/bin/sh
# Jarvis runs as the system user jarvis, which owns /etc/jarvis: it writes a
# fresh pickle key in place of `generate` there on its first start.
set -e
if [ "$1" = configure ]; then
	if ! getent passwd jarvis >/dev/null; then
		adduser --system --group --home /var/lib/jarvis --no-create-home --quiet jarvis
	fi
	chown jarvis:jarvis /etc/jarvis /etc/jarvis/config.yaml
	chmod 0700 /etc/jarvis
	chmod 0600 /etc/jarvis/config.yaml
	if [ -d /run/systemd/system ]; then
		systemctl daemon-reload || true
	fi
	echo "Jarvis: set the keys marked '# example' in /etc/jarvis/config.yaml" \
		"(jarvis config check --config /etc/jarvis/config.yaml), then: systemctl enable --now jarvis"
fi
