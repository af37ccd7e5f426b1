"""Corpus (TransformerLens style): rotary embeddings on the first rotary_dim features of each head."""

import einops
import torch
from jaxtyping import Float


def calculate_sin_cos_rotary(
    rotary_dim: int, n_ctx: int, base: int = 10000
) -> tuple[Float[torch.Tensor, "n_ctx rotary_dim"], Float[torch.Tensor, "n_ctx rotary_dim"]]:
    pos = torch.arange(n_ctx, dtype=torch.float32)
    dim = torch.arange(rotary_dim // 2, dtype=torch.float32)
    freq = base ** (dim / (rotary_dim / 2))
    freq = einops.repeat(freq, "d -> (d 2)")
    angles = pos[:, None] / freq[None, :]
    return torch.sin(angles), torch.cos(angles)


def rotate_every_two(
    x: Float[torch.Tensor, "... rotary_dim"],
) -> Float[torch.Tensor, "... rotary_dim"]:
    rot_x = x.clone()
    rot_x[..., ::2] = -x[..., 1::2]
    rot_x[..., 1::2] = x[..., ::2]
    return rot_x


def apply_rotary(
    x: Float[torch.Tensor, "batch pos head_index d_head"],
    rotary_sin: Float[torch.Tensor, "n_ctx rotary_dim"],
    rotary_cos: Float[torch.Tensor, "n_ctx rotary_dim"],
    rotary_dim: int,
) -> Float[torch.Tensor, "batch pos head_index d_head"]:
    x_pos = x.size(1)
    x_rot = x[..., :rotary_dim]
    x_pass = x[..., rotary_dim:]
    x_flip = rotate_every_two(x_rot)
    rotary_cos = rotary_cos[None, :x_pos, None, :]
    rotary_sin = rotary_sin[None, :x_pos, None, :]
    x_rotated = x_rot * rotary_cos + x_flip * rotary_sin
    return torch.cat([x_rotated, x_pass], dim=-1)


def example():
    torch.manual_seed(0)
    batch, pos, n_heads, d_head, rotary_dim, n_ctx = 2, 5, 3, 10, 6, 13
    sin, cos = calculate_sin_cos_rotary(rotary_dim, n_ctx)
    x = torch.randn(batch, pos, n_heads, d_head)
    out = apply_rotary(x, sin, cos, rotary_dim)
    # Oracle: the rotation as complex multiplication of adjacent feature pairs.
    pairs = torch.view_as_complex(x[..., :rotary_dim].reshape(batch, pos, n_heads, rotary_dim // 2, 2).contiguous())
    angle = torch.atan2(sin[:pos, ::2], cos[:pos, ::2])
    rotated = torch.view_as_real(pairs * torch.polar(torch.ones_like(angle), angle)[None, :, None, :])
    torch.testing.assert_close(out[..., :rotary_dim], rotated.reshape(batch, pos, n_heads, rotary_dim), rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(out[..., rotary_dim:], x[..., rotary_dim:])
