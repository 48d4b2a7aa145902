#!/usr/bin/env bash
# pytools.sh — the Python tools the tests run as they are (scripts/pytools.txt:
# the OpenAPI validator and schemathesis), in a virtual environment at target/pytools.
# Idempotent: once the installed set matches pytools.txt it does nothing.
# Used by `make test`; needs python3 with venv (python3-venv on Debian, which
# it installs when missing) and the PyPI registry.
set -euo pipefail
cd "$(dirname "$0")/.."
VENV=target/pytools
STAMP="$VENV/.installed"
if [[ -f "$STAMP" ]] && cmp -s scripts/pytools.txt "$STAMP"; then
    exit 0
fi
if ! python3 -m venv --help >/dev/null 2>&1 || ! python3 -c 'import ensurepip' >/dev/null 2>&1; then
    echo "pytools: installing python3-venv (apt-get)" >&2
    sudo_cmd=(); [[ $EUID -eq 0 ]] || sudo_cmd=(sudo -n)
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -q >/dev/null
    "${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -q python3-venv >/dev/null
fi
rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet --disable-pip-version-check -r scripts/pytools.txt
cp scripts/pytools.txt "$STAMP"
echo "pytools: installed $(grep -c '^[^#[:space:]]' scripts/pytools.txt) tool(s) into $VENV" >&2
