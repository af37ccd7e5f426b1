"""A test-only DLPack producer of "CUDA" tensors over numpy arrays' memory,
and a consumer of ein's CUDA results: the package's CUDA path run end to end
without a GPU, under EIN_CUDA=emulated (where ein's "device" memory is host
memory; docs/python.md, "CUDA tensors").

CudaArray(a) says it is on kDLCUDA (device type 2) and hands out a
DLManagedTensor over a's memory, its strides as they are; it records the
stream each consumer asked for. host(r) copies a CUDA DLPack result back
into a numpy array, reading the DLManagedTensor's own shape and strides.
"""
import ctypes

import numpy as np

KDL_CUDA = 2

# dlpack.h's DLDataTypeCode of numpy's kinds.
_CODES = {"i": 0, "u": 1, "f": 2, "b": 6}


class _Device(ctypes.Structure):
    _fields_ = [("device_type", ctypes.c_int32), ("device_id", ctypes.c_int32)]


class _DType(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint8), ("bits", ctypes.c_uint8), ("lanes", ctypes.c_uint16)]


class _Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("device", _Device), ("ndim", ctypes.c_int32),
                ("dtype", _DType), ("shape", ctypes.POINTER(ctypes.c_int64)),
                ("strides", ctypes.POINTER(ctypes.c_int64)), ("byte_offset", ctypes.c_uint64)]


class _Managed(ctypes.Structure):
    pass


_Deleter = ctypes.CFUNCTYPE(None, ctypes.POINTER(_Managed))
_Managed._fields_ = [("dl_tensor", _Tensor), ("manager_ctx", ctypes.c_void_p),
                     ("deleter", _Deleter)]

_capsule_new = ctypes.pythonapi.PyCapsule_New
_capsule_new.restype = ctypes.py_object
_capsule_new.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_void_p]
_capsule_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_capsule_pointer.restype = ctypes.c_void_p
_capsule_pointer.argtypes = [ctypes.py_object, ctypes.c_char_p]

# What each handed-out DLManagedTensor needs alive, by its address, until the
# consumer calls its deleter.
_alive = {}


def exported():
    """How many handed-out tensors a consumer still holds (no deleter call
    yet)."""
    return len(_alive)


@_Deleter
def _delete(managed):
    _alive.pop(ctypes.addressof(managed.contents), None)


class CudaArray:
    """`array`'s memory as a CUDA tensor on `device_id` (DLPack)."""

    def __init__(self, array, device_id=0):
        self.array = array
        self.device_id = device_id
        self.streams = []  # the stream argument of each __dlpack__ call

    @property
    def data_ptr(self):
        return self.array.ctypes.data

    def __dlpack_device__(self):
        return (KDL_CUDA, self.device_id)

    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        self.streams.append(stream)
        a = self.array
        item = a.dtype.itemsize
        shape = (ctypes.c_int64 * a.ndim)(*a.shape)
        strides = (ctypes.c_int64 * a.ndim)(*(s // item for s in a.strides))
        m = _Managed()
        m.dl_tensor.data = a.ctypes.data
        m.dl_tensor.device = _Device(KDL_CUDA, self.device_id)
        m.dl_tensor.ndim = a.ndim
        m.dl_tensor.dtype = _DType(_CODES[a.dtype.kind], item * 8, 1)
        m.dl_tensor.shape = shape
        m.dl_tensor.strides = strides
        m.deleter = _delete
        _alive[ctypes.addressof(m)] = (m, a, shape, strides)
        return _capsule_new(ctypes.addressof(m), b"dltensor", None)


def _numpy_dtype(dt):
    kind = {code: kind for kind, code in _CODES.items()}[dt.code]
    return np.dtype(f"{kind}{dt.bits // 8}") if kind != "b" else np.dtype(bool)


def dlpack_view(r):
    """(device, data pointer, numpy copy) of the DLPack tensor `r` hands
    out; under emulation its "device" memory is host memory."""
    capsule = r.__dlpack__()
    m = ctypes.cast(_capsule_pointer(capsule, b"dltensor"), ctypes.POINTER(_Managed)).contents
    t = m.dl_tensor
    dtype = _numpy_dtype(t.dtype)
    shape = [t.shape[k] for k in range(t.ndim)]
    strides = [t.strides[k] * dtype.itemsize for k in range(t.ndim)] if t.strides else None
    data = t.data + t.byte_offset
    span = 1 + sum((n - 1) * abs(s) for n, s in zip(shape, strides or [])) // dtype.itemsize \
        if all(shape) else 0
    flat = np.ctypeslib.as_array((ctypes.c_char * (span * dtype.itemsize)).from_address(data)) \
        if span else np.zeros(0, np.uint8)
    base = np.frombuffer(flat, dtype=dtype)
    if strides is None:
        out = base[:int(np.prod(shape))].reshape(shape).copy()
    else:
        out = np.lib.stride_tricks.as_strided(base, shape, strides).copy()
    device = (t.device.device_type, t.device.device_id)
    return device, data, out  # the capsule's destructor calls the deleter


def host(r):
    """The elements of ein's CUDA result `r` as a numpy array."""
    return dlpack_view(r)[2]
