"""Corpus (TransformerLens style): a config dataclass read as `self.cfg.n_heads`, a pre-norm block, hooks."""

from dataclasses import dataclass

import einops
import torch
import torch.nn.functional as F
from jaxtyping import Float
from torch import nn


@dataclass
class Config:
    d_model: int
    n_heads: int
    d_head: int
    d_mlp: int
    eps: float = 1e-5


class HookPoint(nn.Module):
    def forward(self, x):
        return x


class Attention(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.W_QKV = nn.Linear(cfg.d_model, 3 * cfg.n_heads * cfg.d_head, bias=False)
        self.W_O = nn.Linear(cfg.n_heads * cfg.d_head, cfg.d_model, bias=False)
        self.hook_pattern = HookPoint()

    def forward(self, x: Float[torch.Tensor, "batch pos d_model"]) -> Float[torch.Tensor, "batch pos d_model"]:
        qkv = self.W_QKV(x)
        q, k, v = einops.rearrange(
            qkv, "batch pos (three head_index d_head) -> three batch head_index pos d_head", three=3, head_index=self.cfg.n_heads
        )
        scores = torch.einsum("bhqd,bhkd->bhqk", q, k) / self.cfg.d_head**0.5
        pattern = self.hook_pattern(scores.softmax(dim=-1))
        z = torch.einsum("bhqk,bhkd->bhqd", pattern, v)
        z = einops.rearrange(z, "batch head_index pos d_head -> batch pos (head_index d_head)")
        return self.W_O(z)


class TransformerBlock(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.cfg = cfg
        self.ln1 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.ln2 = nn.LayerNorm(cfg.d_model, eps=cfg.eps)
        self.attn = Attention(cfg)
        self.W_in = nn.Parameter(torch.randn(cfg.d_model, cfg.d_mlp) / cfg.d_model**0.5)
        self.W_out = nn.Parameter(torch.randn(cfg.d_mlp, cfg.d_model) / cfg.d_mlp**0.5)
        self.hook_resid_mid = HookPoint()

    def forward(
        self, resid_pre: Float[torch.Tensor, "batch pos d_model"]
    ) -> Float[torch.Tensor, "batch pos d_model"]:
        attn_out = self.attn(self.ln1(resid_pre))
        resid_mid = self.hook_resid_mid(resid_pre + attn_out)
        mlp_out = F.gelu(self.ln2(resid_mid) @ self.W_in) @ self.W_out
        return resid_mid + mlp_out


def stack_heads(
    per_head: Float[torch.Tensor, "batch pos head_index d_model"], cfg: Config
) -> Float[torch.Tensor, "head_index batch pos d_model"]:
    return einops.rearrange(
        per_head, "batch pos head_index d_model -> head_index batch pos d_model", head_index=cfg.n_heads
    )


def example():
    torch.manual_seed(0)
    cfg = Config(d_model=7, n_heads=3, d_head=4, d_mlp=11)
    block = TransformerBlock(cfg)
    x = torch.randn(2, 5, cfg.d_model)
    out = block(x)
    h = block.ln1(x)
    q, k, v = block.attn.W_QKV(h).view(2, 5, 3, 3, 4).permute(2, 0, 3, 1, 4)
    z = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(2, 5, 12)
    mid = x + block.attn.W_O(z)
    ref = mid + F.gelu(block.ln2(mid) @ block.W_in) @ block.W_out
    torch.testing.assert_close(out, ref, rtol=1e-4, atol=1e-5)
    per_head = torch.randn(2, 5, 3, 7)
    torch.testing.assert_close(stack_heads(per_head, cfg), per_head.permute(2, 0, 1, 3))
