// Runs the MPI communicator's collectives under mpirun for
// test/Runtime/mpi-collectives.test: every rank writes its inputs and
// outputs as raw files (CASE.in.RANK, CASE.out.RANK) that numpy checks, and
// prints its errors. `--mode exit` makes rank 1 exit between two
// collectives; `--mode hang` makes rank 1 sleep through one (the others
// must report a timeout naming it); `--mode stop` makes rank 1 stop inside
// one (the others must name it as silent).
#include "ein/Runtime/Communicator.h"
#include "ein/Runtime/FloatConvert.h"

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <string>
#include <thread>
#include <unistd.h>
#include <vector>

using namespace ein;
using runtime::StorageType;

namespace {

std::string dir;

template <typename T>
bool save(const std::string &name, int rank, const std::vector<T> &v) {
  std::string path = dir + "/" + name + "." + std::to_string(rank);
  FILE *f = std::fopen(path.c_str(), "wb");
  if (!f)
    return false;
  size_t wrote = std::fwrite(v.data(), sizeof(T), v.size(), f);
  return std::fclose(f) == 0 && wrote == v.size();
}

std::vector<float> input(int rank, size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] =
        static_cast<float>(((rank * 7919 + i * 104729) % 2003) - 1000) / 37.0f;
  return v;
}

int fail(Communicator &c, const char *what, const Error &e) {
  std::printf("rank %d: %s: %s\n", c.rank(), what, e.message.c_str());
  std::fflush(stdout);
  return 1;
}

int collectives(Communicator &c) {
  int r = c.rank(), n = c.size();
  for (ReduceOp op : {ReduceOp::Sum, ReduceOp::Max, ReduceOp::Min}) {
    std::string name = std::string("allreduce_") + reduceOpName(op);
    std::vector<float> x = input(r, 1000);
    save(name + ".in", r, x);
    if (auto e = c.allReduce(x.data(), StorageType::F32, x.size(), op); !e)
      return fail(c, name.c_str(), e.error());
    save(name + ".out", r, x);
  }
  {
    std::vector<uint16_t> b(300);
    std::vector<float> x = input(r, b.size());
    for (size_t i = 0; i < b.size(); ++i)
      b[i] = runtime::floatToBF16Bits(x[i]);
    save("allreduce_bf16.in", r, b);
    if (auto e =
            c.allReduce(b.data(), StorageType::BF16, b.size(), ReduceOp::Sum);
        !e)
      return fail(c, "allreduce_bf16", e.error());
    save("allreduce_bf16.out", r, b);
  }
  {
    std::vector<double> x(50);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = 0.001 * (r + 1) * (double(i) - 20);
    save("allreduce_f64.in", r, x);
    if (auto e =
            c.allReduce(x.data(), StorageType::F64, x.size(), ReduceOp::Sum);
        !e)
      return fail(c, "allreduce_f64", e.error());
    save("allreduce_f64.out", r, x);
  }
  {
    std::vector<float> x = input(r, 7), out(7 * n);
    save("allgather.in", r, x);
    if (auto e = c.allGather(x.data(), out.data(), StorageType::F32, 7); !e)
      return fail(c, "allgather", e.error());
    save("allgather.out", r, out);
  }
  {
    std::vector<float> x = input(r, 5 * n), out(5);
    save("reducescatter.in", r, x);
    if (auto e = c.reduceScatter(x.data(), out.data(), StorageType::F32, 5 * n,
                                 ReduceOp::Sum);
        !e)
      return fail(c, "reducescatter", e.error());
    save("reducescatter.out", r, out);
    std::vector<float> odd(5 * n + 1);
    if (auto e = c.reduceScatter(odd.data(), out.data(), StorageType::F32,
                                 5 * n + 1, ReduceOp::Sum);
        !e && r == 0)
      fail(c, "reducescatter (refused)", e.error());
  }
  {
    std::vector<int32_t> x(3 * n), out(3 * n);
    for (size_t i = 0; i < x.size(); ++i)
      x[i] = r * 1000 + int32_t(i);
    save("alltoall.in", r, x);
    if (auto e = c.allToAll(x.data(), out.data(), StorageType::I32, 3); !e)
      return fail(c, "alltoall", e.error());
    save("alltoall.out", r, out);
  }
  {
    std::vector<double> x(9, r + 0.5);
    save("broadcast.in", r, x);
    if (auto e = c.broadcast(x.data(), StorageType::F64, 9, n - 1); !e)
      return fail(c, "broadcast", e.error());
    save("broadcast.out", r, x);
  }
  {
    // Sub-groups: the even and the odd ranks, each summing its ranks.
    auto sub = c.split(r % 2, r);
    if (!sub)
      return fail(c, "split", sub.error());
    std::vector<int64_t> x = {r};
    if (auto e =
            (*sub)->allReduce(x.data(), StorageType::I64, 1, ReduceOp::Sum);
        !e)
      return fail(c, "split allreduce", e.error());
    x.push_back((*sub)->rank());
    x.push_back((*sub)->size());
    save("split.out", r, x);
  }
  if (auto e = checkSameOnAllRanks(c, 99, "the test"); !e)
    return fail(c, "same hash", e.error());
  if (auto e = checkSameOnAllRanks(c, r == 1 ? 5 : 99, "the test"); !e) {
    if (r == 0)
      fail(c, "differing hash", e.error());
  }
  return 0;
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 2) {
    std::fprintf(stderr,
                 "usage: EinCommCheck OUTDIR [--mode exit|hang|stop]\n");
    return 2;
  }
  dir = argv[1];
  std::string mode =
      argc >= 4 && !std::strcmp(argv[2], "--mode") ? argv[3] : "normal";
  auto world = mpiWorld();
  if (!world) {
    std::printf("error: %s\n", world.error().message.c_str());
    return 2;
  }
  Communicator &c = **world;
  if (mode == "normal")
    return collectives(c);
  float x = 1;
  if (auto e = c.allReduce(&x, StorageType::F32, 1, ReduceOp::Sum); !e)
    return fail(c, "first all-reduce", e.error());
  // stop: every rank enters an all-reduce of 256 MiB, and rank 1 stops
  // (SIGSTOP) 20 ms into it, long before it can end.
  std::vector<float> buffer(mode == "stop" ? 64 << 20 : 1, 1.0f);
  if (c.rank() == 1 && mode == "stop")
    std::thread([] {
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
      std::raise(SIGSTOP);
    }).detach();
  else if (c.rank() == 1) {
    if (mode == "exit")
      _exit(3); // dies without a word to MPI
    std::this_thread::sleep_for(std::chrono::seconds(60));
  }
  auto start = std::chrono::steady_clock::now();
  if (auto e = c.allReduce(buffer.data(), StorageType::F32,
                           int64_t(buffer.size()), ReduceOp::Sum);
      !e) {
    double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
            .count();
    std::printf("rank %d: second all-reduce failed after %.0f s: %s\n",
                c.rank(), s, e.error().message.c_str());
    std::fflush(stdout);
    return 1;
  }
  return 0;
}
