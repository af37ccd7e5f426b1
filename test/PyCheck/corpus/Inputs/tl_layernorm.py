"""Corpus (TransformerLens style): LayerNorm and RMSNorm written out with keepdim reductions."""

import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import nn


class LayerNorm(nn.Module):
    def __init__(self, length: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.w = nn.Parameter(torch.ones(length))
        self.b = nn.Parameter(torch.zeros(length))

    def forward(
        self, x: Float[torch.Tensor, "batch pos length"]
    ) -> Float[torch.Tensor, "batch pos length"]:
        x = x - x.mean(-1, keepdim=True)
        scale: Float[torch.Tensor, "batch pos 1"] = (x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt()
        x = x / scale
        return x * self.w + self.b


class RMSNorm(nn.Module):
    def __init__(self, length: int, eps: float = 1e-5):
        super().__init__()
        self.eps = eps
        self.w = nn.Parameter(torch.ones(length))

    def forward(
        self, x: Float[torch.Tensor, "batch pos length"]
    ) -> Float[torch.Tensor, "batch pos length"]:
        scale: Float[torch.Tensor, "batch pos 1"] = (x.pow(2).mean(-1, keepdim=True) + self.eps).sqrt()
        return x / scale * self.w


def center_writing_weights(
    W_out: Float[torch.Tensor, "d_mlp d_model"],
) -> Float[torch.Tensor, "d_mlp d_model"]:
    return W_out - W_out.mean(dim=-1, keepdim=True)


def apply_ln_to_stack(
    residual_stack: Float[torch.Tensor, "num_components *batch_and_pos_dims length"],
    scale: Float[torch.Tensor, "*batch_and_pos_dims 1"] | None = None,
) -> Float[torch.Tensor, "num_components *batch_and_pos_dims_out length"]:
    if scale is None:
        return residual_stack
    residual_stack = residual_stack - residual_stack.mean(dim=-1, keepdim=True)
    return residual_stack / scale


def example():
    torch.manual_seed(0)
    batch, pos, length = 2, 5, 7
    x = torch.randn(batch, pos, length)
    ln = LayerNorm(length)
    torch.testing.assert_close(ln(x), F.layer_norm(x, (length,), eps=1e-5), rtol=1e-4, atol=1e-5)
    rms = RMSNorm(length)
    torch.testing.assert_close(rms(x), x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5))
    stack = torch.randn(3, batch, pos, length)
    torch.testing.assert_close(apply_ln_to_stack(stack), stack)
    scale = (x.pow(2).mean(-1, keepdim=True) + 1e-5).sqrt()
    torch.testing.assert_close(apply_ln_to_stack(stack, scale), (stack - stack.mean(-1, keepdim=True)) / scale)
    W = torch.randn(11, length)
    centered = center_writing_weights(W)
    torch.testing.assert_close(centered.sum(-1), torch.zeros(11), atol=1e-5, rtol=0)
