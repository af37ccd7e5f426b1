"""Corpus (rotary-embedding-torch style): rotate_half with einops and frequencies by einsum and repeat."""

import torch
from einops import einsum, rearrange, repeat
from jaxtyping import Float
from torch import Tensor, nn


def rotate_half(x: Float[Tensor, "... d"]) -> Float[Tensor, "... d"]:
    x = rearrange(x, "... (d r) -> ... d r", r=2)
    x1, x2 = x.unbind(dim=-1)
    x = torch.stack((-x2, x1), dim=-1)
    return rearrange(x, "... d r -> ... (d r)")


def apply_rotary_emb(
    freqs: Float[Tensor, "n rot"], t: Float[Tensor, "b h n d"], start_index: int = 0
) -> Float[Tensor, "b h n d"]:
    rot_dim = freqs.shape[-1]
    end_index = start_index + rot_dim
    t_left = t[..., :start_index]
    t_middle = t[..., start_index:end_index]
    t_right = t[..., end_index:]
    t_transformed = (t_middle * freqs.cos()) + (rotate_half(t_middle) * freqs.sin())
    return torch.cat((t_left, t_transformed, t_right), dim=-1)


class RotaryEmbedding(nn.Module):
    def __init__(self, dim, theta=10000):
        super().__init__()
        freqs = 1.0 / (theta ** (torch.arange(0, dim, 2)[: (dim // 2)].float() / dim))
        self.freqs = nn.Parameter(freqs, requires_grad=False)

    def forward(self, t: Float[Tensor, "n"]) -> Float[Tensor, "n rot"]:
        freqs = einsum(t.type(self.freqs.dtype), self.freqs, "n, f -> n f")
        return repeat(freqs, "... n -> ... (n r)", r=2)

    def rotate_queries_or_keys(self, t: Float[Tensor, "b h n d"]) -> Float[Tensor, "b h n d"]:
        seq_len = t.shape[-2]
        freqs = self.forward(torch.arange(seq_len, dtype=torch.float32))
        return apply_rotary_emb(freqs, t)


def example():
    torch.manual_seed(0)
    b, h, n, d = 2, 3, 5, 8
    rot = RotaryEmbedding(dim=6)
    q, k = torch.randn(b, h, n, d), torch.randn(b, h, n, d)
    rq, rk = rot.rotate_queries_or_keys(q), rot.rotate_queries_or_keys(k)
    # Oracles: a rotation keeps norms, and the rotated scores depend only on relative position.
    torch.testing.assert_close(rq.norm(dim=-1), q.norm(dim=-1), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(rq[..., 6:], q[..., 6:])
    q1 = q[:, :, :1].expand(b, h, n, d)
    k1 = k[:, :, :1].expand(b, h, n, d)
    s = (rot.rotate_queries_or_keys(q1) * rot.rotate_queries_or_keys(k1)).sum(-1)
    torch.testing.assert_close(s, s[..., :1].expand_as(s), rtol=1e-4, atol=1e-5)
