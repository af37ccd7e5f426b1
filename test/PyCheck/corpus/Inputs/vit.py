"""Corpus (vit-pytorch style): patch embedding with the Rearrange layer, cls token, attention, pooling."""

import torch
from einops import rearrange, repeat
from einops.layers.torch import Rearrange
from jaxtyping import Float
from torch import Tensor, nn


class Attention(nn.Module):
    def __init__(self, dim, heads=8, dim_head=64):
        super().__init__()
        inner_dim = dim_head * heads
        self.heads = heads
        self.scale = dim_head**-0.5
        self.norm = nn.LayerNorm(dim)
        self.attend = nn.Softmax(dim=-1)
        self.to_qkv = nn.Linear(dim, inner_dim * 3, bias=False)
        self.to_out = nn.Linear(inner_dim, dim)

    def forward(self, x: Float[Tensor, "b n dim"]) -> Float[Tensor, "b n dim"]:
        x = self.norm(x)
        qkv = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = map(lambda t: rearrange(t, "b n (h d) -> b h n d", h=self.heads), qkv)
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        attn = self.attend(dots)
        out = torch.matmul(attn, v)
        out = rearrange(out, "b h n d -> b n (h d)")
        return self.to_out(out)


class ViT(nn.Module):
    def __init__(self, *, image_size, patch_size, num_classes, dim, heads, dim_head, channels=3):
        super().__init__()
        num_patches = (image_size // patch_size) ** 2
        patch_dim = channels * patch_size * patch_size
        self.to_patch_embedding = nn.Sequential(
            Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch_size, p2=patch_size),
            nn.LayerNorm(patch_dim),
            nn.Linear(patch_dim, dim),
            nn.LayerNorm(dim),
        )
        self.pos_embedding = nn.Parameter(torch.randn(1, num_patches + 1, dim))
        self.cls_token = nn.Parameter(torch.randn(1, 1, dim))
        self.attn = Attention(dim, heads=heads, dim_head=dim_head)
        self.mlp_head = nn.Linear(dim, num_classes)

    def forward(self, img: Float[Tensor, "b c ih iw"]) -> Float[Tensor, "b num_classes"]:
        x = self.to_patch_embedding(img)
        b, n, _ = x.shape
        cls_tokens = repeat(self.cls_token, "1 1 d -> b 1 d", b=b)
        x = torch.cat((cls_tokens, x), dim=1)
        x = x + self.pos_embedding[:, : (n + 1)]
        x = self.attn(x) + x
        x = x.mean(dim=1)
        return self.mlp_head(x)


def patchify(img: Float[Tensor, "b c ih iw"], patch_size: int) -> Float[Tensor, "b n patch_dim"]:
    return rearrange(img, "b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=patch_size, p2=patch_size)


def example():
    torch.manual_seed(0)
    vit = ViT(image_size=12, patch_size=4, num_classes=5, dim=7, heads=3, dim_head=2)
    img = torch.randn(2, 3, 12, 12)
    assert vit(img).shape == (2, 5)
    patches = patchify(img, 4)
    # Oracle: unfold takes the same patches (channel-major inside a patch, so permute before comparing).
    ref = torch.nn.functional.unfold(img, kernel_size=4, stride=4).transpose(1, 2)
    ref = ref.reshape(2, 9, 3, 16).transpose(2, 3).reshape(2, 9, 48)
    torch.testing.assert_close(patches, ref)
    attn = Attention(7, heads=3, dim_head=2)
    x = torch.randn(2, 10, 7)
    q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=3) for t in attn.to_qkv(attn.norm(x)).chunk(3, dim=-1))
    sdpa = torch.nn.functional.scaled_dot_product_attention(q, k, v)
    torch.testing.assert_close(attn(x), attn.to_out(sdpa.transpose(1, 2).reshape(2, 10, 6)), rtol=1e-4, atol=1e-5)
