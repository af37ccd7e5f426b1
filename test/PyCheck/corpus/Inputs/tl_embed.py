"""Corpus (TransformerLens style): token and positional embeddings, unembedding, hooks on the residual."""

import einops
import torch
import torch.nn.functional as F
from jaxtyping import Float, Int
from torch import nn


class Embed(nn.Module):
    def __init__(self, d_vocab: int, d_model: int):
        super().__init__()
        self.W_E = nn.Parameter(torch.randn(d_vocab, d_model))

    def forward(
        self, tokens: Int[torch.Tensor, "batch pos"]
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        return self.W_E[tokens, :]


class PosEmbed(nn.Module):
    def __init__(self, n_ctx: int, d_model: int):
        super().__init__()
        self.W_pos = nn.Parameter(torch.randn(n_ctx, d_model))

    def forward(
        self, tokens: Int[torch.Tensor, "batch pos"], past_kv_pos_offset: int = 0
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        tokens_length = tokens.size(-1)
        pos_embed = self.W_pos[past_kv_pos_offset : tokens_length + past_kv_pos_offset, :]
        batch_pos_embed = einops.repeat(pos_embed, "pos d_model -> batch pos d_model", batch=tokens.size(0))
        return batch_pos_embed.clone()


class Unembed(nn.Module):
    def __init__(self, d_model: int, d_vocab: int):
        super().__init__()
        self.W_U = nn.Parameter(torch.randn(d_model, d_vocab))
        self.b_U = nn.Parameter(torch.zeros(d_vocab))

    def forward(
        self, residual: Float[torch.Tensor, "batch pos d_model"]
    ) -> Float[torch.Tensor, "batch pos d_vocab_out"]:
        return residual @ self.W_U + self.b_U


def residual_norms(
    resid: Float[torch.Tensor, "batch pos d_model"],
) -> Float[torch.Tensor, "batch pos"]:
    return resid.pow(2).sum(dim=-1).sqrt()


def logit_diff(
    logits: Float[torch.Tensor, "batch pos d_vocab"],
    correct: Int[torch.Tensor, "batch"],
    wrong: Int[torch.Tensor, "batch"],
) -> Float[torch.Tensor, "batch"]:
    final = logits[:, -1, :]
    return final.gather(-1, correct[:, None]).squeeze(-1) - final.gather(-1, wrong[:, None]).squeeze(-1)


def example():
    torch.manual_seed(0)
    batch, pos, d_model, d_vocab, n_ctx = 2, 5, 7, 11, 13
    tokens = torch.randint(0, d_vocab, (batch, pos))
    embed, pos_embed, unembed = Embed(d_vocab, d_model), PosEmbed(n_ctx, d_model), Unembed(d_model, d_vocab)
    resid = embed(tokens) + pos_embed(tokens)
    ref = F.embedding(tokens, embed.W_E) + pos_embed.W_pos[:pos][None]
    torch.testing.assert_close(resid, ref)
    torch.testing.assert_close(residual_norms(resid), torch.linalg.vector_norm(ref, dim=-1))
    logits = unembed(resid)
    correct, wrong = tokens[:, 0], tokens[:, 1]
    diff = logit_diff(logits, correct, wrong)
    last = logits[:, -1]
    torch.testing.assert_close(diff, last[torch.arange(batch), correct] - last[torch.arange(batch), wrong])
