# Shared by scripts/test, scripts/demo and scripts/package: install what is missing,
# configure and build incrementally in build/. Source it; it defines mimodet_build.
#
# Environment:
#   MIMODET_BUILD       build folder (default build/)
#   MIMODET_PYTHON      GNU Radio's Python (default /usr/bin/python3)
#   MIMODET_CUDA_ARCHS  CUDA architectures to compile for, e.g. "90" or "80;90"; it also
#                       reconfigures an existing build folder. Without it (or CMake's
#                       CMAKE_CUDA_ARCHITECTURES / CUDAARCHS in the environment) a new
#                       build folder gets the GPUs present (nvidia-smi), or 90 without one.
#   MIMODET_CMAKE_ARGS  more arguments for a new build folder's configure step
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
  local sudo="" log
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  mkdir -p "$MIMODET_BUILD"
  log="$MIMODET_BUILD/apt.log"
  echo "== installing Debian packages: ${missing[*]}"
  echo "   (with their dependencies; on a fresh machine a few minutes, apt's output: $log)"
  if ! { $sudo apt-get update -q && DEBIAN_FRONTEND=noninteractive $sudo apt-get install \
      -y -q "${missing[@]}"; } >"$log" 2>&1; then
    tail -n 20 "$log"
    echo "== apt-get failed; its whole output is in $log" >&2
    return 1
  fi
}

# The CUDA architectures for a new build folder: the GPUs present, else one (90), so a
# machine without a GPU compiles the CUDA code once instead of once per architecture.
mimodet_cuda_archs() {
  local caps=""
  if command -v nvidia-smi >/dev/null 2>&1; then
    caps=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
      tr -d '. ' | grep -E '^[0-9]+$' | sort -u | paste -sd';' || true)
  fi
  echo "${caps:-90}"
}

mimodet_build() {
  mimodet_install_deps
  local args=(-DCMAKE_BUILD_TYPE=Release -DPYTHON_EXECUTABLE="$MIMODET_PYTHON")
  local archs="${MIMODET_CUDA_ARCHS:-${CMAKE_CUDA_ARCHITECTURES:-${CUDAARCHS:-}}}"
  local fresh=0
  [ -f "$MIMODET_BUILD/CMakeCache.txt" ] || fresh=1
  [ $fresh -eq 1 ] && [ -z "$archs" ] && archs=$(mimodet_cuda_archs)
  [ -n "$archs" ] && args+=(-DCMAKE_CUDA_ARCHITECTURES="$archs")
  # shellcheck disable=SC2206 # word splitting wanted: several -D arguments
  [ $fresh -eq 1 ] && args+=(${MIMODET_CMAKE_ARGS:-})
  if [ $fresh -eq 1 ] || [ -n "${MIMODET_CUDA_ARCHS:-}" ]; then
    echo "== configuring $MIMODET_BUILD"
    cmake -S "$MIMODET_ROOT" -B "$MIMODET_BUILD" "${args[@]}" >/dev/null
  fi
  local cuda
  cuda=$(sed -n 's/^ENABLE_CUDA:BOOL=//p' "$MIMODET_BUILD/CMakeCache.txt")
  if [ $fresh -eq 1 ]; then
    # CPU time of a first build: about 8.5 CPU-minutes with CUDA for one architecture
    # (7.8 measured up to the last link), of which the .cu files take 2.4; each further
    # architecture compiles their device code again, about 2.5 more (psd_cuda.cu and
    # linear_cuda.cu measured for one and four, scaled to all .cu files). In tenths:
    local cpu10=60 n=0
    if [ "$cuda" = ON ]; then
      archs=$(sed -n 's/^CMAKE_CUDA_ARCHITECTURES:[A-Z]*=//p' "$MIMODET_BUILD/CMakeCache.txt")
      n=$(echo "$archs" | tr ';' '\n' | grep -c .)
      cpu10=$((60 + 25 * n))
      echo "== building, with CUDA for architecture(s) $archs (MIMODET_CUDA_ARCHS chooses them)"
    else
      echo "== building, without CUDA"
    fi
    local cores
    cores=$(nproc)
    echo "   first build: about $(((cpu10 + 10 * cores - 1) / (10 * cores))) minutes on" \
      "$cores idle cores, longer on a busy machine; later builds only recompile what changed"
  else
    echo "== building (incremental)"
  fi
  cmake --build "$MIMODET_BUILD" -j "$(nproc)"
}
