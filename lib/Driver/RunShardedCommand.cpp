// `einc run --ranks N [--simulate]` of a sharded program
// (docs/distributed.md §4): launches the MPI job (or N simulated ranks),
// gives each rank its blocks of the inputs, runs it (RunSharded.cpp) and
// assembles the results on rank 0.
#include "ShardedBlocks.h"
#include "ShardedProgram.h"
#include "ein/Driver/Run.h"
#include "ein/Driver/Train.h"
#include "ein/Runtime/Communicator.h"
#include "ein/Support/Hash.h"
#include "ein/Syntax/DiagnosticError.h"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <thread>

namespace ein {

ErrorOr<void> checkSimulatedTarget(bool simulate, int64_t ranks,
                                   const std::string &target) {
  // Simulated ranks share the process's device and its default stream: on
  // a GPU one rank's NCCL call would wait there behind another's.
  if (simulate && ranks > 1 && target == "cuda")
    return Error::usage(
        "--simulate with --ranks above 1 on --target=cuda is not supported "
        "yet: simulated ranks would share the GPU's default stream, where "
        "one rank's NCCL call waits behind another's; run MPI ranks "
        "(without --simulate) or --target=cuda-emulated");
  return {};
}

namespace {

/// `check` with the sizes the inputs give their parameters' named dims,
/// as --dim would bind them: for a layout that needs them (a rearrange
/// moving a split off a dim's major position; an all-gather or an
/// all-to-all as they divide). The parameters are read from a check on a
/// mesh of one rank per axis, where no split moves. Null when that check
/// or the inputs fail (the caller reports the first check's error, else
/// the second's).
std::optional<CheckOptions> withInputSizes(const Module &module,
                                           const SourceFile &file,
                                           const CheckOptions &check,
                                           const RunOptions &options) {
  CheckOptions probe = check;
  probe.onlyFunction = options.function;
  probe.loopsMayStaySymbolic = true;
  for (const MeshDecl &mesh : module.meshes)
    for (auto &[axis, loc] : mesh.axes)
      probe.meshSizes[axis] = 1;
  DiagnosticEngine diags(file);
  CheckedModule checked = checkModule(module, probe, diags);
  const CheckedFunction *fn = checked.find(options.function);
  if (diags.hadError() || !fn)
    return std::nullopt;
  auto inputs = readInputs(*fn, options.function, options.inputs);
  if (!inputs)
    return std::nullopt;
  std::vector<std::string> names;
  std::vector<std::vector<int64_t>> shapes;
  for (size_t i = 0; i < fn->params.size() && i < inputs->size(); ++i) {
    names.push_back(fn->values[fn->params[i]].name);
    shapes.push_back((*inputs)[i].shape);
  }
  EntryBinding binding = bindEntryShapes(*fn, names, shapes);
  if (!binding.ok || !binding.packRanks.empty())
    return std::nullopt;
  CheckOptions sized = check;
  std::set<std::string> axes(checked.meshAxes.begin(), checked.meshAxes.end());
  for (const auto &[name, size] : binding.dims)
    if (!axes.count(name) && !isAnonymousName(name) &&
        !checked.dims.count(name))
      sized.dimOverrides[name] = size;
  return sized;
}

} // namespace

ErrorOr<runtime::HostTensor> cutBlock(const ShardedProgram &program,
                                      unsigned value,
                                      const runtime::HostTensor &whole,
                                      const std::vector<int64_t> &coord) {
  std::vector<int64_t> offset;
  auto shape = program.blockOf(value, whole.shape, coord, offset);
  auto block = runtime::HostTensor::create(whole.type, shape);
  if (!block)
    return block.error();
  copyBlock(const_cast<runtime::HostTensor &>(whole), *block, offset, true);
  return block;
}

ErrorOr<runtime::HostTensor>
gatherBlocks(const ShardedProgram &program, Communicator &world, unsigned value,
             const runtime::HostTensor &block,
             const std::vector<int64_t> &wholeShape, bool everyRank) {
  int64_t count = block.numElements();
  std::vector<uint8_t> all(size_t(count) * block.elementBytes() *
                           size_t(world.size()));
  if (auto gathered =
          world.allGather(block.data.data(), all.data(), block.type, count);
      !gathered)
    return gathered.error();
  if (!everyRank && world.rank() != 0)
    return runtime::HostTensor();
  auto whole = runtime::HostTensor::create(block.type, wholeShape);
  if (!whole)
    return whole.error();
  for (int64_t q = 0; q < world.size(); ++q) {
    std::vector<int64_t> offset;
    auto shape =
        program.blockOf(value, whole->shape, program.coordinate(q), offset);
    if (shape != block.shape)
      return Error::program(fmt::format(
          "the block of '{}' on rank {} has not the shape of rank {}'s",
          program.bfn->values[value].name, q, world.rank()));
    runtime::HostTensor theirs = block;
    std::memcpy(theirs.data.data(), all.data() + size_t(q) * theirs.data.size(),
                theirs.data.size());
    copyBlock(*whole, theirs, offset, false);
  }
  return whole;
}

ErrorOr<void>
runSimulatedRanks(int64_t ranks,
                  const std::function<ErrorOr<void>(Communicator &)> &run) {
  auto comms = simulatedRanks(int(ranks));
  std::vector<std::optional<Error>> errors(comms.size());
  std::vector<std::thread> threads;
  for (size_t r = 0; r < comms.size(); ++r)
    threads.emplace_back([&, r] {
      if (auto ran = run(*comms[r]); !ran)
        errors[r] = ran.error();
    });
  for (std::thread &t : threads)
    t.join();
  // The rank's own error before those of the ranks that saw it fail.
  for (auto &e : errors)
    if (e && e->message.find("another rank failed") == std::string::npos)
      return *e;
  for (auto &e : errors)
    if (e)
      return *e;
  return {};
}

ErrorOr<void> runSharded(const SourceFile &file, const Module &module,
                         const CheckOptions &check, const RunOptions &options,
                         std::ostream &out) {
  // MPI ranks: outside mpirun, launch the job (this command again under
  // `mpirun -n N`, as einc train --ranks does); each rank then runs below.
  if (!options.simulate && launcherWorldSize() == 0)
    return launchRanks(options.ranks, options.argv);
  if (auto ok =
          checkSimulatedTarget(options.simulate, options.ranks, options.target);
      !ok)
    return ok.error();
  if (options.sizeGeneric)
    return Error::usage("--size-generic is not supported yet by a sharded "
                        "run (--ranks): each part is compiled for its "
                        "blocks' sizes");

  // Inputs, whole, read once the function's parameters are known.
  std::vector<runtime::HostTensor> inputs;
  auto prepared = prepareShardedSized(
      file, module, check, options.function, options.cpu, options.jit,
      [&](const CheckedFunction &fn,
          int64_t product) -> ErrorOr<std::vector<std::vector<int64_t>>> {
        if (product != options.ranks)
          return Error::usage(fmt::format(
              "--ranks {} does not match the mesh ({} rank(s): the product "
              "of its axes' sizes)",
              options.ranks, product));
        auto read = readInputs(fn, options.function, options.inputs);
        if (!read)
          return read.error();
        inputs = std::move(*read);
        std::vector<std::vector<int64_t>> shapes;
        for (runtime::HostTensor &t : inputs) {
          t = t.toCOrder();
          shapes.push_back(t.shape);
        }
        if (options.outputs.size() != fn.results.size())
          return Error::usage(fmt::format(
              "function '{}' returns {} value(s): give one --out for each "
              "(got {})",
              options.function, fn.results.size(), options.outputs.size()));
        return shapes;
      },
      [&] { return withInputSizes(module, file, check, options); },
      options.target);
  if (!prepared)
    return prepared.error();
  const ShardedProgram &p = **prepared;
  const CheckedFunction *bfn = p.bfn;

  // One rank: its blocks of the inputs, its part of the run, then the
  // results' blocks gathered to rank 0, which assembles them.
  std::vector<runtime::HostTensor> results(bfn->returns.size());
  auto runRank = [&](Communicator &world) -> ErrorOr<void> {
    int64_t rank = world.rank();
    std::vector<int64_t> coord = p.coordinate(rank);
    std::vector<runtime::HostTensor> blocks;
    for (size_t i = 0; i < inputs.size(); ++i) {
      auto block = cutBlock(p, bfn->params[i], inputs[i], coord);
      if (!block)
        return block.error();
      blocks.push_back(std::move(*block));
    }
    auto local = runShardedRank(p, world, std::move(blocks));
    if (!local)
      return local.error();
    // The results: each rank's block gathered, assembled on rank 0.
    for (size_t k = 0; k < bfn->returns.size(); ++k) {
      auto whole = gatherBlocks(p, world, bfn->returns[k], (*local)[k],
                                p.wholeBound.resultShapes[k], false);
      if (!whole)
        return whole.error();
      if (rank == 0)
        results[k] = std::move(*whole);
    }
    return {};
  };

  // --time: every rank runs again, kTimedRuns times, each from a barrier
  // (an all-reduce); rank 0's wall clock to its assembled results (which
  // wait for every rank's blocks) is a run's time.
  constexpr int kTimedRuns = 5;
  std::vector<double> seconds;
  auto runTimed = [&](Communicator &world) -> ErrorOr<void> {
    if (auto ran = runRank(world); !ran)
      return ran;
    for (int k = 0; options.time && k < kTimedRuns; ++k) {
      int64_t zero = 0;
      if (auto barrier = world.allReduce(&zero, runtime::StorageType::I64, 1,
                                         ReduceOp::Sum);
          !barrier)
        return barrier;
      auto start = std::chrono::steady_clock::now();
      if (auto ran = runRank(world); !ran)
        return ran;
      if (world.rank() == 0)
        seconds.push_back(std::chrono::duration<double>(
                              std::chrono::steady_clock::now() - start)
                              .count());
    }
    return {};
  };
  auto writeResults = [&]() -> ErrorOr<void> {
    if (options.time && !seconds.empty()) {
      std::sort(seconds.begin(), seconds.end());
      out << fmt::format(
          "time: {:.6g} ms (median of {} runs on {} {} ranks: rank 0 from a "
          "barrier to the assembled results, the collectives included)\n",
          seconds[seconds.size() / 2] * 1e3, seconds.size(), options.ranks,
          options.simulate ? "simulated" : "MPI");
    }
    return writeRunOutputs(*bfn, options, results);
  };
  if (options.simulate) {
    if (auto ran = runSimulatedRanks(options.ranks, runTimed); !ran)
      return ran;
    return writeResults();
  }
  auto world = mpiWorld();
  if (!world)
    return world.error();
  if ((*world)->size() != options.ranks)
    return Error::usage(fmt::format("--ranks {} under an mpirun of {} ranks",
                                    options.ranks, (*world)->size()));
  // Each rank compiled and read the inputs itself: all must run the same
  // einc on the same command line, program and input bytes (a rank given
  // another file of the same name would compute other blocks).
  uint64_t hash = fnv1a(file.text);
  for (const std::string &word : options.argv)
    hash = fnv1a(word + '\n', hash);
  for (const runtime::HostTensor &t : inputs) {
    hash = fnv1a(fmt::format("{} {}\n", runtime::storageName(t.type),
                             fmt::join(t.shape, "x")),
                 hash);
    hash = fnv1a({reinterpret_cast<const char *>(t.data.data()), t.data.size()},
                 hash);
  }
  if (auto same = checkSameRunOnAllRanks(
          **world, hash, "the program, the command line and the inputs");
      !same) {
    abandonMPI();
    return same.error();
  }
  if (auto ran = runTimed(**world); !ran) {
    abandonMPI();
    return ran.error();
  }
  if ((*world)->rank() != 0)
    return {};
  return writeResults();
}

} // namespace ein
