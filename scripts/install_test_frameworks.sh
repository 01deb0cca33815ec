#!/usr/bin/env bash
# The frameworks the tests use from PyPI, into $root/.venv: one venv for all
# of them, over Debian's python3 (--system-site-packages: it sees Debian's
# torch 1.13 and numpy 1.24). TensorFlow: CHORUS_TENSORFLOW_PIP, by default
# tensorflow-cpu 2.17, the newest whose wheels take Debian's numpy 1.24
# (2.18 needs numpy >= 1.26, which Debian's torch was not built against).
# Skips pip when the venv already has it (CI on a warm machine costs nothing).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CHORUS_VENV:-$root/.venv}"
tensorflow="${CHORUS_TENSORFLOW_PIP:-tensorflow-cpu==2.17.1}"
[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv --system-site-packages "$venv"
want="${tensorflow#*==}"
have="$("$venv/bin/python" -c 'import importlib.metadata as m
for d in ("tensorflow-cpu", "tensorflow"):
    try:
        print(m.version(d)); break
    except m.PackageNotFoundError:
        pass' 2>/dev/null || true)"
if [[ "$have" == "$want" ]]; then
  echo "install_test_frameworks: $tensorflow already in $venv"
  exit 0
fi
echo "install_test_frameworks: $tensorflow into $venv"
"$venv/bin/pip" install --quiet --disable-pip-version-check "$tensorflow"
