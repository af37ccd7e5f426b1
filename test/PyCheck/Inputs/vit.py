# A small ViT in the style of vit-pytorch: einops layers built in __init__
# and called in forward, keyword sizes from attributes, pack/unpack of a
# class token. Clean: `einc check` finds nothing; run, it checks its shapes
# under jaxtyping.
import torch
from beartype import beartype
from einops import pack, rearrange, repeat, unpack
from einops.layers.torch import Rearrange, Reduce
from jaxtyping import Float, jaxtyped
from torch import Tensor, nn

checked = jaxtyped(typechecker=beartype)
PATCH = 4


class Attention(nn.Module):
    def __init__(self, dim, heads=2, dim_head=8):
        super().__init__()
        inner = heads * dim_head
        self.heads = heads
        self.scale = dim_head**-0.5
        self.to_qkv = nn.Linear(dim, inner * 3, bias=False)
        self.merge = Rearrange("b h n d -> b n (h d)")
        self.to_out = nn.Linear(inner, dim)

    @checked
    def forward(self, x: Float[Tensor, "b n dim"]) -> Float[Tensor, "b n dim"]:
        q, k, v = self.to_qkv(x).chunk(3, dim=-1)
        q, k, v = (rearrange(t, "b n (h d) -> b h n d", h=self.heads) for t in (q, k, v))
        dots = torch.matmul(q, k.transpose(-1, -2)) * self.scale
        out = self.merge(dots.softmax(dim=-1) @ v)
        return self.to_out(out)


class ViT(nn.Module):
    def __init__(self, dim=16, channels=3):
        super().__init__()
        self.to_patches = Rearrange("b c (h p1) (w p2) -> b (h w) (p1 p2 c)", p1=PATCH, p2=PATCH)
        self.embed = nn.Linear(PATCH * PATCH * channels, dim)
        self.cls_token = nn.Parameter(torch.randn(dim))
        self.attn = Attention(dim)
        self.pool = Reduce("b n d -> b d", "mean")

    @checked
    def patches(self, img: Float[Tensor, "b c h w"]) -> Float[Tensor, "b h*w//16 16*c"]:
        return self.to_patches(img)

    @checked
    def forward(self, img: Float[Tensor, "b 3 32 32"]) -> Float[Tensor, "b d"]:
        x = self.embed(self.patches(img))
        cls = repeat(self.cls_token, "d -> b d", b=img.shape[0])
        x, ps = pack([cls, x], "b * d")
        x = self.attn(x) + x
        cls, rest = unpack(x, ps, "b * d")
        return self.pool(rest) + cls


if __name__ == "__main__":
    print(tuple(ViT()(torch.randn(2, 3, 32, 32)).shape))
