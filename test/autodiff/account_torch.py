# `einc report --train` against PyTorch on the lecture's MLP
# (examples/mlp.ein) and the transformer block (examples/transformer.ein):
# the forward and backward contraction FLOPs equal what
# torch.utils.flop_counter.FlopCounterMode counts on the same model (it
# counts matmuls only) and a derivation by hand, and the parameter, gradient
# and optimizer-state bytes equal what PyTorch allocates for them, for every
# optimizer. Usage: account_torch.py EINC EXAMPLES_DIR TMPDIR
import json
import re
import subprocess
import sys

try:
    import torch
    from torch.utils.flop_counter import FlopCounterMode
except ImportError as err:
    print(f"FAIL: PyTorch is the oracle of this test and is missing ({err}); "
          "scripts/setup.sh installs it")
    sys.exit(1)

einc, examples, tmp = sys.argv[1:4]
failures = 0


def check(label, got, expected):
    global failures
    if got == expected:
        print(f"ok {label}: {got}")
    else:
        failures += 1
        print(f"FAIL {label}: einc {got}, PyTorch {expected}")


def account(source, fn, params, optimizer, dims, dtype=None):
    args = [einc, "report", source, "--fn", fn, "--train", "--optimizer",
            optimizer, "--json"]
    if params:  # a loss function; a step with grad() names its own
        args += ["--params", ",".join(params)]
    for name, value in dims.items():
        args += ["--dim", f"{name}={value}"]
    if dtype:
        args += ["--param-dtype", dtype]
    run = subprocess.run(args, capture_output=True, text=True)
    if run.returncode != 0:
        print(f"FAIL einc report: {run.stderr.strip()}")
        sys.exit(1)
    data = json.loads(run.stdout)
    ops = data["report"]["functions"][0]["ops"]
    # FlopCounterMode counts matrix products; an einsum that sums no axis
    # (rotary's outer product of positions and frequencies, torch.outer
    # in the reference) is elementwise work to it.
    def matmul(o):
        if o["op"] != "einsum":
            return False
        inputs, output = o["pattern"].split("->")
        return bool(set(re.findall(r"\w+", inputs)) -
                    set(re.findall(r"\w+", output)))
    forward = sum(o["flops"] for o in ops if matmul(o) and "phase" not in o)
    backward = sum(o["flops"] for o in ops if matmul(o) and
                   o.get("phase") in ("data-grad", "weight-grad"))
    memory = {m["what"]: m["count"]["value"] for m in data["train"]["memory"]}
    return forward, backward, memory


def torch_optimizer(name, params):
    return {
        "sgd": lambda: torch.optim.SGD(params, lr=0.1),
        "momentum": lambda: torch.optim.SGD(params, lr=0.1, momentum=0.9),
        "adagrad": lambda: torch.optim.Adagrad(params, lr=0.1),
        "rmsprop": lambda: torch.optim.RMSprop(params, lr=0.1),
        "adam": lambda: torch.optim.Adam(params, lr=0.1),
        "adamw": lambda: torch.optim.AdamW(params, lr=0.1),
    }[name]()


def nbytes(tensors):
    return sum(t.numel() * t.element_size() for t in tensors)


# The MLP at B=64, D=32, K=16.
B, D, K = 64, 32, 16
source = f"{examples}/mlp.ein"
for optimizer in ["sgd", "momentum", "adagrad", "rmsprop", "adam", "adamw"]:
    forward, backward, memory = account(source, "mlp", ["w1", "w2"], optimizer,
                                        {"B": B, "D": D, "K": K})
    torch.manual_seed(0)
    x = torch.randn(B, D)
    w1 = torch.randn(D, D, requires_grad=True)
    w2 = torch.randn(D, K, requires_grad=True)
    with FlopCounterMode(display=False) as counter:
        loss = (torch.relu(torch.einsum("bi,ij->bj", x, w1))
                .matmul(w2) ** 2).mean()
    torch_forward = counter.get_total_flops()
    with FlopCounterMode(display=False) as counter:
        loss.backward()
    torch_backward = counter.get_total_flops()
    opt = torch_optimizer(optimizer, [w1, w2])
    opt.step()
    # The per-parameter state tensors (Adam's scalar `step` counters are
    # not parameter-sized: listed, not compared).
    states = [t for p in (w1, w2) for t in opt.state[p].values()
              if torch.is_tensor(t) and t.shape == p.shape]
    steps = [t for p in (w1, w2) for t in opt.state[p].values()
             if torch.is_tensor(t) and t.shape != p.shape]
    if optimizer == "sgd":
        check("mlp forward matmul FLOPs", forward, torch_forward)
        check("mlp backward matmul FLOPs", backward, torch_backward)
        check("mlp parameter bytes", memory["parameters"], nbytes([w1, w2]))
        check("mlp gradient bytes", memory["gradients"],
              nbytes([w1.grad, w2.grad]))
    label = next(k for k in memory if k.startswith("optimizer states"))
    check(f"mlp {optimizer} state bytes", memory[label], nbytes(states))
    if steps:
        print(f"  ({optimizer} also keeps {len(steps)} step counters, "
              f"{nbytes(steps)} bytes, not parameter-sized)")

# bf16 parameters: the account at --param-dtype bf16 equals PyTorch's bf16
# allocation.
_, _, memory = account(source, "mlp", ["w1", "w2"], "adam",
                       {"B": B, "D": D, "K": K}, dtype="bf16")
w1 = torch.zeros(D, D, dtype=torch.bfloat16, requires_grad=True)
w2 = torch.zeros(D, K, dtype=torch.bfloat16, requires_grad=True)
(w1.sum() + w2.sum()).backward()
opt = torch.optim.Adam([w1, w2])
opt.step()
states = [t for p in (w1, w2) for t in opt.state[p].values()
          if torch.is_tensor(t) and t.shape == p.shape]
check("mlp bf16 parameter bytes", memory["parameters"], nbytes([w1, w2]))
check("mlp bf16 adam state bytes",
      memory[next(k for k in memory if k.startswith("optimizer states"))],
      nbytes(states))

# The transformer block at grad_torch.py's sizes, every weight trained (the
# torch block of that script is the reference).
import os  # noqa: E402
import shutil  # noqa: E402

import numpy as np  # noqa: E402
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import grad_torch as gt  # noqa: E402

os.makedirs(tmp, exist_ok=True)
for name in ("transformer.ein", "gated_mlp.ein"):
    shutil.copy(os.path.join(examples, name), tmp)
weights = [n for n, *_ in gt.BLOCK_PARAMS if n != "x"]
params = ", ".join(f'{n}: f32["{shape}"]' for n, shape, *_ in gt.BLOCK_PARAMS)
with open(os.path.join(tmp, "loss.ein"), "w") as f:
    f.write("from transformer import block\n\n"
            f'def loss({params}, r: f32["batch seq hidden"]) -> f32[""]:\n'
            f"    out = block(x, {', '.join(weights)})\n"
            '    return reduce(out * r, "b s m ->", "sum")\n')
forward, backward, memory = account(
    os.path.join(tmp, "loss.ein"), "loss", weights, "adamw",
    {"batch": gt.BATCH, "seq": gt.SEQ, "hidden": gt.HIDDEN, "half": gt.HALF,
     "ffn": gt.FFN})
rng = np.random.default_rng(0)
inputs = {n: torch.tensor(v, dtype=torch.float32, requires_grad=n in weights)
          for n, v in gt.block_inputs(rng).items()}
with FlopCounterMode(display=False) as counter:
    loss = gt.block_torch(**inputs)
torch_forward = counter.get_total_flops()
with FlopCounterMode(display=False) as counter:
    loss.backward()
torch_backward = counter.get_total_flops()
check("block forward matmul FLOPs", forward, torch_forward)
check("block backward matmul FLOPs", backward, torch_backward)
# By hand: N = batch*seq tokens, E = 2*half per head; the projections are
# 2*N*P_matmul (qkv: hidden x 3*heads*E, out: heads*E x hidden, gate, up,
# down: hidden x ffn each), the scores and the weighted sum 2*batch*heads*
# seq*seq*E each. Every contraction has both operands differentiated (x
# enters through rmsnorm's gain), so the backward is twice the forward.
N, E, H = gt.BATCH * gt.SEQ, 2 * gt.HALF, gt.HEADS
matmul_params = (gt.HIDDEN * 3 * H * E + H * E * gt.HIDDEN +
                 3 * gt.HIDDEN * gt.FFN)
by_hand = 2 * N * matmul_params + 2 * 2 * gt.BATCH * H * gt.SEQ ** 2 * E
check("block forward matmul FLOPs by hand", forward, by_hand)
check("block backward matmul FLOPs by hand", backward, 2 * by_hand)
opt = torch.optim.AdamW([inputs[n] for n in weights])
opt.step()
check("block parameter bytes", memory["parameters"],
      nbytes([inputs[n] for n in weights]))
check("block gradient bytes", memory["gradients"],
      nbytes([inputs[n].grad for n in weights]))
check("block adamw state bytes",
      memory[next(k for k in memory if k.startswith("optimizer states"))],
      nbytes([t for n in weights for t in opt.state[inputs[n]].values()
              if torch.is_tensor(t) and t.shape == inputs[n].shape]))

# The LoRA adapter of examples/lora.ein (its lora_step differentiates sum(y * g)
# for x, A and B): the three-operand einsum is differentiated as the chain
# it runs, (x A) B, so its backward is torch's four products, twice the
# forward, and it saves what torch saves besides the inputs x, A, B: T = x A
# and g (torch.autograd.graph.saved_tensors_hooks lists them).
LB, LI, LO, LR = 64, 32, 24, 4
forward, backward, memory = account(f"{examples}/lora.ein", "lora_step", None,
                                    "sgd", {"b": LB, "i": LI, "o": LO, "r": LR})
x = torch.randn(LB, LI, requires_grad=True)
a = torch.randn(LI, LR, requires_grad=True)
w = torch.randn(LR, LO, requires_grad=True)
g = torch.randn(LB, LO)
saved = {}


def pack(t):
    if all(t.data_ptr() != p.data_ptr() for p in (x, a, w)):
        saved[t.data_ptr()] = t.numel() * t.element_size()
    return t


with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
    with FlopCounterMode(display=False) as counter:
        loss = (((x @ a) @ w) * g).sum()
    torch_forward = counter.get_total_flops()
with FlopCounterMode(display=False) as counter:
    loss.backward()
torch_backward = counter.get_total_flops()
check("lora forward matmul FLOPs", forward, torch_forward)
check("lora backward matmul FLOPs", backward, torch_backward)
check("lora forward matmul FLOPs by hand", forward, 2 * LB * LR * (LI + LO))
check("lora backward matmul FLOPs by hand", backward, 2 * forward)
check("lora saved activation bytes", memory["activations saved for the backward"],
      sum(saved.values()))

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
