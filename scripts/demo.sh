#!/usr/bin/env bash
# Installs what is missing, builds einc, and reports the cost of the
# attention example: the project's main job.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build --target einc
./build/bin/einc report examples/attention.ein \
  --dim batch=16 --dim seq=2048 --dim seq2=2048 --dim d=128 --device h100
