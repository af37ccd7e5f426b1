#!/usr/bin/env bash
# Installs what ein needs and is missing (Debian 12): LLVM/MLIR 19, fmt,
# GoogleTest, CMake, Ninja, OpenMPI (the CPU ranks of `--ranks`/mpirun),
# clang-19's sanitizer and libFuzzer runtimes (for scripts/fuzz.sh), ccache
# (every build compiles through it: a second clone's build reuses the
# first's objects); then
# the Python test oracles (numpy, einops, opt_einsum, safetensors, torch).
# Safe to run repeatedly: installed packages are skipped.
set -euo pipefail

SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi

packages=(llvm-19-dev libmlir-19-dev mlir-19-tools llvm-19-tools clang-19
          libclang-rt-19-dev
          libfmt-dev zlib1g-dev libgtest-dev libomp-19-dev cmake ninja-build g++ ccache
          python3 openmpi-bin libopenmpi-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi

# Python oracles for the tests (safetensors: the format's reference
# implementation, for test/einc/run-safetensors.test), installed into the interpreter given as $1
# (the one CMake found) or python3.
PY="${1:-python3}"
if ! "$PY" -c "import numpy, einops, opt_einsum, safetensors" >/dev/null 2>&1; then
  echo "setup: installing numpy, einops, opt_einsum and safetensors for $PY"
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip
  fi
  "$PY" -m pip install -q numpy einops opt_einsum safetensors 2>/dev/null ||
    "$PY" -m pip install -q --break-system-packages numpy einops opt_einsum \
      safetensors
fi

# PyTorch: the oracle of ein's optimizer library (test/einc/optim.test steps
# torch.optim's optimizers), installed into the same interpreter.
if ! "$PY" -c "import torch" >/dev/null 2>&1; then
  echo "setup: installing torch for $PY"
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip
  fi
  "$PY" -m pip install -q torch 2>/dev/null ||
    "$PY" -m pip install -q --break-system-packages torch
fi

# jaxtyping with beartype: the run-time shape oracle of the Python corpus
# (test/PyCheck/corpus/mutate.py runs each model and mutant under them).
if ! "$PY" -c "import jaxtyping, beartype" >/dev/null 2>&1; then
  echo "setup: installing jaxtyping and beartype for $PY"
  "$PY" -m pip install -q jaxtyping beartype 2>/dev/null ||
    "$PY" -m pip install -q --break-system-packages jaxtyping beartype
fi

# The Python package's build and tests (docs/python.md): nanobind and
# scikit-build-core (lib/Bindings/Python, pyproject.toml) and pytest
# (test/python, run by scripts/test.sh), into the same interpreter.
if ! "$PY" -c "import nanobind, scikit_build_core, pytest" >/dev/null 2>&1; then
  echo "setup: installing nanobind, scikit-build-core and pytest for $PY"
  if ! "$PY" -m pip --version >/dev/null 2>&1; then
    DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq python3-pip
  fi
  "$PY" -m pip install -q nanobind scikit-build-core pytest 2>/dev/null ||
    "$PY" -m pip install -q --break-system-packages nanobind \
      scikit-build-core pytest
fi
