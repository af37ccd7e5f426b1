"""Corpus (x-transformers style): memory tokens with pack/unpack, a GLU feed-forward, and token shift."""

import torch
import torch.nn.functional as F
from einops import pack, rearrange, repeat, unpack
from jaxtyping import Float
from torch import Tensor, nn


class GLU(nn.Module):
    def __init__(self, dim_in, dim_out):
        super().__init__()
        self.proj = nn.Linear(dim_in, dim_out * 2)

    def forward(self, x: Float[Tensor, "b n d"]) -> Float[Tensor, "b n d_out"]:
        x, gate = self.proj(x).chunk(2, dim=-1)
        return x * F.gelu(gate)


class MemoryTokens(nn.Module):
    def __init__(self, dim, num_memory_tokens):
        super().__init__()
        self.memory_tokens = nn.Parameter(torch.randn(num_memory_tokens, dim))
        self.ff = GLU(dim, dim)

    def forward(self, x: Float[Tensor, "b n d"]) -> tuple[Float[Tensor, "b n d"], Float[Tensor, "b m d"]]:
        b = x.shape[0]
        mem = repeat(self.memory_tokens, "m d -> b m d", b=b)
        x, mem_packed_shape = pack((mem, x), "b * d")
        x = self.ff(x) + x
        mem, x = unpack(x, mem_packed_shape, "b * d")
        return x, mem


def shift(t: Float[Tensor, "b n d"], amount: int) -> Float[Tensor, "b n d"]:
    if amount == 0:
        return t
    return F.pad(t, (0, 0, amount, -amount), value=0.0)


def token_shift(x: Float[Tensor, "b n d"]) -> Float[Tensor, "b n d"]:
    x_shift, x_pass = x.chunk(2, dim=-1)
    return torch.cat((shift(x_shift, 1), x_pass), dim=-1)


def split_heads(x: Float[Tensor, "b n hd"], heads: int) -> Float[Tensor, "b h n d"]:
    return rearrange(x, "b n (h d) -> b h n d", h=heads)


def example():
    torch.manual_seed(0)
    b, n, d, m = 2, 5, 6, 3
    mt = MemoryTokens(d, m)
    x = torch.randn(b, n, d)
    out, mem = mt(x)
    both = torch.cat((mt.memory_tokens.detach()[None].expand(b, m, d), x), dim=1)
    ref = mt.ff(both).detach() + both
    torch.testing.assert_close(out.detach(), ref[:, m:])
    torch.testing.assert_close(mem.detach(), ref[:, :m])
    shifted = token_shift(x)
    torch.testing.assert_close(shifted[:, 1:, :3], x[:, :-1, :3])
    torch.testing.assert_close(shifted[:, 0, :3], torch.zeros(b, 3))
    torch.testing.assert_close(split_heads(x, 2), x.view(b, n, 2, 3).permute(0, 2, 1, 3))
