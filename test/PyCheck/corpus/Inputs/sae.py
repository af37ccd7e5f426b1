"""Corpus (SAELens style): a standard sparse autoencoder, its hook_z reshaping, and the training loss."""

import einops
import torch
from jaxtyping import Float
from torch import nn


class StandardSAE(nn.Module):
    def __init__(self, d_in: int, d_sae: int):
        super().__init__()
        self.d_in = d_in
        self.d_sae = d_sae
        self.W_enc = nn.Parameter(torch.randn(d_in, d_sae) / d_in**0.5)
        self.b_enc = nn.Parameter(torch.zeros(d_sae))
        self.W_dec = nn.Parameter(torch.randn(d_sae, d_in) / d_sae**0.5)
        self.b_dec = nn.Parameter(torch.zeros(d_in))

    def process_sae_in(self, sae_in: Float[torch.Tensor, "... d_in"]) -> Float[torch.Tensor, "... d_in"]:
        return sae_in - self.b_dec

    def encode(self, x: Float[torch.Tensor, "... d_in"]) -> Float[torch.Tensor, "... d_sae"]:
        sae_in = self.process_sae_in(x)
        hidden_pre = sae_in @ self.W_enc + self.b_enc
        return torch.relu(hidden_pre)

    def decode(self, feature_acts: Float[torch.Tensor, "... d_sae"]) -> Float[torch.Tensor, "... d_in"]:
        return feature_acts @ self.W_dec + self.b_dec

    def forward(self, x: Float[torch.Tensor, "... d_in"]) -> Float[torch.Tensor, "... d_in"]:
        return self.decode(self.encode(x))


def reshape_fn_in(x: Float[torch.Tensor, "batch pos n_heads d_head"]) -> Float[torch.Tensor, "batch pos d_in"]:
    return einops.rearrange(x, "... n_heads d_head -> ... (n_heads d_head)")


def reshape_fn_out(
    x: Float[torch.Tensor, "batch pos d_in"], d_head: int
) -> Float[torch.Tensor, "batch pos n_heads d_head"]:
    return einops.rearrange(x, "... (n_heads d_head) -> ... n_heads d_head", d_head=d_head)


def mse_loss(
    sae_out: Float[torch.Tensor, "batch d_in"], sae_in: Float[torch.Tensor, "batch d_in"]
) -> Float[torch.Tensor, "batch"]:
    return (sae_out - sae_in).pow(2).sum(dim=-1)


def l1_loss(
    feature_acts: Float[torch.Tensor, "batch d_sae"], W_dec: Float[torch.Tensor, "d_sae d_in"]
) -> Float[torch.Tensor, "batch"]:
    weighted = feature_acts * W_dec.norm(dim=1)
    return weighted.abs().sum(dim=-1)


def example():
    torch.manual_seed(0)
    batch, pos, n_heads, d_head, d_sae = 2, 5, 3, 4, 17
    d_in = n_heads * d_head
    sae = StandardSAE(d_in, d_sae)
    z = torch.randn(batch, pos, n_heads, d_head)
    flat = reshape_fn_in(z)
    torch.testing.assert_close(flat, z.reshape(batch, pos, d_in))
    recon = sae(flat)
    W_enc, W_dec = sae.W_enc.detach(), sae.W_dec.detach()
    torch.testing.assert_close(recon.detach(), torch.relu(flat @ W_enc) @ W_dec, rtol=1e-4, atol=1e-5)
    torch.testing.assert_close(reshape_fn_out(recon, d_head).detach(), recon.detach().view(batch, pos, n_heads, d_head))
    acts = sae.encode(flat[:, 0]).detach()
    torch.testing.assert_close(mse_loss(recon[:, 0].detach(), flat[:, 0]), ((recon[:, 0].detach() - flat[:, 0]) ** 2).sum(1))
    torch.testing.assert_close(l1_loss(acts, W_dec), (acts * torch.linalg.vector_norm(W_dec, dim=1)).abs().sum(1))
