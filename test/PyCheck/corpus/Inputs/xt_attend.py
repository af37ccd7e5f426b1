"""Corpus (x-transformers style): the Attend core with einsum scores, key padding masks and causal masks."""

import torch
import torch.nn.functional as F
from einops import einsum, rearrange
from jaxtyping import Bool, Float
from torch import Tensor, nn


def max_neg_value(t):
    return -torch.finfo(t.dtype).max


class Attend(nn.Module):
    def __init__(self, causal=False, scale=None):
        super().__init__()
        self.causal = causal
        self.scale = scale

    def forward(
        self,
        q: Float[Tensor, "b h i d"],
        k: Float[Tensor, "b h j d"],
        v: Float[Tensor, "b h j dv"],
        mask: Bool[Tensor, "b j"] | None = None,
    ) -> Float[Tensor, "b h i dv"]:
        scale = self.scale if self.scale is not None else q.shape[-1] ** -0.5
        sim = einsum(q, k, "b h i d, b h j d -> b h i j") * scale
        if mask is not None:
            mask = rearrange(mask, "b j -> b 1 1 j")
            sim = sim.masked_fill(~mask, max_neg_value(sim))
        if self.causal:
            i, j = sim.shape[-2:]
            causal_mask = torch.ones((i, j), dtype=torch.bool).triu(j - i + 1)
            sim = sim.masked_fill(causal_mask, max_neg_value(sim))
        attn = sim.softmax(dim=-1)
        return einsum(attn, v, "b h i j, b h j dv -> b h i dv")


class Attention(nn.Module):
    def __init__(self, dim, dim_head=64, heads=8, causal=False):
        super().__init__()
        self.heads = heads
        dim_inner = dim_head * heads
        self.to_q = nn.Linear(dim, dim_inner, bias=False)
        self.to_kv = nn.Linear(dim, dim_inner * 2, bias=False)
        self.attend = Attend(causal=causal)
        self.to_out = nn.Linear(dim_inner, dim, bias=False)

    def forward(
        self, x: Float[Tensor, "b n dim"], context: Float[Tensor, "b m dim"], mask: Bool[Tensor, "b m"] | None = None
    ) -> Float[Tensor, "b n dim"]:
        h = self.heads
        q = self.to_q(x)
        k, v = self.to_kv(context).chunk(2, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=h) for t in (q, k, v))
        out = self.attend(q, k, v, mask=mask)
        out = rearrange(out, "b h n d -> b n (h d)")
        return self.to_out(out)


def example():
    torch.manual_seed(0)
    b, h, i, j, d = 2, 3, 5, 7, 4
    q, k, v = torch.randn(b, h, i, d), torch.randn(b, h, j, d), torch.randn(b, h, j, 6)
    mask = torch.rand(b, j) > 0.3
    mask[:, 0] = True
    out = Attend()(q, k, v, mask=mask)
    ref = F.scaled_dot_product_attention(q, k, v, attn_mask=mask[:, None, None, :])
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    causal = Attend(causal=True)(q[:, :, :, :], k[:, :, :5], v[:, :, :5])
    torch.testing.assert_close(causal, F.scaled_dot_product_attention(q, k[:, :, :5], v[:, :, :5], is_causal=True), rtol=1e-4, atol=1e-5)
    attn = Attention(11, dim_head=d, heads=h)
    x, ctx = torch.randn(b, i, 11), torch.randn(b, j, 11)
    assert attn(x, ctx, mask=mask).shape == (b, i, 11)
