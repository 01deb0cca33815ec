# Sourced by the run_*.sh scripts: installs what is missing, builds, and
# sets up the environment for running ranks here. Defines $root and $build.
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${CHORUS_BUILD_DIR:-$root/build}"
"$root/scripts/install_deps.sh"
"$root/scripts/build.sh"
# Open MPI refuses to run as root unless told it is on purpose.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# The Python package, in .venv (ships this build's library: nothing compiled twice).
"$root/scripts/install_python_package.sh"
