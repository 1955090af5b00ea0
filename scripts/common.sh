# Shared by scripts/test and scripts/demo: install what is missing, configure and build
# incrementally in build/. Source it; it defines mimodet_build.
set -euo pipefail

MIMODET_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
MIMODET_BUILD=${MIMODET_BUILD:-$MIMODET_ROOT/build}
# GNU Radio's Python on Debian; a pyenv python3 earlier on PATH cannot import gnuradio.
MIMODET_PYTHON=${MIMODET_PYTHON:-/usr/bin/python3}

MIMODET_DEBS="cmake make g++ git gnuradio-dev libeigen3-dev pybind11-dev python3-numpy
  libgtest-dev libspdlog-dev libfmt-dev libvolk2-dev python3-matplotlib file"

mimodet_install_deps() {
  local missing=() p
  for p in $MIMODET_DEBS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "== installing Debian packages: ${missing[*]}"
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq \
    "${missing[@]}" >/dev/null
}

mimodet_build() {
  mimodet_install_deps
  local args=(-DCMAKE_BUILD_TYPE=Release -DPYTHON_EXECUTABLE="$MIMODET_PYTHON")
  # CI narrows the CUDA architectures to save build time (MIMODET_CUDA_ARCHS=90).
  [ -n "${MIMODET_CUDA_ARCHS:-}" ] && args+=(-DCMAKE_CUDA_ARCHITECTURES="$MIMODET_CUDA_ARCHS")
  if [ ! -f "$MIMODET_BUILD/CMakeCache.txt" ] || [ -n "${MIMODET_CUDA_ARCHS:-}" ]; then
    echo "== configuring $MIMODET_BUILD"
    cmake -S "$MIMODET_ROOT" -B "$MIMODET_BUILD" "${args[@]}" >/dev/null
  fi
  echo "== building"
  cmake --build "$MIMODET_BUILD" -j "$(nproc)"
}
