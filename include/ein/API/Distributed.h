// The embedded C++ API beyond one process (docs/cpp-api.md, "Ranks";
// docs/distributed.md §6): a communicator of ranks (threads of this process
// or MPI processes), collectives on tensors for users' own loops, and a
// module function with a mesh called on each rank's blocks, as `einc run
// --ranks N` runs it. Includes no MLIR, LLVM or internal ein header.
#pragma once

#include "ein/API/Module.h"

#include <memory>
#include <string>
#include <vector>

namespace ein::api {

namespace detail {
/// One rank's communicator (the runtime's); defined in the library.
struct CommState;
} // namespace detail

/// One rank's view of a group of ranks, as a torch.distributed process
/// group: rank(), size(), and collectives that every rank of the group must
/// call in the same order with tensors of the same dtype and shape. A rank
/// that does not arrive within EIN_COMM_TIMEOUT seconds (default 300) makes
/// the call fail on the others with an error naming it; the group is then
/// broken. Copies share one communicator; use each from one thread at a
/// time (the rank's).
class Communicator {
public:
  /// No communicator (defined() is false); every operation refuses it.
  Communicator() = default;

  /// `n` ranks in this process, one communicator per rank, each to be used
  /// by one thread (as PyTorch's fake process group, JAX's forced host
  /// devices): for tests and for trying a sharded program on one machine.
  static std::vector<Communicator> simulated(int n);
  /// The ranks of the mpirun job this process belongs to (MPI_COMM_WORLD).
  /// Refused by name when the process was not started by mpirun or ein was
  /// built without MPI. MPI is finalized when the last copy is destroyed.
  static Communicator mpi_world();

  /// Whether this is a communicator (not default-constructed).
  bool defined() const { return state_ != nullptr; }
  /// This rank's number, 0 .. size()-1 (-1 when undefined).
  int rank() const;
  /// The number of ranks in the group (0 when undefined).
  int size() const;
  /// "2 simulated ranks", "MPI (4 ranks)", for messages.
  std::string name() const;

  /// Collective: the ranks that pass the same `color` form a new group,
  /// ranked by (`key`, rank), as MPI_Comm_split (a data-parallel group of a
  /// 2-D mesh, say).
  Communicator split(int color, int key) const;

  /// Collective, in place: `t` becomes the sum (max, min) of every rank's
  /// `t` (torch.distributed.all_reduce). f64, f32, f16, bf16, i64, i32
  /// (f16 and bf16 are summed in f32 and rounded once); the sum runs over
  /// the ranks in order, so every rank gets the same bits.
  void all_reduce(const Tensor &t, Reduction op = sum) const;
  /// Collective: every rank's `t` concatenated along `dim` in rank order
  /// (torch's all_gather_into_tensor for dim 0; jax.lax.all_gather with
  /// tiled=True). Any dtype.
  Tensor all_gather(const Tensor &t, int64_t dim = 0) const;
  /// Collective: block `rank()` along `dim` of the sum (max, min) of every
  /// rank's `t` (torch's reduce_scatter_tensor for dim 0; jax.lax.psum_scatter
  /// with tiled=True); `t.shape()[dim]` must divide by size().
  Tensor reduce_scatter(const Tensor &t, Reduction op = sum,
                        int64_t dim = 0) const;
  /// Collective, in place: `t` becomes rank `root`'s `t` on every rank.
  void broadcast(const Tensor &t, int root = 0) const;

  /// For the library.
  explicit Communicator(std::shared_ptr<detail::CommState> state)
      : state_(std::move(state)) {}
  const std::shared_ptr<detail::CommState> &state() const { return state_; }

private:
  std::shared_ptr<detail::CommState> state_;
};

/// Calls `function` of `module` (a file with a `mesh`) on this rank of
/// `comm`: `blocks` holds this rank's block of each input, split by the
/// parameters' layouts (`x: f32["b@dp d"]` gives rank r the rows of its
/// coordinate on dp), ranks laid out row-major over the mesh axes, the last
/// fastest (rank = dp_index * tp + tp_index for `mesh dp, tp`). `mesh`
/// gives every axis's size (`{{"dp", 2}, {"tp", 2}}`); their product must be
/// comm.size(). Every rank of `comm` calls it with the same function, mesh
/// and block shapes (checked: an error names the ranks that differ).
/// Returns this rank's block of each result, by the results' layouts
/// (replicated results whole on every rank): what `einc run --ranks N`
/// computes, the collectives of docs/distributed.md §3 included. CPU
/// tensors only.
std::vector<Tensor> call_sharded(const Module &module,
                                 const std::string &function,
                                 const std::vector<Tensor> &blocks,
                                 const Communicator &comm, const Sizes &mesh);

namespace nothrow {
/// Communicator::simulated, or the error (n < 1).
Result<std::vector<Communicator>> simulated_ranks(int n);
/// Communicator::mpi_world, or why there is none.
Result<Communicator> mpi_world();
/// Communicator::split, or the error.
Result<Communicator> split(const Communicator &comm, int color, int key);
/// Communicator::all_reduce, or the error (a reduction other than sum,
/// max or min, a dtype it does not take, a CUDA tensor, a timeout).
Result<void> all_reduce(const Communicator &comm, const Tensor &t,
                        Reduction op = sum);
/// Communicator::all_gather, or the error.
Result<Tensor> all_gather(const Communicator &comm, const Tensor &t,
                          int64_t dim = 0);
/// Communicator::reduce_scatter, or the error.
Result<Tensor> reduce_scatter(const Communicator &comm, const Tensor &t,
                              Reduction op = sum, int64_t dim = 0);
/// Communicator::broadcast, or the error.
Result<void> broadcast(const Communicator &comm, const Tensor &t, int root = 0);
/// call_sharded, or the error (on every rank: one rank's bad input stops
/// the others with an error naming that rank, not a timeout).
Result<std::vector<Tensor>> call_sharded(const Module &module,
                                         const std::string &function,
                                         const std::vector<Tensor> &blocks,
                                         const Communicator &comm,
                                         const Sizes &mesh);
} // namespace nothrow

inline std::vector<Communicator> Communicator::simulated(int n) {
  return nothrow::simulated_ranks(n).value();
}
inline Communicator Communicator::mpi_world() {
  return nothrow::mpi_world().value();
}
inline Communicator Communicator::split(int color, int key) const {
  return nothrow::split(*this, color, key).value();
}
inline void Communicator::all_reduce(const Tensor &t, Reduction op) const {
  nothrow::all_reduce(*this, t, op).value();
}
inline Tensor Communicator::all_gather(const Tensor &t, int64_t dim) const {
  return nothrow::all_gather(*this, t, dim).value();
}
inline Tensor Communicator::reduce_scatter(const Tensor &t, Reduction op,
                                           int64_t dim) const {
  return nothrow::reduce_scatter(*this, t, op, dim).value();
}
inline void Communicator::broadcast(const Tensor &t, int root) const {
  nothrow::broadcast(*this, t, root).value();
}
inline std::vector<Tensor> call_sharded(const Module &module,
                                        const std::string &function,
                                        const std::vector<Tensor> &blocks,
                                        const Communicator &comm,
                                        const Sizes &mesh) {
  return nothrow::call_sharded(module, function, blocks, comm, mesh).value();
}

} // namespace ein::api
