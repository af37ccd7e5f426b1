"""Corpus (denoising-diffusion-pytorch style): sinusoidal time embedding, linear attention over pixels, pooling."""

import math

import torch
import torch.nn.functional as F
from einops import rearrange, reduce
from jaxtyping import Float
from torch import Tensor, nn


class SinusoidalPosEmb(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        self.dim = dim
        self.theta = theta

    def forward(self, x: Float[Tensor, "b"]) -> Float[Tensor, "b dim"]:
        half_dim = self.dim // 2
        emb = math.log(self.theta) / (half_dim - 1)
        emb = torch.exp(torch.arange(half_dim) * -emb)
        emb = x[:, None] * emb[None, :]
        emb = torch.cat((emb.sin(), emb.cos()), dim=-1)
        return emb


class LinearAttention(nn.Module):
    def __init__(self, dim, heads=4, dim_head=32):
        super().__init__()
        self.scale = dim_head**-0.5
        self.heads = heads
        hidden_dim = dim_head * heads
        self.to_qkv = nn.Conv2d(dim, hidden_dim * 3, 1, bias=False)
        self.to_out = nn.Conv2d(hidden_dim, dim, 1)

    def forward(self, x: Float[Tensor, "b c x y"]) -> Float[Tensor, "b c x y"]:
        b, c, h, w = x.shape
        qkv = self.to_qkv(x).chunk(3, dim=1)
        q, k, v = map(lambda t: rearrange(t, "b (h c) x y -> b h c (x y)", h=self.heads), qkv)
        q = q.softmax(dim=-2)
        k = k.softmax(dim=-1)
        q = q * self.scale
        context = torch.einsum("b h d n, b h e n -> b h d e", k, v)
        out = torch.einsum("b h d e, b h d n -> b h e n", context, q)
        out = rearrange(out, "b h c (x y) -> b (h c) x y", h=self.heads, x=h, y=w)
        return self.to_out(out)


def downsample(x: Float[Tensor, "b c h2 w2"]) -> Float[Tensor, "b c h w"]:
    return reduce(x, "b c (h p1) (w p2) -> b c h w", "mean", p1=2, p2=2)


def normalize_per_image(x: Float[Tensor, "b c h w"]) -> Float[Tensor, "b c h w"]:
    mean = reduce(x, "b c h w -> b 1 1 1", "mean")
    return x - mean


def example():
    torch.manual_seed(0)
    emb = SinusoidalPosEmb(6)(torch.tensor([0.0, 1.0, 7.0]))
    torch.testing.assert_close(emb[0], torch.tensor([0.0, 0.0, 0.0, 1.0, 1.0, 1.0]))
    assert emb.shape == (3, 6)
    attn = LinearAttention(5, heads=2, dim_head=3)
    x = torch.randn(2, 5, 4, 6)
    assert attn(x).shape == (2, 5, 4, 6)
    torch.testing.assert_close(downsample(x), F.avg_pool2d(x, 2))
    torch.testing.assert_close(normalize_per_image(x).mean(dim=(1, 2, 3)), torch.zeros(2), atol=1e-6, rtol=0)
