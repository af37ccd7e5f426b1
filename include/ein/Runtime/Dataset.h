// Training data for `einc train`: a memory-mapped token stream (raw `.bin`
// or 1-D `.npy`) cut into windows, or an N-D `.npy` whose rows are samples,
// drawn into batches sequentially or by a documented counter-based rule.
#pragma once

#include "ein/Runtime/HostTensor.h"
#include "ein/Support/Error.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace ein {
namespace runtime {

/// How the samples of a batch are chosen (docs/training.md, "Data").
enum class SampleOrder {
  /// Sample c (the c-th sample drawn, counted from 0 over the whole run)
  /// starts at window c * stride (streams) or is row c (rows), wrapping
  /// around at the end of the data.
  Sequential,
  /// Sample c starts at (or is row) splitmix64(seed, c) mod (the number of
  /// starts): see sampleHash.
  Random,
};

/// The documented hash of sample `counter` under `seed`: splitmix64's
/// finaliser of seed + (counter + 1) * 0x9E3779B97F4A7C15 (mod 2^64):
///   z ^= z >> 30; z *= 0xBF58476D1CE4E5B9; z ^= z >> 27;
///   z *= 0x94D049BB133111EB; z ^= z >> 31.
uint64_t sampleHash(uint64_t seed, uint64_t counter);

/// A dataset file mapped read-only (never read whole): a flat array of
/// elements of one integer or float type with a shape (a raw `.bin` is 1-D).
/// Moves, does not copy; unmaps when destroyed.
class Dataset {
public:
  /// Opens `path`: a file whose name ends in `.npy` as a .npy file (C order,
  /// or Fortran order when 1-D; dtypes <u1 |u1 <u2 <u4 |i1 <i2 <i4 <i8 <f4
  /// <f8, '=' accepted as little-endian), any other file as raw
  /// little-endian elements of `rawType` ("u8", "u16", "u32", "i8", "i16",
  /// "i32", "i64", "f32", "f64"; nanoGPT's `.bin` files are u16). The file
  /// is mmap'ed (PROT_READ, MAP_PRIVATE) once and only the .npy header is
  /// parsed here. A usage error naming the file for a file that cannot be
  /// opened or mapped (a directory, a FIFO), a malformed .npy header, an
  /// unsupported dtype (bool, f16, u64, objects, big-endian), Fortran-order
  /// data of rank >= 2, a 0-d array, a data size that differs from the
  /// shape's (truncated or trailing bytes; the shape's byte size is checked
  /// for overflow), a raw file whose size is not a multiple of the element
  /// size, an empty file or dataset (a zero dim), or a raw file without
  /// `rawType` (and a `.npy` with one that differs from the file's: say
  /// which).
  static ErrorOr<Dataset> open(const std::string &path,
                               const std::string &rawType = "");

  /// The file's shape: {elements} for a raw file or a 1-D .npy.
  const std::vector<int64_t> &shape() const;
  /// "u16", "f32", ... (the element type's name, as open() spells it).
  const std::string &elementName() const;
  const std::string &path() const;
  /// Whether the file is 1-D (a token stream, cut into windows).
  bool isStream() const { return shape().size() == 1; }

  /// The samples `batch` (a tensor of the parameter's storage type and
  /// shape, C order) can be filled with from elements [begin, end) of the
  /// first dim (a split: train is [0, n - held), validation [n - held, n)):
  ///  - a stream: batch has shape {B, W}; each row is a window of W
  ///    consecutive elements; the starts are begin, begin + 1, ...,
  ///    end - W, i.e. (end - begin - W + 1) starts;
  ///  - rows: batch has shape {B, rest...} where rest is the file's shape
  ///    after its first dim; each of the end - begin rows is a sample.
  /// A usage error (naming the file, the parameter's shape and the split's
  /// length) when the batch's rank/trailing dims do not fit, or when the
  /// split holds no whole sample (a stream shorter than one window).
  ErrorOr<int64_t> sampleCount(const HostTensor &batch, int64_t begin,
                               int64_t end) const;

  /// Fills the B samples of `batch` (see sampleCount): sample b is number
  /// firstSample + b of the run's sample sequence, chosen by `order` from
  /// the split's starts (Sequential: start index (c * stride) mod starts for
  /// streams, with stride = max(W - 1, 1), and c mod rows for rows; Random:
  /// sampleHash(seed, c) mod starts / rows). `starts` counts from the
  /// split's first element or row (`begin`), and (c * stride) mod starts is
  /// exact (computed in 128 bits). Elements are converted to batch.type:
  /// integers to i32/i64 (an error naming the file, the element's flat
  /// index, its value and type when it does not fit), floats to f32/f64
  /// (f64 to f32 rounds to nearest as numpy's astype does; a finite value
  /// beyond f32 is an error), integers to floats only when exact (2^24 + 1
  /// into f32 is an error); float data into an integer batch, and bool,
  /// f16, bf16 and fp8 batches, are refused. The batch must be a dense
  /// C-order tensor. Returns the element index (into the flat file) of each
  /// sample's first element, for logs and tests.
  ErrorOr<std::vector<int64_t>> fill(HostTensor &batch, int64_t begin,
                                     int64_t end, SampleOrder order,
                                     uint64_t seed, uint64_t firstSample) const;

  Dataset(Dataset &&) noexcept;
  Dataset &operator=(Dataset &&) noexcept;
  ~Dataset();

private:
  struct Impl;
  explicit Dataset(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl;
};

} // namespace runtime
} // namespace ein
