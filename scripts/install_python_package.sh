#!/usr/bin/env bash
# Installs the Python package (chorus, chorus.torch) into $root/.venv, a venv
# over Debian's python3 that sees its torch and numpy (--system-site-packages),
# shipping the library and chorusrun that scripts/build.sh made: nothing is
# compiled again (CHORUS_PYTHON_PREBUILT; pyproject.toml, docs/python.md).
# Then: `. .venv/bin/activate; chorusrun -np 2 python3 train.py`.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
venv="${CHORUS_VENV:-$root/.venv}"
[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv --system-site-packages "$venv"
CHORUS_PYTHON_PREBUILT="$build" SKBUILD_BUILD_DIR="$build/python-package" \
  "$venv/bin/pip" install --quiet --disable-pip-version-check "$root"
echo "install_python_package: chorus in $venv ('. $venv/bin/activate' puts chorusrun and python3 with chorus on PATH)"
