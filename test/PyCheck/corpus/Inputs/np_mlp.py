"""Corpus (equinox / numpy style): jaxtyping on numpy arrays, a linear layer, an MLP and a batched loss."""

import numpy as np
from einops import rearrange, reduce
from jaxtyping import Float, Int


class Linear:
    def __init__(self, in_size: int, out_size: int, rng: np.random.Generator):
        self.weight = rng.standard_normal((out_size, in_size)).astype(np.float32) / np.sqrt(in_size)
        self.bias = np.zeros(out_size, dtype=np.float32)

    def __call__(self, x: Float[np.ndarray, "in_size"]) -> Float[np.ndarray, "out_size"]:
        return self.weight @ x + self.bias


def mlp(
    x: Float[np.ndarray, "batch in_size"],
    w1: Float[np.ndarray, "in_size width"],
    w2: Float[np.ndarray, "width out_size"],
) -> Float[np.ndarray, "batch out_size"]:
    hidden = np.maximum(x @ w1, 0.0)
    return hidden @ w2


def cross_entropy(
    logits: Float[np.ndarray, "batch classes"], labels: Int[np.ndarray, "batch"]
) -> Float[np.ndarray, "batch"]:
    logits = logits - logits.max(axis=-1, keepdims=True)
    logp = logits - np.log(np.exp(logits).sum(axis=-1, keepdims=True))
    picked = np.take_along_axis(logp, labels[:, None], axis=1)
    return -picked[:, 0]


def images_to_rows(images: Float[np.ndarray, "batch h w"]) -> Float[np.ndarray, "batch hw"]:
    return rearrange(images, "b h w -> b (h w)")


def pool_rows(x: Float[np.ndarray, "batch hw"], h: int) -> Float[np.ndarray, "batch h"]:
    return reduce(x, "b (h w) -> b h", "max", h=h)


def example():
    rng = np.random.default_rng(0)
    lin = Linear(3, 5, rng)
    v = rng.standard_normal(3).astype(np.float32)
    np.testing.assert_allclose(lin(v), np.einsum("oi,i->o", lin.weight, v), rtol=1e-5)
    x = rng.standard_normal((2, 3)).astype(np.float32)
    w1 = rng.standard_normal((3, 7)).astype(np.float32)
    w2 = rng.standard_normal((7, 4)).astype(np.float32)
    np.testing.assert_allclose(mlp(x, w1, w2), np.einsum("bw,wo->bo", np.clip(np.einsum("bi,iw->bw", x, w1), 0, None), w2), rtol=1e-5, atol=1e-6)
    labels = np.array([1, 3])
    logits = mlp(x, w1, w2)
    ref = -np.array([logits[i, labels[i]] - np.log(np.sum(np.exp(logits[i]))) for i in range(2)])
    np.testing.assert_allclose(cross_entropy(logits, labels), ref, rtol=1e-5)
    images = rng.standard_normal((2, 5, 6)).astype(np.float32)
    rows = images_to_rows(images)
    np.testing.assert_array_equal(rows, images.reshape(2, 30))
    np.testing.assert_array_equal(pool_rows(rows, 5), images.max(axis=2))
