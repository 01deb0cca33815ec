#!/usr/bin/env bash
# Installs the Debian 12 packages Chorus builds and tests with (as root).
# Skips apt entirely when everything is already there, so repeated runs
# (and CI on a warm machine) cost nothing. docs/dependencies.md says why
# each package is needed.
set -euo pipefail

packages=(
  build-essential cmake ccache   # compiler, build system, compile cache (builds are slow on 2 cores)
  openmpi-bin libopenmpi-dev     # mpirun and MPI: control plane and CPU data plane
  catch2                         # unit and multi-rank tests (Catch2 v2)
  libboost-program-options-dev   # chorusrun: command line and config-file parsing
  libssl-dev                     # libcrypto: the TCP handshake's HMAC-SHA256 and nonces, chorusrun's per-job secret
  iproute2                       # ip netns: the launcher test plays two hosts in network namespaces
  libtorch-dev                   # LibTorch: the chorus::torch adapter and the training examples
  zlib1g-dev                     # gzread: the Fashion-MNIST example reads the gzipped IDX files directly
  dataset-fashion-mnist          # the main job's data, in /usr/share/datasets/fashion-mnist
  python3-torch                  # PyTorch DDP, the reference in scripts/compare_ddp.sh; chorus.torch's tests
  python3-torchvision            # the Python examples (torchvision.datasets, models.resnet18), as the article's
  python3-numpy python3-pytest   # the Python package's core (NumPy arrays) and its tests (test/python)
  python3-dev                    # Python.h: chorus._fast, the package's compiled hot path (python/CMakeLists.txt)
  python3-venv python3-pip       # pip install of the package into a venv (test/python/check_pip_install.sh)
  python3                        # scripts/check_code_shape.py (ctest code_shape), standard library only
  clang-14 libclang-rt-14-dev    # clang++ with libFuzzer: the decoders' fuzz tests (test/fuzz); the main build stays g++
  clang-format                   # scripts/check_format.sh: the changed lines against .clang-format (run_tests.sh)
  libcurl4-openssl-dev           # libcurl: the etcd client's HTTP/1.1 and TLS (core/src/rendezvous/etcd_client.cc)
  nlohmann-json3-dev             # nlohmann/json (header only): the etcd client's JSON (core/src/rendezvous/etcd_json.cc)
  etcd-server                    # etcd: the elastic rendezvous without chorusrun, against a real server (test/elastic/elastic_etcd*.sh)
  openssl                        # the openssl tool: elastic_etcd_tls.sh makes its CA and certificates with it
  openjdk-17-jre-headless        # java for Spark: chorus.spark's tests run a local Spark (test/spark)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  echo "install_deps: all packages present"
  exit 0
fi
if [[ $(id -u) -ne 0 ]]; then
  echo "install_deps: missing packages: ${missing[*]}; run as root or install them yourself" >&2
  exit 1
fi
echo "install_deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}"
