// einc's help: each command's synopsis and description, and the one table
// of option help texts every command's usage is printed from.
#include "Help.h"

#include "ein/Analysis/Collectives.h"
#include "ein/Analysis/Cost.h"
#include "ein/Version.h"

#include "llvm/Config/llvm-config.h"

#include <fmt/format.h>

namespace ein {

const std::vector<CommandHelp> &commands() {
  static const std::vector<CommandHelp> list = {
      {"check",
       R"(check FILE [--dim NAME=INT]... [--mesh AXIS=INT,...] [--rank NAME=INT]...
       einc check FILE.py [--lang=python] [--verbose] [--json])",
       R"(Check shapes statically; print diagnostics and the entry checks that
remain for run time. Exit 0 when the file is well-typed, 1 otherwise.
A Python file (FILE.py, or --lang=python) is read with python3's ast
($EIN_PYTHON overrides): its jaxtyping annotations, einops calls and
everyday torch/numpy ops are checked by the same rules, what is not
understood is skipped, and a report counts what was checked
(docs/python-check.md).)",
       {"--dim", "--mesh", "--rank", "-Werror", "-Wno-NAME", "--lang",
        "--verbose", "--json"}},
      {"report",
       R"(report FILE [--fn NAME] [--dim NAME=INT]... [--rank NAME=INT]...
            [--in PARAM=FILE.npy...]
            [--device )" +
           deviceNames("|") + R"(] [--peak-flops FLOPS]
            [--bandwidth BYTES_PER_S] [--json] [--expand] [--target=cuda]
            [--mesh AXIS=INT,...] [--fabric NAME]
            [--no-fusion] [--train [--params W1,W2] [--optimizer NAME]
             [--param-dtype T] [--act-dtype T] [--tokens N]
             [--ranks N [--dp-dim DIM] [--fabric NAME] [--bucket-mb MB]
              [--zero 0|1|2|3]]])",
       R"(Per-op FLOPs, bytes, arithmetic intensity, roofline time, view or copy,
and totals per function. The fused column says which ops the CPU target
computes in one loop nest: rows#N (the N-th loop over row tiles: a
softmax, a layer norm), elementwise#N (elementwise ops fused into the op
reading them), - (its own loop nest; every op with --no-fusion), ? (the
function does not compile for the CPU). A call of another function is
one row with the callee's totals (--expand lists its ops under it), and
a table of the totals by function follows. --target=cuda adds what each
op becomes on a GPU (the cuBLASLt call or kernel, and the bytes of any
permute a contraction of row-major operands needs first) instead of the
fused column, marking the ops one kernel computes: rows#N (a row kernel:
softmax, a norm), epilogue#N (a GEMM's epilogue), elementwise#N (one
ein_map). --train adds the resource account of a training step
(docs/autodiff.md): FLOPs of the forward, the backward's data and weight
gradients and the optimizer beside the 2/4/6*N*P rule, memory of
parameters, gradients, optimizer states and saved activations, the peak
of live tensors, the ideal step time; with --ranks N, the memory per
device of N data-parallel ranks under DDP and ZeRO-1/2/3 and each
step's collectives on --fabric, against the step's compute
(docs/distributed.md §5). --in binds the function's dims from
.npy files, as `run` does (one per parameter; only their shapes are used).
On a file with a mesh, each op counts its block on one rank, and the
collectives layout inference puts in are listed with their group size,
bytes and time on --fabric (docs/distributed.md §5). A line of the table keeps within 160 columns: an op in several fused
loops shows the first and a count (elementwise#15 +2), and a long formula
goes on at its column on the next lines.)",
       {"--fn",        "--in",        "--dim",          "--mesh",
        "--rank",      "--device",    "--peak-flops",   "--bandwidth",
        "--json",      "--expand",    "--target",       "--no-fusion",
        "--train",     "--params",    "--optimizer",    "--param-dtype",
        "--act-dtype", "--tokens",    "--ranks-report", "--dp-dim-report",
        "--fabric",    "--bucket-mb", "--zero-report",  "-Werror",
        "-Wno-NAME"}},
      {"run",
       R"(run FILE --fn NAME --in PARAM=FILE.npy... --out FILE.npy... [--dim NAME=INT]...
    [--time] [--peak-flops FLOPS] [--bandwidth BYTES_PER_S] [--perf-jitdump]
    [--size-generic] [--target=cpu|cuda|cuda-emulated] [--allow-tf32]
    [--mesh AXIS=N,... --ranks N --simulate])",
       R"(JIT-compile NAME for this CPU with the inputs' sizes and run it.
Inputs and results are .npy files or tensors of safetensors files or .npz
archives (a step's state can be one file in and one out). bf16 inputs are
read from bf16 safetensors, or from f32 .npy arrays (rounded to nearest
even) or raw uint16 ones; bf16 results are written as f32 to .npy files
and .npz archives. Variadics (*NAME, ...) take their rank and sizes from
the inputs. Exit 2 when the inputs do not fit the signature; no output
is written then. --target=cuda builds the function's CUDA source with
nvcc and runs it on this machine's GPU (exit 2 without one);
cuda-emulated builds the same source with the host C++ compiler and
runs it on the CPU. A file with a mesh runs sharded on simulated ranks
(--ranks N --simulate, N the mesh's product): each rank computes its
blocks, the results are completed and assembled (docs/distributed.md §4).
A program whose collectives are all-reduces and reduce-scatters runs as
one compiled function per rank with its collectives inside
(EIN_SHARDED_RUN=parts runs it cut at them instead); on --target=cuda
and cuda-emulated too, its collectives on each rank's NCCL communicators
(emulated under cuda-emulated); a program cut at other collectives runs
there as parts, each a compiled CUDA function on the device's buffers.)",
       {"--fn",           "--in",           "--out",          "--dim",
        "--mesh",         "--time",         "--peak-flops",   "--bandwidth",
        "--tiles",        "--cpu",          "--cpu-features", "--no-fusion",
        "--perf-jitdump", "--size-generic", "--target",       "--allow-tf32",
        "--ranks-run",    "--simulate",     "-Werror",        "-Wno-NAME"}},
      {"train",
       R"(train FILE --fn LOSS --data PARAM=FILE[:TYPE]... --steps N
      [--params W1,W2] [--val-data PARAM=FILE | --val-fraction F]
      [--eval-every N] [--eval-batches N] [--order random|sequential]
      [--seed N] [--accumulate N] [--optimizer sgd|momentum|adam|adamw]
      [--lr LR] [--schedule constant|cosine] [--warmup N] [--min-lr LR]
      [--beta1 B] [--beta2 B] [--eps E] [--weight-decay W] [--momentum M]
      [--clip NORM] [--key PARAM]... [--scalar PARAM=TRAIN[:EVAL]]...
      [--loss-scale none|dynamic[:INIT]|S]
      [--loss-scale-growth-interval N]
      [--init FILE.safetensors | --resume CHECKPOINT]
      [--init-rule PATTERN=RULE]... [--checkpoint FILE.safetensors]
      [--checkpoint-every N] [--log FILE.jsonl] [--plot FILE.svg]
      [--print-every N] [--peak-flops FLOPS] [--dim NAME=INT]...
      [--ranks N] [--dp-dim NAME] [--zero 0|1|2|3]
      [--mesh AXIS=INT,... --ranks N [--simulate]]
      [--target=cpu|cuda|cuda-emulated])",
       R"(Train the parameters of LOSS (a function whose first result is a scalar
float loss) by the loop of docs/training.md: each step fills the data
parameters' batches from memory-mapped files, computes the loss and its
gradient (compiled once), averages --accumulate micro-batches, clips the
global norm, and updates the parameters and optimizer states it holds in
memory with ein.optim's update at the step's learning rate. A progress
line per step gives the loss, learning rate, gradient norm, tokens/s,
MFU against the analytic FLOPs and memory against `report --train`'s
peak; --log writes them as JSON lines, --plot draws the loss curve.
Checkpoints are safetensors files (parameters, optimizer states, step);
--resume continues one exactly. The first SIGINT stops after the current
step and writes the checkpoint; a second quits at once. A file with a
mesh trains on the mesh's ranks (tensor parallel): each holds its blocks
of the parameters and optimizer states (on the CUDA targets, in the
device's memory) and runs the sharded gradient; checkpoints hold whole
tensors. Exit 2 for bad data, checkpoints or
options.)",
       {"--fn",           "--data",
        "--val-data",     "--val-fraction",
        "--eval-every",   "--eval-batches",
        "--params-train", "--steps",
        "--order",        "--seed",
        "--accumulate",   "--optimizer-train",
        "--lr",           "--schedule",
        "--warmup",       "--min-lr",
        "--beta1",        "--beta2",
        "--eps",          "--weight-decay",
        "--momentum",     "--clip",
        "--key",          "--scalar",
        "--loss-scale",   "--loss-scale-growth-interval",
        "--ranks",        "--dp-dim",
        "--zero",         "--mesh",
        "--simulate",     "--init",
        "--init-rule",    "--resume",
        "--checkpoint",   "--checkpoint-every",
        "--log",          "--plot",
        "--print-every",  "--peak-flops",
        "--no-cache",     "--dim",
        "--target",       "--tiles",
        "--cpu",          "--cpu-features",
        "--no-fusion",    "-Werror",
        "-Wno-NAME"}},
      {"calibrate",
       "calibrate [--cpu NAME] [--cpu-features LIST] [--check SIZES]",
       R"(Measure this CPU (copy bandwidth, ein's matmul rate) and derive its f32
peak from /proc/cpuinfo; stored for `run --time`. With --cpu, the
measured kernels are compiled for that CPU (one this host can run).
Then measure the `host` fabric, this machine's shared memory between MPI
ranks: `mpirun -n 2` (4 on hosts of 4 cores or more) of `einc calibrate`
times all-reduce, all-gather, reduce-scatter, all-to-all and broadcast
from 64 B to 64 MiB (factors of 2, and between two sizes where the time
bends) and stores each one's latency and bus bandwidth by
size, the communication model of the host (docs/distributed.md, section
5), then prints the model against the collectives at sizes it did not
measure. Without MPI or mpirun it says the fabric was not measured. Under
mpirun, calibrate is one rank of that measurement; under mpirun with
--check SIZES (48KiB,3MiB,24MiB) it times the collectives at those sizes
against the stored model instead. Stored in
$XDG_CACHE_HOME/ein/calibration.json.)",
       {"--cpu", "--cpu-features", "--check"}},
      {"build",
       R"(build FILE -o OBJECT.o --header HEADER.h [--dim NAME=INT]...
            [--rank NAME=INT]... [--target=cpu|cuda [--main NAME]]
            [--allow-tf32])",
       R"(Compile every function for this CPU (or --cpu's) into an object file, with a C
header declaring `int ein_NAME(data, sizes, strides per tensor...)`.
A dim bound by `dim` or --dim is compiled in; every other is read from
the arguments at each call (size-generic code); every variadic's rank is
fixed (by --rank): a function whose rank is not is skipped, with a note
(a helper is inlined into its callers). --target=cuda writes one CUDA
C++ source instead of the object (`-o prog.cu`; nvcc compiles it alone,
-lcublasLt), its entry points taking device pointers and a trailing
cudaStream_t.)",
       {"-o", "--header", "--dim", "--rank", "--tiles", "--cpu",
        "--cpu-features", "--no-fusion", "--target", "--allow-tf32", "--main",
        "-Werror", "-Wno-NAME"}},
      {"emit",
       R"(emit FILE --stage=ast|ein|linalg|loops|llvm|cuda [--dim NAME=INT]...
           [--rank NAME=INT]... [--fn NAME --mesh AXIS=INT,...])",
       R"(Print a compilation stage. After ein, a dim bound by `dim` or --dim is
static; every other is dynamic, read from the arguments; every variadic's
rank must be fixed (by --rank). --stage=cuda prints the CUDA source
(einc build --target=cuda's). A file with a mesh: --stage=ein prints
function --fn's local program (its dims split on a mesh axis at their
blocks' sizes) with the mesh dialect's collectives; later stages show
them as calls of the runtime's collectives (ein_comm_all_reduce, ...),
--stage=cuda as calls of the rank's NCCL communicators.)",
       {"--stage", "--fn", "--dim", "--mesh", "--rank", "--tiles", "--cpu",
        "--cpu-features", "--no-fusion", "-Werror", "-Wno-NAME"}},
  };
  return list;
}

const CommandHelp *findCommand(const std::string &name) {
  for (const CommandHelp &c : commands())
    if (name == c.name)
      return &c;
  return nullptr;
}

namespace {

/// The options, each with its help text (indented by the printer).
const std::vector<std::pair<const char *, std::string>> kOptionHelp = {
    {"--dim",
     R"(--dim NAME=INT   bind a dim (overrides `dim NAME = ...` in the file))"},
    {"--mesh",
     R"(--mesh AXIS=INT,...
                 bind the axes of the file's `mesh` (--mesh dp=2,tp=4): as
                 --dim AXIS=INT each, but only for mesh axes, and at least 1;
                 a --dim of the same axis must agree (emit shows a
                 function's local program, run --ranks runs it, train
                 --ranks trains it; build refuses a file with a mesh;
                 report costs it per rank, with its collectives))"},
    {"--rank",
     R"(--rank NAME=INT  fix the rank (0 to 16) of the variadic *NAME; the '...'
                 in the type of parameter PARAM is PARAM... (--rank x...=2))"},
    {"--fn", R"(--fn NAME        the function (report: only this one))"},
    {"--in", R"(--in PARAM=FILE.npy
                 the input for parameter PARAM, one per parameter; also
                 PARAM=FILE.safetensors (its tensor PARAM) and
                 FILE.safetensors (each of its tensors is the input of the
                 parameter of its name; one naming none is an error); the
                 same for .npz archives (np.savez, np.savez_compressed):
                 PARAM=FILE.npz (its array PARAM) and FILE.npz)"},
    {"--out",
     R"(--out FILE.npy   where a result goes, one per result, in order; also
                 NAME=FILE.safetensors (the result is its tensor NAME;
                 several results may share a file) and FILE.safetensors
                 (named as the returned value); the same for .npz archives:
                 NAME=FILE.npz and FILE.npz)"},
    {"--time",
     R"(--time           time the call (median of repeated runs) and compare
                 with the peak figures of `einc calibrate` or those given)"},
    {"--device", "--device NAME    the device of the roofline: " +
                     deviceNames(", ", /*markDefault=*/true)},
    {"--peak-flops", R"(--peak-flops FLOPS
                 peak compute in FLOP/s (overrides the device's or the
                 calibrated figure))"},
    {"--bandwidth", R"(--bandwidth BYTES_PER_S
                 peak memory bandwidth in bytes/s)"},
    {"--json", R"(--json           the report as JSON)"},
    {"--lang", R"(--lang=python    read FILE as Python whatever its name
                 (--lang=ein: as .ein))"},
    {"--verbose",
     R"(--verbose        (check FILE.py) list each function's status and
                 each call not checked, with its reason)"},
    {"--train", R"(--train          the resource account of a training step)"},
    {"--params", R"(--params W1,W2   the parameters trained (--train of a loss
                   function without grad(); its first result is the loss))"},
    {"--optimizer",
     R"(--optimizer NAME sgd (default), momentum, adagrad, rmsprop, adam,
                   adamw: its FLOPs per parameter and its states)"},
    {"--param-dtype",
     R"(--param-dtype T  the dtype of parameters, gradients and optimizer
                   states in the account (default: as declared))"},
    {"--act-dtype", R"(--act-dtype T    the dtype of saved activations in the
                   account (default: as declared))"},
    {"--tokens", R"(--tokens N       N of the 6*N*P rule: a count or a formula
                   of dims (default: the first input's dims but its last))"},
    {"--ranks-report",
     R"(--ranks N        N data-parallel ranks: the memory per device under
                 DDP and ZeRO-1/2/3, and the step's collectives and their
                 time against compute (default: one device, no table))"},
    {"--dp-dim-report",
     R"(--dp-dim DIM     the batch dim the ranks split, DIM/N rows each
                 (default: the one named dim every input but the
                 parameters leads with; an error when they differ))"},
    {"--fabric",
     "--fabric NAME    the links collectives are costed on (a\n"
     "                 sharded program's, and with --train --ranks\n"
     "                 the data-parallel step's): " +
         fabricNames(", ") +
         ",\n                 or host (measured by einc calibrate; default " +
         defaultFabric().name + ")"},
    {"--check",
     R"(--check SIZES    under mpirun, after `einc calibrate` on as many
                 ranks: time each collective at SIZES (48KiB,3MiB,24MiB)
                 against the stored host model)"},
    {"--bucket-mb",
     R"(--bucket-mb MB   the gradient buckets' cap in MiB, which sets how
                 many collectives a step makes (default 25, PyTorch
                 DDP's bucket_cap_mb))"},
    {"--zero-report",
     R"(--zero STAGE     mark one row of --ranks' table: 0 (DDP), 1, 2 or 3)"},
    {"--data", R"(--data PARAM=FILE[:TYPE]
                 the data of parameter PARAM: a .npy file, or raw
                 little-endian elements of TYPE (u8, u16, u32, i32, i64,
                 f32; nanoGPT's .bin files are u16). A 1-D file is a token
                 stream: a [B, W] batch takes B windows of W tokens; an N-D
                 file's rows are samples: a [B, ...] batch takes B rows)"},
    {"--val-data", R"(--val-data PARAM=FILE[:TYPE]
                 the validation data of data parameter PARAM)"},
    {"--val-fraction", R"(--val-fraction F
                 hold out the last F (0 < F <= 0.9) of each data file's
                 first dim for validation)"},
    {"--eval-every", R"(--eval-every N    the validation loss every N steps and
                 at the end)"},
    {"--eval-batches", R"(--eval-batches N  batches per evaluation (default 1;
                 the same batches every time))"},
    {"--params-train", R"(--params W1,W2   the parameters trained (default:
                 every float parameter that is not data))"},
    {"--steps", R"(--steps N        the steps to train (a resumed run stops
                 at the same N))"},
    {"--order", R"(--order ORDER    random (default): sample c starts at
                 splitmix64(seed, c) mod the starts; sequential: windows in
                 order, W-1 apart)"},
    {"--seed", R"(--seed N         the seed of the batches and of the
                 initialisation (default 0))"},
    {"--accumulate", R"(--accumulate N   micro-batches per step, their gradients
                 averaged (default 1))"},
    {"--optimizer-train",
     R"(--optimizer NAME sgd, momentum, adam or adamw (default),
                 ein.optim's functions, as torch.optim's)"},
    {"--lr", R"(--lr LR          the (peak) learning rate (default 1e-3))"},
    {"--schedule", R"(--schedule S     constant (default) or cosine: linear
                 warm-up over --warmup steps to --lr, then a cosine
                 decay to --min-lr at the last step)"},
    {"--warmup", R"(--warmup N       warm-up steps of --schedule cosine)"},
    {"--min-lr", R"(--min-lr LR      the learning rate cosine decays to
                 (default 0))"},
    {"--beta1", R"(--beta1 B        adam(w)'s beta1 (default 0.9))"},
    {"--beta2", R"(--beta2 B        adam(w)'s beta2 (default 0.999))"},
    {"--eps", R"(--eps E          adam(w)'s eps (default 1e-8))"},
    {"--weight-decay",
     R"(--weight-decay W adamw's decoupled weight decay (default 0.01))"},
    {"--momentum", R"(--momentum M     momentum's mu (default 0.9))"},
    {"--clip", R"(--clip NORM      scale the gradient to a global L2 norm of at
                 most NORM, as torch's clip_grad_norm_)"},
    {"--key",
     R"(--key PARAM      feed the i64[""] (or i32[""]) parameter PARAM a fresh
                 random key every micro-batch (a dropout's key))"},
    {"--scalar", R"(--scalar PARAM=TRAIN[:EVAL]
                 feed the f64[""] (or f32[""]) parameter PARAM the
                 number TRAIN in training steps and EVAL (default TRAIN)
                 in evaluations (a dropout rate: p=0.1:0))"},
    {"--loss-scale",
     R"(--loss-scale S   none, dynamic (the default with f16 parameters:
                 torch's GradScaler, from 65536 or dynamic:INIT), or a
                 fixed scale; a step whose gradient is not finite is
                 skipped)"},
    {"--loss-scale-growth-interval", R"(--loss-scale-growth-interval N
                 good steps before a dynamic scale doubles (default
                 2000))"},
    {"--ranks",
     R"(--ranks N        data parallel over N ranks, launched with mpirun
                 (or the ranks of the mpirun einc runs under): each
                 rank takes 1/N of every batch, the gradients are
                 averaged (on a CUDA target, on the device through
                 NCCL), rank 0 alone prints, logs and checkpoints. The
                 ranks first check that they run the same einc build,
                 program and options; a rank that dies or hangs stops
                 the others within EIN_COMM_TIMEOUT s (default 300).
                 A file with a mesh: its N ranks (the product of --mesh's
                 sizes), tensor parallel: each holds its blocks of every
                 parameter and optimizer state by the parameter's layout
                 and runs the sharded gradient on its blocks of the batch
                 (CPU; --simulate for threads))"},
    {"--dp-dim",
     R"(--dp-dim NAME    the batch dim --ranks splits (default: the leading
                 dim of the first --data parameter))"},
    {"--zero",
     R"(--zero STAGE     with --ranks: 1, ZeRO-1, each parameter's optimizer
                 states held and updated by one rank, which broadcasts
                 the new value; 2, ZeRO-2, every gradient and optimizer
                 state sharded evenly over the ranks (reduce-scatter, the
                 update of each rank's shard, all-gather); 3, ZeRO-3, the
                 parameters too, gathered for each step and dropped after
                 (over a bf16/f16 parameter's f32 master: its shard))"},
    {"--init", R"(--init FILE.safetensors
                 the parameters' initial values, by name (converted to
                 the parameter's dtype; a checkpoint's optimizer.*
                 tensors are skipped))"},
    {"--init-rule", R"(--init-rule PATTERN=RULE
                 initialise the parameters whose names match the glob
                 PATTERN by RULE: normal:STD, uniform:BOUND, zeros,
                 ones, const:VALUE; the first match wins (default:
                 normal:0.02 for rank >= 2, zeros otherwise))"},
    {"--resume", R"(--resume CHECKPOINT.safetensors
                 continue the run a checkpoint of the same loss and
                 optimizer saved, from its step)"},
    {"--checkpoint", R"(--checkpoint FILE.safetensors
                 write the state at the end, every --checkpoint-every
                 steps and on SIGINT (replaced whole or not at all))"},
    {"--checkpoint-every", R"(--checkpoint-every N
                 also write the checkpoint every N steps)"},
    {"--log", R"(--log FILE.jsonl one JSON object per step and evaluation
                 (appended to when resuming))"},
    {"--plot", R"(--plot FILE.svg  the loss curves (train and validation) as
                 an SVG picture)"},
    {"--no-cache",
     R"(--no-cache       compile without the disk cache of compiled code
                 ($EIN_CACHE_DIR, else ~/.cache/ein; EIN_CACHE_DIR=off
                 turns it off too), which a second start loads from)"},
    {"--print-every",
     R"(--print-every N  a progress line every N steps (default 1;
                 0: none))"},
    {"--expand", R"(--expand         the ops of each call, indented under it)"},
    {"--stage", R"(--stage=STAGE    ast, ein, linalg, loops, llvm or cuda)"},
    {"-o", R"(-o OBJECT.o      the object file to write (also --output))"},
    {"--header", R"(--header HEADER.h
                 the C header to write)"},
    {"--tiles", R"(--tiles KEY=INT[,KEY=INT]...
                 blocking of contractions: mr and nr-vectors (register
                 tile: mr rows x nr-vectors vectors, default 6 x 4 with
                 AVX-512, 6 x 2 without), mc, nc, kc (packed blocks, in f32
                 elements, default from the CPU's caches: on a Zen 4 252,
                 4096, 512), vector-bits (default: the host's), work-items
                 (parallel blocks, default: twice the hardware threads; one
                 contraction alone splits m once per thread))"},
    {"--cpu",
     R"(--cpu NAME       compile for this CPU, an LLVM CPU name (znver3,
                 skylake-avx512, x86-64-v3 = any AVX2 host, x86-64-v4 =
                 AVX-512) instead of the host: its vector width and common
                 caches set the tiles; `run` refuses a CPU whose features
                 this host lacks (default: $EIN_CPU, else the host,
                 `native`))"},
    {"--cpu-features",
     R"(--cpu-features LIST
                 features added to or removed from --cpu's (or the
                 host's), as +avx512f,-avx512bw; with avx512bf16, bf16
                 contractions run on vdpbf16ps, without it on f32 FMAs
                 (default: $EIN_CPU_FEATURES))"},
    {"--perf-jitdump",
     R"(--perf-jitdump   write a jitdump for `perf inject --jit` under
                 $JITDUMPDIR (default $HOME)/.debug/jit; also EIN_JIT_PERF=1.
                 EIN_JIT_GDB=1 registers the code with gdb. Both are off by
                 default.)"},
    {"--no-fusion",
     R"(--no-fusion      keep every op its own loop nest: no row tiles, no
                 elementwise op fused into the ops that read it, no
                 epilogue in a contraction's kernel (the CPU target); on
                 the CUDA targets every op its own ein_map, no GEMM
                 epilogue)"},
    {"--ranks-run",
     R"(--ranks N        a file with a mesh: run it sharded on N ranks, the
                 product of the mesh's sizes (--mesh tp=2); each rank
                 computes its blocks, the results are assembled
                 (docs/distributed.md §4); MPI ranks check that they run
                 the same einc build, command line and inputs, and time
                 out after EIN_COMM_TIMEOUT s (default 300))"},
    {"--simulate",
     R"(--simulate       with --ranks, a file with a mesh: the ranks run as
                 threads of this process (simulated ranks), not as MPI
                 ranks launched with mpirun; not on --target=cuda, whose
                 ranks would share the GPU's stream)"},
    {"--size-generic",
     R"(--size-generic   compile without the inputs' sizes (only `dim`, --dim
                 and `#` dims given size 1 are specialised), as `einc
                 build` does, then call with them)"},
    {"--target",
     R"(--target=TARGET  cpu (the default), cuda or (run only) cuda-emulated;
                 on cuda, repeated calls with the same buffers replay a
                 CUDA Graph (EIN_CUDA_GRAPHS=0: launch by launch))"},
    {"--main",
     R"(--main NAME      (cuda) add a main() running NAME on raw tensor files:
                 prog [--time] (IN SIZES.. STRIDES..)... (OUT SIZES..)...;
                 IN `-` is a zero-filled input (for timing))"},
    {"--allow-tf32",
     R"(--allow-tf32     let f32 contractions use TF32 tensor cores (CUDA))"},
    {"-Werror",
     R"(-Werror          make warnings errors (exit 1 as for an error))"},
    {"-Wno-NAME",
     R"(-Wno-NAME        do not show the warnings NAME: lone-axis, unused-value,
                 unused-dim (-WNAME shows them again))"},
    {"--help", R"(--help           show this help)"},
    {"--version",
     R"(--version        show the version of einc and of LLVM/MLIR it uses)"},
};

std::string indent(const std::string &text, const std::string &prefix) {
  std::string out;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos)
      end = text.size();
    out += fmt::format("{}{}\n", prefix, text.substr(start, end - start));
    start = end + 1;
  }
  return out;
}

std::string optionHelp(const std::string &name) {
  for (auto &[option, help] : kOptionHelp)
    if (name == option)
      return indent(help, "  ");
  return "";
}

} // namespace

std::string globalUsage() {
  std::string out = "usage: einc <command> FILE [options]\n\nCommands:\n";
  for (const CommandHelp &c : commands()) {
    out += indent(c.synopsis, "  ");
    out += indent(c.description, "      ");
  }
  out += "\nOptions (each command's own: einc COMMAND --help):\n";
  for (const char *option : {"--dim", "--tiles", "--help", "--version"})
    out += optionHelp(option);
  return out;
}

std::string commandUsage(const CommandHelp &command) {
  std::string out = fmt::format("usage: einc {}\n\n", command.synopsis);
  out += command.description;
  out += "\n\nOptions:\n";
  for (const char *option : command.options)
    out += optionHelp(option);
  out += optionHelp("--help");
  return out;
}

std::string versionText() {
  return fmt::format("einc (ein) {}\nbuilt with LLVM/MLIR {}\n",
                     EIN_VERSION_STRING, LLVM_VERSION_STRING);
}

} // namespace ein
