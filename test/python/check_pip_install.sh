#!/usr/bin/env bash
# `pip install` of the repository into a fresh venv, shipping the library and
# chorusrun this build made (CHORUS_PYTHON_PREBUILT: nothing is compiled
# twice), then used as a user would: chorusrun from the venv's PATH runs the
# NumPy example and a chorus.torch allreduce at 2 ranks, with no
# PYTHONPATH or CHORUS_LIBRARY pointing back into the checkout.
#   check_pip_install.sh PYTHON SOURCE_DIR BUILD_DIR
set -euo pipefail
py="$1" src="$2" build="$3"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
"$py" -m venv --system-site-packages "$work/venv"
CHORUS_PYTHON_PREBUILT="$build" SKBUILD_BUILD_DIR="$work/skbuild" \
  "$work/venv/bin/pip" install --quiet --disable-pip-version-check "$src"
unset PYTHONPATH CHORUS_LIBRARY CHORUS_BUILD_DIR
export PATH="$work/venv/bin:$PATH"
[[ "$(command -v chorusrun)" == "$work/venv/bin/chorusrun" ]] || { echo "chorusrun is not the venv's"; exit 1; }
cd "$work"
python -c "import chorus, sys; p = str(chorus.library_path); sys.exit(0 if p.startswith('$work') else 'library from ' + p)"
if compgen -G "$build/python/chorus/_fast.*.so" > /dev/null; then  # shipped with the build: in use
  python -c "from chorus._library import fast; import sys; sys.exit(0 if fast and fast.__file__.startswith('$work') else 'no _fast')"
fi
chorusrun --version
chorusrun -np 2 python "$src/examples/python/numpy_allreduce.py" | grep "all results right"
if python -c "import torch" 2> /dev/null; then
  chorusrun --tcp -np 2 python -c "
import torch, chorus.torch as hvd
hvd.init()
assert hvd.allreduce(torch.ones(3), op=hvd.Sum).tolist() == [2.0] * 3
print('chorus.torch ok on rank', hvd.rank())"
fi
echo "check_pip_install: ok"
