"""Corpus (TransformerLens style): multi-head attention with per-head weights and einops.einsum."""

import einops
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import nn


class Attention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, d_head: int):
        super().__init__()
        self.n_heads = n_heads
        self.d_head = d_head
        self.W_Q = nn.Parameter(torch.randn(n_heads, d_model, d_head) / d_model**0.5)
        self.W_K = nn.Parameter(torch.randn(n_heads, d_model, d_head) / d_model**0.5)
        self.W_V = nn.Parameter(torch.randn(n_heads, d_model, d_head) / d_model**0.5)
        self.W_O = nn.Parameter(torch.randn(n_heads, d_head, d_model) / d_head**0.5)
        self.b_Q = nn.Parameter(torch.zeros(n_heads, d_head))
        self.b_K = nn.Parameter(torch.zeros(n_heads, d_head))
        self.b_V = nn.Parameter(torch.zeros(n_heads, d_head))
        self.b_O = nn.Parameter(torch.zeros(d_model))
        self.attn_scale = d_head**0.5

    def calculate_qkv(
        self, x: Float[torch.Tensor, "batch pos d_model"]
    ) -> tuple[
        Float[torch.Tensor, "batch pos head_index d_head"],
        Float[torch.Tensor, "batch pos head_index d_head"],
        Float[torch.Tensor, "batch pos head_index d_head"],
    ]:
        q = (
            einops.einsum(
                x,
                self.W_Q,
                "batch pos d_model, head_index d_model d_head -> batch pos head_index d_head",
            )
            + self.b_Q
        )
        k = (
            einops.einsum(
                x,
                self.W_K,
                "batch pos d_model, head_index d_model d_head -> batch pos head_index d_head",
            )
            + self.b_K
        )
        v = (
            einops.einsum(
                x,
                self.W_V,
                "batch pos d_model, head_index d_model d_head -> batch pos head_index d_head",
            )
            + self.b_V
        )
        return q, k, v

    def calculate_attention_scores(
        self,
        q: Float[torch.Tensor, "batch query_pos head_index d_head"],
        k: Float[torch.Tensor, "batch key_pos head_index d_head"],
    ) -> Float[torch.Tensor, "batch head_index query_pos key_pos"]:
        q_ = einops.rearrange(q, "batch query_pos head_index d_head -> batch head_index query_pos d_head")
        k_ = einops.rearrange(k, "batch key_pos head_index d_head -> batch head_index d_head key_pos")
        attn_scores = q_ @ k_ / self.attn_scale
        return attn_scores

    def apply_causal_mask(
        self, attn_scores: Float[torch.Tensor, "batch head_index pos pos"]
    ) -> Float[torch.Tensor, "batch head_index pos pos"]:
        n = attn_scores.size(-1)
        mask = torch.tril(torch.ones(n, n, dtype=torch.bool))
        return torch.where(mask, attn_scores, torch.tensor(float("-inf")))

    def calculate_z_scores(
        self,
        v: Float[torch.Tensor, "batch key_pos head_index d_head"],
        pattern: Float[torch.Tensor, "batch head_index query_pos key_pos"],
    ) -> Float[torch.Tensor, "batch query_pos head_index d_head"]:
        v_ = einops.rearrange(v, "batch key_pos head_index d_head -> batch head_index key_pos d_head")
        z = einops.rearrange(
            pattern @ v_,
            "batch head_index query_pos d_head -> batch query_pos head_index d_head",
        )
        return z

    def forward(
        self, x: Float[torch.Tensor, "batch pos d_model"]
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        q, k, v = self.calculate_qkv(x)
        attn_scores = self.apply_causal_mask(self.calculate_attention_scores(q, k))
        pattern = F.softmax(attn_scores, dim=-1)
        z = self.calculate_z_scores(v, pattern)
        out = (
            einops.einsum(
                z,
                self.W_O,
                "batch pos head_index d_head, head_index d_head d_model -> batch pos d_model",
            )
            + self.b_O
        )
        return out


def example():
    torch.manual_seed(0)
    batch, pos, n_heads, d_head = 2, 5, 3, 4
    d_model = 7
    attn = Attention(d_model, n_heads, d_head)
    x = torch.randn(batch, pos, d_model)
    out = attn(x)
    # Oracle: torch's own causal scaled-dot-product attention on the same projections.
    q = torch.einsum("bpm,hmd->bhpd", x, attn.W_Q.detach())
    k = torch.einsum("bpm,hmd->bhpd", x, attn.W_K.detach())
    v = torch.einsum("bpm,hmd->bhpd", x, attn.W_V.detach())
    z = F.scaled_dot_product_attention(q, k, v, is_causal=True)
    ref = torch.einsum("bhpd,hdm->bpm", z, attn.W_O.detach())
    torch.testing.assert_close(out.detach(), ref, rtol=1e-4, atol=1e-5)
