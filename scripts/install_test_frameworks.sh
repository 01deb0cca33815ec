#!/usr/bin/env bash
# The frameworks the tests use from PyPI, into $root/.venv: one venv for all
# of them, over Debian's python3 (--system-site-packages: it sees Debian's
# torch 1.13). One pip call, pinned, so the set resolves together:
#   TensorFlow (CHORUS_TENSORFLOW_PIP, by default tensorflow-cpu 2.17, the
#     newest whose wheels take numpy 1.x, which Debian's torch needs);
#   jax and jaxlib 0.5.3 (CHORUS_JAX_PIP; the newest whose ml_dtypes
#     agrees with TensorFlow 2.17's) and optax 0.2.4, for chorus.jax;
#   numpy 1.26.4 (jax 0.5 needs >= 1.25; Debian's torch, built against
#     1.24, runs on any 1.x), ml_dtypes 0.4.1 and scipy 1.11.4 to hold it;
#   pyspark 3.5.3, for chorus.spark (with the JRE install_deps.sh installs);
#   ray[train] 2.60.0, for chorus.ray, with pandas 2.2.3 and pyarrow 20.0.0
#     (the newest that take numpy 1.x).
# Skips pip when the venv already has them all (CI on a warm machine).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
venv="${CHORUS_VENV:-$root/.venv}"
tensorflow="${CHORUS_TENSORFLOW_PIP:-tensorflow-cpu==2.17.1}"
jax="${CHORUS_JAX_PIP:-jax==0.5.3}"
wanted=("$tensorflow" "$jax" "jaxlib==${jax#*==}" "optax==0.2.4" "numpy==1.26.4" "ml_dtypes==0.4.1"
        "scipy==1.11.4" "pyspark==3.5.3" "ray[train]==2.60.0" "pandas==2.2.3" "pyarrow==20.0.0")
[[ -x "$venv/bin/python" ]] || /usr/bin/python3 -m venv --system-site-packages "$venv"
missing="$("$venv/bin/python" - "${wanted[@]}" <<'PY'
import importlib.metadata as m, sys
for want in sys.argv[1:]:
    name, version = want.split("==")
    name = name.split("[")[0]  # ray[train]: the extra is not in the distribution's name
    names = ("tensorflow-cpu", "tensorflow") if name.startswith("tensorflow") else (name,)
    have = None
    for n in names:
        try:
            have = m.version(n); break
        except m.PackageNotFoundError:
            pass
    if have != version:
        print(want)
PY
)"
if [[ -z "$missing" ]]; then
  echo "install_test_frameworks: ${wanted[*]} already in $venv"
  exit 0
fi
echo "install_test_frameworks: ${wanted[*]} into $venv (missing: $(echo $missing))"
"$venv/bin/pip" install --quiet --disable-pip-version-check "${wanted[@]}"
