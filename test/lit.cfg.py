# -*- Python -*-
# lit configuration for ein: `ninja -C build check-ein`, or
# `lit build/test` (the site config in the build tree loads this file).

import os

import lit.formats
from lit.llvm import llvm_config

config.name = "ein"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".ein", ".test"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ein_obj_root, "test")

# test/.lit_test_times.txt (seconds per test, from a run of the whole suite
# on the 2-core machine) lets lit start the longest tests first in a fresh
# build, where build/test/ has no times yet: in name order the corpora
# (run/) started last and left a worker idle at the end. lit rewrites the
# copy in build/test/ after every run and prefers it.
# Inputs/ hold files that tests read; helper scripts are not tests.
config.excludes = ["Inputs", "CMakeLists.txt", "README.txt", "lit.cfg.py",
                   "lit.site.cfg.py"]

# `%`-substitutions first: the tool substitutions below rewrite bare tool
# names and must not see the `einc` inside `%einc`.
einc = os.path.join(config.ein_tools_dir, "einc")
unit_tests = os.path.join(config.ein_tools_dir, "EinUnitTests")
config.substitutions.append(("%PATH%", config.environment["PATH"]))
# `--sample N %rotate` on an execution corpus: CI runs every N-th case, from
# an offset that moves with every commit (run_corpus.py --offset rotate), so
# N commits cover every case; `lit --param ein_full=1` (scripts/test.sh
# --full) runs them all. Every case still runs fused in every run
# (corpus.test takes no sample); each variant names its N and why.
ein_full = lit_config.params.get("ein_full", "0") == "1"
config.substitutions.append(
    ("%rotate", "--sample 1" if ein_full else "--offset rotate"))
if ein_full:
    config.available_features.add("ein-full")
# The differential tester's sample (test/difftest): a fixed seed's 100
# programs in CI, 2000 with --full.
config.substitutions.append(
    ("%difftest_sample",
     "--full" if ein_full else "--seed 1 --count 100 --cuda-every 10"))
config.substitutions.append(("%python", config.python_executable))
config.substitutions.append(("%ein_src_root", config.ein_src_root))
# `%einc` always names the driver, so a test that needs it fails clearly when
# it is not built; the `einc` feature says whether it is.
config.substitutions.append(("%einc", einc))
config.substitutions.append(("%ein-unittests", unit_tests))
if os.path.exists(einc):
    config.available_features.add("einc")
if os.path.exists(unit_tests):
    config.available_features.add("unittests")
# MPI ranks (issue 30): `mpirun` on the PATH and a build with MPI (its
# collectives' check binary built). A host without them reports the tests
# UNSUPPORTED.
import shutil
comm_check = os.path.join(config.ein_tools_dir, "EinCommCheck")
config.substitutions.append(("%ein-comm-check", comm_check))
config.substitutions.append(
    ("%mpirun", "mpirun --oversubscribe --allow-run-as-root"))
if shutil.which("mpirun") and os.path.exists(comm_check):
    config.available_features.add("mpirun")
# The lowering fuzz target's replayer (test/fuzz/CMakeLists.txt), built by
# the main build.
fuzz_replay_lowering = os.path.join(config.ein_tools_dir,
                                    "ein-fuzz-replay-lowering")
config.substitutions.append(("%ein-fuzz-replay-lowering", fuzz_replay_lowering))
if os.path.exists(fuzz_replay_lowering):
    config.available_features.add("fuzz-replay")
api_unit_tests = os.path.join(config.ein_tools_dir, "EinAPITests")
config.substitutions.append(("%ein-api-unittests", api_unit_tests))
if os.path.exists(api_unit_tests):
    config.available_features.add("api-unittests")
api_oracle = os.path.join(config.ein_tools_dir, "EinAPIOracle")
config.substitutions.append(("%ein-api-oracle", api_oracle))
if os.path.exists(api_oracle):
    config.available_features.add("api-oracle")
api_no_fork = os.path.join(config.ein_tools_dir, "EinAPINoFork")
config.substitutions.append(("%ein-api-no-fork", api_no_fork))
if os.path.exists(api_no_fork):
    config.available_features.add("api-no-fork")
api_mpi_check = os.path.join(config.ein_tools_dir, "EinAPIMPICheck")
config.substitutions.append(("%ein-api-mpi-check", api_mpi_check))
if os.path.exists(api_mpi_check):
    config.available_features.add("api-mpi-check")
api_tsan = os.path.join(config.ein_tools_dir, "EinAPITSanTests")
config.substitutions.append(("%ein-api-tsan", api_tsan))
if os.path.exists(api_tsan):
    config.available_features.add("api-tsan")
# `cmake --install` of this build and an outside CMake project built against
# it (test/cpp-api): the build's own cmake, C++ compiler and generator.
config.substitutions.append(("%ein_obj_root", config.ein_obj_root))
config.substitutions.append(("%cmake_generator_flags",
                             '-G "%s" -DCMAKE_MAKE_PROGRAM="%s"' %
                             (config.cmake_generator, config.cmake_make_program)))
config.substitutions.append(("%cmake", config.cmake_command))
# `%cxx20`: the build's C++ compiler in C++20 mode, for the compile-time
# pattern tests of ein/API/Static.h (test/cpp-api: -fsyntax-only, no link).
# Before `%cxx`: lit substitutes in order, and `%cxx` is a prefix of it.
config.substitutions.append(("%cxx20", config.cxx_compiler + " -std=c++20"))
if config.cxx_compiler and os.path.exists(config.cxx_compiler):
    config.available_features.add("cxx20")
config.substitutions.append(("%cxx", config.cxx_compiler))
if config.ein_api_found and os.path.exists(config.cmake_command):
    config.available_features.add("ein-api-install")
if config.cuda_found:
    config.available_features.add("cuda")
# The CUDA runtime's tests in emulation (unittests/CUDA*.cpp).
cuda_runtime_tests = os.path.join(config.ein_tools_dir, "EinCUDARuntimeTests")
cuda_convert_dump = os.path.join(config.ein_tools_dir, "EinCUDAConvertDump")
config.substitutions.append(("%ein-cuda-runtime-tests", cuda_runtime_tests))
config.substitutions.append(("%ein-cuda-convert-dump", cuda_convert_dump))
if os.path.exists(cuda_runtime_tests):
    config.available_features.add("cuda-runtime-tests")
if os.path.exists(cuda_convert_dump):
    config.available_features.add("cuda-convert-dump")
# nvcc compiles the CUDA runtime (no GPU needed): the toolkit's usual place.
nvcc = "/usr/local/cuda/bin/nvcc"
if os.path.exists(nvcc):
    config.available_features.add("nvcc")
    config.substitutions.append(("%nvcc", nvcc))
# EIN_CPU / EIN_CPU_FEATURES (einc's defaults for --cpu, --cpu-features)
# reach the tests, so that the suite can be run as for another CPU:
# `EIN_CPU=x86-64-v3 lit build/test` runs it as an AVX2 host would.
for variable in ("EIN_CPU", "EIN_CPU_FEATURES"):
    if os.environ.get(variable):
        config.environment[variable] = os.environ[variable]
# The host's vector ISA: tests that execute code compiled for a named CPU
# (--cpu x86-64-v4) need it (REQUIRES: avx512); emit-level tests pin a CPU
# instead and run on every host.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        flags = next((l for l in cpuinfo if l.startswith("flags")), "").split()
except OSError:
    flags = []
if "avx512f" in flags:
    config.available_features.add("avx512")
if "avx2" in flags:
    config.available_features.add("avx2")
if "avx512fp16" in flags:
    config.available_features.add("avx512fp16")
if "avx512_bf16" in flags:
    config.available_features.add("avx512bf16")
if "avx512_vnni" in flags:
    config.available_features.add("avx512vnni")
# An NVIDIA GPU on this machine (the CUDA target's `einc run` needs one).
if os.path.exists("/dev/nvidiactl"):
    config.available_features.add("nvidia-gpu")
# mlir-cpu-runner and its runtime libraries (LLVM's lib/, next to its bin/)
# run hand-written memref IR lowered by `ein-opt --ein-lower-buffers-to-llvm`.
llvm_lib_dir = os.path.normpath(os.path.join(config.llvm_tools_dir, "..", "lib"))
config.substitutions.append(("%llvm_lib_dir", llvm_lib_dir))
config.substitutions.append(
    ("%llvm_objdump", os.path.join(config.llvm_tools_dir, "llvm-objdump")))
if os.path.exists(os.path.join(config.llvm_tools_dir, "mlir-cpu-runner")) and all(
        os.path.exists(os.path.join(llvm_lib_dir, lib)) for lib in
        ["libmlir_c_runner_utils.so", "libmlir_runner_utils.so", "libomp.so"]):
    config.available_features.add("mlir-cpu-runner")

# FileCheck, not, count from LLVM's tools directory; ein-opt from the build.
# The build's bin/ is on PATH too, so a bare `einc` also runs the driver.
llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)
llvm_config.with_environment("PATH", config.ein_tools_dir, append_path=True)
llvm_config.add_tool_substitutions(
    ["ein-opt"], [config.ein_tools_dir, config.llvm_tools_dir])
