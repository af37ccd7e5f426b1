"""Corpus (TransformerLens style): the MLP block with W_in / W_out parameters and a gated variant."""

import einops
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import nn


class MLP(nn.Module):
    def __init__(self, d_model: int, d_mlp: int):
        super().__init__()
        self.W_in = nn.Parameter(torch.randn(d_model, d_mlp) / d_model**0.5)
        self.b_in = nn.Parameter(torch.zeros(d_mlp))
        self.W_out = nn.Parameter(torch.randn(d_mlp, d_model) / d_mlp**0.5)
        self.b_out = nn.Parameter(torch.zeros(d_model))

    def forward(
        self, x: Float[torch.Tensor, "batch pos d_model"]
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        pre_act = (
            einops.einsum(x, self.W_in, "batch pos d_model, d_model d_mlp -> batch pos d_mlp")
            + self.b_in
        )
        post_act = F.gelu(pre_act)
        return (
            einops.einsum(post_act, self.W_out, "batch pos d_mlp, d_mlp d_model -> batch pos d_model")
            + self.b_out
        )


class GatedMLP(nn.Module):
    def __init__(self, d_model: int, d_mlp: int):
        super().__init__()
        self.W_in = nn.Parameter(torch.randn(d_model, d_mlp) / d_model**0.5)
        self.W_gate = nn.Parameter(torch.randn(d_model, d_mlp) / d_model**0.5)
        self.W_out = nn.Parameter(torch.randn(d_mlp, d_model) / d_mlp**0.5)

    def forward(
        self, x: Float[torch.Tensor, "batch pos d_model"]
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        pre_linear: Float[torch.Tensor, "batch pos d_mlp"] = x @ self.W_in
        gate: Float[torch.Tensor, "batch pos d_mlp"] = F.silu(x @ self.W_gate)
        post_act = gate * pre_linear
        return post_act @ self.W_out


def example():
    torch.manual_seed(0)
    batch, pos, d_model, d_mlp = 2, 5, 7, 11
    x = torch.randn(batch, pos, d_model)
    mlp = MLP(d_model, d_mlp)
    ref = F.gelu(x @ mlp.W_in.detach()) @ mlp.W_out.detach()
    torch.testing.assert_close(mlp(x).detach(), ref, rtol=1e-4, atol=1e-5)
    gated = GatedMLP(d_model, d_mlp)
    W_in, W_gate, W_out = gated.W_in.detach(), gated.W_gate.detach(), gated.W_out.detach()
    ref = torch.einsum("bpm,mk->bpk", x, W_in) * F.silu(torch.einsum("bpm,mk->bpk", x, W_gate))
    torch.testing.assert_close(gated(x).detach(), torch.einsum("bpk,km->bpm", ref, W_out), rtol=1e-4, atol=1e-5)
