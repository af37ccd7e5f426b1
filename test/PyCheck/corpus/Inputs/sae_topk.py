"""Corpus (SAELens style): a TopK sparse autoencoder with a scatter of the kept activations."""

import torch
from jaxtyping import Float, Int
from torch import nn


class TopK(nn.Module):
    def __init__(self, k: int):
        super().__init__()
        self.k = k

    def forward(self, x: Float[torch.Tensor, "*batch d_sae"]) -> Float[torch.Tensor, "*batch d_sae"]:
        topk = torch.topk(x, k=self.k, dim=-1)
        values = torch.relu(topk.values)
        result = torch.zeros_like(x)
        result.scatter_(-1, topk.indices, values)
        return result


class TopKSAE(nn.Module):
    def __init__(self, d_in: int, d_sae: int, k: int):
        super().__init__()
        self.W_enc = nn.Parameter(torch.randn(d_in, d_sae) / d_in**0.5)
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(torch.randn(d_sae, d_in) / d_sae**0.5)
        self.b_dec = nn.Parameter(torch.zeros(d_in))
        self.activation = TopK(k)

    def encode(self, x: Float[torch.Tensor, "batch d_in"]) -> Float[torch.Tensor, "batch d_sae"]:
        hidden_pre = (x - self.b_dec) @ self.W_enc + self.b_enc
        return self.activation(hidden_pre)

    def decode(self, feature_acts: Float[torch.Tensor, "batch d_sae"]) -> Float[torch.Tensor, "batch d_in"]:
        return feature_acts @ self.W_dec + self.b_dec


def dead_features(
    feature_acts: Float[torch.Tensor, "batch d_sae"], fired: Int[torch.Tensor, "d_sae"]
) -> Int[torch.Tensor, "d_sae"]:
    return fired + (feature_acts > 0).long().sum(dim=0)


def example():
    torch.manual_seed(0)
    batch, d_in, d_sae, k = 3, 7, 19, 5
    sae = TopKSAE(d_in, d_sae, k)
    x = torch.randn(batch, d_in)
    acts = sae.encode(x).detach()
    assert bool(((acts > 0).sum(-1) <= k).all())
    pre = x @ sae.W_enc.detach()
    kth = pre.sort(dim=-1, descending=True).values[:, k - 1 : k]
    torch.testing.assert_close(acts, torch.where(pre >= kth, torch.relu(pre), torch.zeros_like(pre)))
    recon = sae.decode(acts)
    torch.testing.assert_close(recon.detach(), acts @ sae.W_dec.detach())
    fired = dead_features(acts, torch.zeros(d_sae, dtype=torch.long))
    assert int(fired.sum()) == int((acts > 0).sum())
