"""Corpus (vector-quantize-pytorch style): a multi-head euclidean codebook with einsum distances and gather."""

import torch
from einops import einsum, rearrange, repeat
from jaxtyping import Float, Int
from torch import Tensor, nn


def euclidean_dist(x: Float[Tensor, "h n d"], embed: Float[Tensor, "h c d"]) -> Float[Tensor, "h n c"]:
    x2 = (x**2).sum(dim=-1, keepdim=True)
    e2 = rearrange((embed**2).sum(dim=-1), "h c -> h 1 c")
    xe = einsum(x, embed, "h n d, h c d -> h n c")
    return (x2 - 2 * xe + e2).clamp(min=0).sqrt()


def batched_embedding(indices: Int[Tensor, "h b n"], embeds: Float[Tensor, "h c d"]) -> Float[Tensor, "h b n d"]:
    batch, dim = indices.shape[1], embeds.shape[-1]
    indices = repeat(indices, "h b n -> h b n d", d=dim)
    embeds = repeat(embeds, "h c d -> h b c d", b=batch)
    return embeds.gather(2, indices)


class EuclideanCodebook(nn.Module):
    def __init__(self, dim, codebook_size, num_codebooks=1):
        super().__init__()
        self.embed = nn.Parameter(torch.randn(num_codebooks, codebook_size, dim))

    def forward(self, x: Float[Tensor, "h b n d"]) -> tuple[Float[Tensor, "h b n d"], Int[Tensor, "h b n"]]:
        h, b = x.shape[0], x.shape[1]
        flatten = rearrange(x, "h b n d -> h (b n) d")
        dist = -euclidean_dist(flatten, self.embed)
        embed_ind = dist.argmax(dim=-1)
        embed_ind = rearrange(embed_ind, "h (b n) -> h b n", b=b)
        quantize = batched_embedding(embed_ind, self.embed)
        return quantize, embed_ind


def commitment_loss(
    x: Float[Tensor, "h b n d"], quantize: Float[Tensor, "h b n d"]
) -> Float[Tensor, "h"]:
    return ((x - quantize.detach()) ** 2).mean(dim=(1, 2, 3))


def example():
    torch.manual_seed(0)
    h, b, n, d, c = 2, 3, 5, 4, 7
    cb = EuclideanCodebook(d, c, num_codebooks=h)
    x = torch.randn(h, b, n, d)
    quantize, ind = cb(x)
    embed = cb.embed.detach()
    ref_ind = torch.cdist(x.reshape(h, b * n, d), embed).argmin(dim=-1).reshape(h, b, n)
    assert torch.equal(ind, ref_ind)
    torch.testing.assert_close(quantize.detach(), embed[torch.arange(h)[:, None, None], ref_ind])
    loss = commitment_loss(x, quantize)
    torch.testing.assert_close(loss, ((x - quantize.detach()) ** 2).flatten(1).mean(1))
