"""Corpus (TransformerLens style): grouped-query attention repeating key/value heads with einops.repeat."""

import einops
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import nn


class GroupedQueryAttention(nn.Module):
    def __init__(self, d_model: int, n_heads: int, n_key_value_heads: int, d_head: int):
        super().__init__()
        self.n_heads = n_heads
        self.repeat_kv_heads = n_heads // n_key_value_heads
        self.W_Q = nn.Parameter(torch.randn(n_heads, d_model, d_head) / d_model**0.5)
        self._W_K = nn.Parameter(torch.randn(n_key_value_heads, d_model, d_head) / d_model**0.5)
        self._W_V = nn.Parameter(torch.randn(n_key_value_heads, d_model, d_head) / d_model**0.5)
        self.W_O = nn.Parameter(torch.randn(n_heads, d_head, d_model) / d_head**0.5)

    def repeat_kv(
        self, k: Float[torch.Tensor, "batch pos kv_head_index d_head"]
    ) -> Float[torch.Tensor, "batch pos head_index d_head"]:
        return einops.repeat(
            k, "batch pos kv_head d_head -> batch pos (kv_head n_rep) d_head", n_rep=self.repeat_kv_heads
        )

    def forward(
        self, x: Float[torch.Tensor, "batch pos d_model"]
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        q = einops.einsum(x, self.W_Q, "batch pos d_model, head d_model d_head -> batch pos head d_head")
        k = einops.einsum(x, self._W_K, "batch pos d_model, head d_model d_head -> batch pos head d_head")
        v = einops.einsum(x, self._W_V, "batch pos d_model, head d_model d_head -> batch pos head d_head")
        k = self.repeat_kv(k)
        v = self.repeat_kv(v)
        scores = einops.einsum(
            q, k, "batch query_pos head d_head, batch key_pos head d_head -> batch head query_pos key_pos"
        ) / (q.shape[-1] ** 0.5)
        pattern = scores.softmax(dim=-1)
        z = einops.einsum(
            pattern, v, "batch head query_pos key_pos, batch key_pos head d_head -> batch query_pos head d_head"
        )
        return einops.einsum(z, self.W_O, "batch pos head d_head, head d_head d_model -> batch pos d_model")


def example():
    torch.manual_seed(0)
    batch, pos, d_model, n_heads, n_kv, d_head = 2, 5, 7, 6, 2, 4
    gqa = GroupedQueryAttention(d_model, n_heads, n_kv, d_head)
    x = torch.randn(batch, pos, d_model)
    out = gqa(x)
    W_K = gqa._W_K.detach().repeat_interleave(3, dim=0)
    W_V = gqa._W_V.detach().repeat_interleave(3, dim=0)
    q = torch.einsum("bpm,hmd->bhpd", x, gqa.W_Q.detach())
    k = torch.einsum("bpm,hmd->bhpd", x, W_K)
    v = torch.einsum("bpm,hmd->bhpd", x, W_V)
    z = F.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(out.detach(), torch.einsum("bhpd,hdm->bpm", z, gqa.W_O.detach()), rtol=1e-4, atol=1e-5)
