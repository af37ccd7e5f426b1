# `einc report --train` against PyTorch on the lecture's MLP
# (examples/mlp.ein): the forward and backward contraction FLOPs equal what
# torch.utils.flop_counter.FlopCounterMode counts on the same model (it
# counts matmuls only), and the parameter, gradient and optimizer-state
# bytes equal what PyTorch allocates for them, for every optimizer.
# Usage: account_torch.py EINC EXAMPLES_DIR
import json
import subprocess
import sys

try:
    import torch
    from torch.utils.flop_counter import FlopCounterMode
except ImportError as err:
    print(f"FAIL: PyTorch is the oracle of this test and is missing ({err}); "
          "scripts/setup.sh installs it")
    sys.exit(1)

einc, examples = sys.argv[1:3]
failures = 0


def check(label, got, expected):
    global failures
    if got == expected:
        print(f"ok {label}: {got}")
    else:
        failures += 1
        print(f"FAIL {label}: einc {got}, PyTorch {expected}")


def account(source, fn, params, optimizer, dims, dtype=None):
    args = [einc, "report", source, "--fn", fn, "--train", "--params",
            ",".join(params), "--optimizer", optimizer, "--json"]
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
    forward = sum(o["flops"] for o in ops
                  if o["op"] == "einsum" and "phase" not in o)
    backward = sum(o["flops"] for o in ops
                   if o["op"] == "einsum" and o.get("phase") in
                   ("data-grad", "weight-grad"))
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

print(f"{failures} failure(s)")
sys.exit(1 if failures else 0)
