// The embedded C++ API's tensors, in the lecture's model: a shared storage
// plus sizes, strides and an offset. Views share storage; nothing is copied
// unless an operation needs it (docs/cpp-api.md).
#pragma once

#include "ein/API/Types.h"

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace ein::api {

namespace detail {
/// The bytes a tensor's elements live in: owned (reference-counted) or
/// borrowed from the caller (TensorView). Defined in the library.
struct Storage;
} // namespace detail

/// A strided tensor: element (i0, i1, ...) is at data() + (i0 * strides[0] +
/// i1 * strides[1] + ...) elements. Copying a Tensor copies the handle, not
/// the elements (as torch.Tensor): both share the storage.
class Tensor {
public:
  /// No tensor (defined() is false); every operation refuses it.
  Tensor() = default;

  /// A new zero-filled C-order tensor (Result form: nothrow::zeros).
  static Tensor zeros(DType dtype, std::vector<int64_t> shape,
                      Device device = cpu);
  /// A new C-order tensor holding a copy of `count` elements at `data`;
  /// `count` must be the shape's element count.
  static Tensor from_data(DType dtype, std::vector<int64_t> shape,
                          const void *data, size_t count);
  /// A new C-order tensor of the values, of the dtype of T.
  template <class T>
  static Tensor from_vector(const std::vector<T> &values,
                            std::vector<int64_t> shape) {
    return from_data(dtype_of<T>::value, std::move(shape), values.data(),
                     values.size());
  }

  /// Whether this is a tensor (not default-constructed).
  bool defined() const { return storage_ != nullptr; }
  /// The element type.
  DType dtype() const { return dtype_; }
  /// Where the storage lives; operations run on their inputs' device.
  Device device() const { return device_; }
  /// The number of dims (0 for a scalar).
  int64_t rank() const { return static_cast<int64_t>(shape_.size()); }
  /// Sizes, one per dim.
  const std::vector<int64_t> &shape() const { return shape_; }
  /// Strides in elements, one per dim (any integers >= 0).
  const std::vector<int64_t> &strides() const { return strides_; }
  /// Offset of element (0, 0, ...) from the storage's start, in elements.
  int64_t offset() const { return offset_; }
  /// The number of elements.
  int64_t numel() const;
  /// The element (0, 0, ...); the others are at strides from it. A device
  /// pointer for a CUDA tensor.
  void *data() const { return data_; }
  /// data() as T*; raises when T is not the dtype's element type.
  template <class T> T *data_ptr() const {
    if (dtype_of<T>::value != dtype_)
      raise(dtypeMismatch(dtype_of<T>::value));
    return static_cast<T *>(data_);
  }
  /// Whether the elements are dense in C order (strides of dims of size 1
  /// do not matter), as torch's is_contiguous().
  bool is_contiguous() const;
  /// This tensor when is_contiguous(), else a C-order copy.
  Tensor contiguous() const;
  /// A C-order copy, always.
  Tensor clone() const;
  /// Whether both tensors' elements live in the same storage.
  bool shares_storage(const Tensor &other) const {
    return storage_ && storage_ == other.storage_;
  }
  /// A copy on `device`; this tensor when it is there already.
  Tensor to(Device device) const;

  /// Element `index` (one per dim, each in [0, size)); raises on a wrong
  /// count, an index out of range, a T that is not the dtype's, or a CUDA
  /// tensor (copy it with .to(ein::cpu) first).
  template <class T> T &at(std::initializer_list<int64_t> index) const {
    if (dtype_of<T>::value != dtype_)
      raise(dtypeMismatch(dtype_of<T>::value));
    return *static_cast<T *>(elementPointer(index));
  }
  /// Element `index` of any dtype as a double (f16, bf16, fp8 decoded).
  double get(std::initializer_list<int64_t> index) const;
  /// Element `index` of any dtype set from a double (rounded to nearest
  /// even for the float types; an integer or bool dtype needs a value it
  /// holds exactly).
  void set(std::initializer_list<int64_t> index, double value) const;
  /// Element `flat` in C order (numpy's x.flat[flat]) as a double.
  double flat(int64_t flat) const;

  /// "f32[2, 3] strides (3, 1)", for messages.
  std::string describe() const;

  /// For the library: makes a tensor over `storage` (the API's operations
  /// make tensors; users start from zeros, from_data, TensorView, load_npy).
  Tensor(std::shared_ptr<detail::Storage> storage, DType dtype, Device device,
         std::vector<int64_t> shape, std::vector<int64_t> strides,
         int64_t offset);
  /// For the library: the shared storage.
  const std::shared_ptr<detail::Storage> &storage() const { return storage_; }

private:
  /// The element's address; raises on a bad index.
  void *elementPointer(std::initializer_list<int64_t> index) const {
    if (index.size() != shape_.size() || device_ != cpu)
      raise(indexError(index));
    int64_t offset = 0;
    size_t dim = 0;
    for (int64_t i : index) {
      if (i < 0 || i >= shape_[dim])
        raise(indexError(index));
      offset += i * strides_[dim++];
    }
    return static_cast<char *>(data_) + offset * int64_t(itemsize(dtype_));
  }
  ErrorInfo dtypeMismatch(DType as) const;
  ErrorInfo indexError(std::initializer_list<int64_t> index) const;

  std::shared_ptr<detail::Storage> storage_;
  void *data_ = nullptr;
  int64_t offset_ = 0;
  DType dtype_ = f32;
  Device device_ = cpu;
  std::vector<int64_t> shape_, strides_;
};

/// A tensor over memory the caller owns and keeps alive (the API never frees
/// it): `TensorView k{ptr, ein::f32, {8, 256, 512}}`. Strides in elements
/// default to C order. Results that are views of it borrow the same memory.
class TensorView : public Tensor {
public:
  TensorView(void *data, DType dtype, std::vector<int64_t> shape,
             std::vector<int64_t> strides = {});
};

namespace nothrow {
/// A new zero-filled tensor, or the error (a negative size, a size that
/// does not fit in memory).
Result<Tensor> zeros(DType dtype, std::vector<int64_t> shape,
                     Device device = cpu);
/// A tensor over borrowed memory (as TensorView), or the error (a negative
/// size or stride, a rank mismatch between shape and strides). On `cuda`,
/// `data` is device memory (another framework's, through DLPack); an error
/// when there is no CUDA device.
Result<Tensor> view(void *data, DType dtype, std::vector<int64_t> shape,
                    std::vector<int64_t> strides = {}, Device device = cpu);
/// Reads a .npy file (every dtype of the language and numpy's bool; C or
/// Fortran order), with einc run's checks and messages.
Result<Tensor> load_npy(const std::string &path);
/// Writes `t` as a C-order .npy file (created or replaced whole: a failed
/// write leaves no partial file).
Result<void> save_npy(const Tensor &t, const std::string &path);
/// Reads every tensor of a safetensors file (the weights format of the ML
/// ecosystem), by name, with einc run's checks and messages; a tensor of a
/// dtype ein lacks (U8, I16, ...) is an error.
Result<std::map<std::string, Tensor>> load_safetensors(const std::string &path);
/// Writes `tensors` as a safetensors file, in name order, each in its own
/// dtype (bf16 and fp8 included), created or replaced whole.
Result<void> save_safetensors(const std::map<std::string, Tensor> &tensors,
                              const std::string &path);
/// Reads every array of a numpy .npz archive (np.savez, np.savez_compressed),
/// by name, with einc run's checks and messages.
Result<std::map<std::string, Tensor>> load_npz(const std::string &path);
/// Writes `tensors` as an .npz archive np.load reads, in name order (bf16 and
/// fp8 widened to f32: numpy has neither), created or replaced whole.
Result<void> save_npz(const std::map<std::string, Tensor> &tensors,
                      const std::string &path);
/// A new C-order tensor holding a copy of `count` elements at `data`, or the
/// error (`count` is not the shape's element count, a bad shape).
Result<Tensor> from_data(DType dtype, std::vector<int64_t> shape,
                         const void *data, size_t count);
/// A C-order copy of `t`.
Result<Tensor> clone(const Tensor &t);
/// `t` on `device`: itself when it is there, else a C-order copy there.
Result<Tensor> to(const Tensor &t, Device device);
/// The device's name ("cpu", "NVIDIA H100 80GB HBM3 (sm_90)", "emulated
/// CUDA on the CPU"), or why it cannot be used (no GPU).
Result<std::string> device_name(Device device);
/// Element `index` as a double, or the error (bad index).
Result<double> get(const Tensor &t, const std::vector<int64_t> &index);
/// Sets element `index` from a double, or the error (bad index, a value the
/// dtype cannot hold).
Result<void> set(const Tensor &t, const std::vector<int64_t> &index,
                 double value);
/// Element `flat` in C order as a double.
Result<double> flat(const Tensor &t, int64_t flat);
} // namespace nothrow

// The members that can fail raise the nothrow forms' errors.
inline Tensor Tensor::zeros(DType dtype, std::vector<int64_t> shape,
                            Device device) {
  return nothrow::zeros(dtype, std::move(shape), device).value();
}
inline Tensor Tensor::from_data(DType dtype, std::vector<int64_t> shape,
                                const void *data, size_t count) {
  return nothrow::from_data(dtype, std::move(shape), data, count).value();
}
inline Tensor Tensor::contiguous() const {
  return is_contiguous() ? *this : clone();
}
inline Tensor Tensor::clone() const { return nothrow::clone(*this).value(); }
inline Tensor Tensor::to(Device device) const {
  return nothrow::to(*this, device).value();
}
inline double Tensor::get(std::initializer_list<int64_t> index) const {
  return nothrow::get(*this, index).value();
}
inline void Tensor::set(std::initializer_list<int64_t> index,
                        double value) const {
  nothrow::set(*this, index, value).value();
}
inline double Tensor::flat(int64_t index) const {
  return nothrow::flat(*this, index).value();
}
inline TensorView::TensorView(void *data, DType dtype,
                              std::vector<int64_t> shape,
                              std::vector<int64_t> strides)
    : Tensor(nothrow::view(data, dtype, std::move(shape), std::move(strides))
                 .value()) {}

/// Whether CUDA tensors can be made: this machine has a usable NVIDIA GPU
/// and nvcc, or EIN_CUDA=emulated. The first call builds the device's
/// support library (seconds; then cached on disk).
bool cuda_available();

/// Whether the CUDA device is usable and is the emulation (EIN_CUDA=
/// emulated): its "device" memory is host memory, and memory of a real GPU
/// must not reach it.
bool cuda_emulated();

/// Throwing forms of the nothrow functions above.
inline std::string device_name(Device device) {
  return nothrow::device_name(device).value();
}
inline Tensor load_npy(const std::string &path) {
  return nothrow::load_npy(path).value();
}
inline void save_npy(const Tensor &t, const std::string &path) {
  nothrow::save_npy(t, path).value();
}
inline std::map<std::string, Tensor> load_safetensors(const std::string &path) {
  return nothrow::load_safetensors(path).value();
}
inline void save_safetensors(const std::map<std::string, Tensor> &tensors,
                             const std::string &path) {
  nothrow::save_safetensors(tensors, path).value();
}
inline std::map<std::string, Tensor> load_npz(const std::string &path) {
  return nothrow::load_npz(path).value();
}
inline void save_npz(const std::map<std::string, Tensor> &tensors,
                     const std::string &path) {
  nothrow::save_npz(tensors, path).value();
}

} // namespace ein::api
