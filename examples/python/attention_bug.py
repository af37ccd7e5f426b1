# The README's example of `einc check model.py`: vit-pytorch-style attention
# whose last rearrange forgets to merge the heads back, "b h n e -> b n h e"
# where "b h n e -> b n (h e)" was meant. einc check reports it at its line,
# before anything runs; run, it fails in jaxtyping's check of the result.
import torch
from einops import rearrange
from jaxtyping import Float
from torch import Tensor


class Attention(torch.nn.Module):
    def __init__(self, dim: int, heads: int):
        super().__init__()
        self.heads = heads
        self.qkv = torch.nn.Linear(dim, 3 * dim)

    def forward(self, x: Float[Tensor, "b n d"]) -> Float[Tensor, "b n d"]:
        q, k, v = self.qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h e) -> b h n e", h=self.heads) for t in (q, k, v))
        attn = (q @ k.transpose(-1, -2)).softmax(dim=-1)
        return rearrange(attn @ v, "b h n e -> b n h e")
