// einc's subcommands: argument parsing, help, and the check/report/emit/build
// pipelines. Output text goes to the stream the tool passes in; errors are
// returned as values and printed by the tool.
#include "ein/Driver/Driver.h"
#include "ein/Analysis/Training.h"
#include "ein/Compile/Compile.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Driver/Calibrate.h"
#include "ein/Driver/Run.h"
#include "ein/Driver/Train.h"
#include "ein/Engine/Engine.h"
#include "ein/Report/Report.h"
#include "ein/Sema/Autodiff.h"
#include "ein/Sema/Checker.h"
#include "ein/Support/Spelling.h"
#include "ein/Syntax/DiagnosticError.h"
#include "ein/Syntax/Imports.h"
#include "ein/Syntax/Parser.h"
#include "ein/Version.h"

#include "llvm/Config/llvm-config.h"

#include <fmt/format.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <sys/stat.h>

#include "ein/Runtime/Npy.h"
#include "ein/Runtime/SafeTensors.h"
#include "ein/Runtime/OutputFiles.h"
#include "ein/Target/TargetRegistry.h"

namespace ein {

namespace {

/// One subcommand's help: its synopsis (after `einc `), what it does, and
/// the options it takes (keys into kOptionHelp).
struct CommandHelp {
  const char *name;
  std::string synopsis;
  const char *description;
  std::vector<const char *> options;
};

const std::vector<CommandHelp> &commands() {
  static const std::vector<CommandHelp> list = {
      {"check",
       "check FILE [--dim NAME=INT]... [--rank NAME=INT]...",
       R"(Check shapes statically; print diagnostics and the entry checks that
remain for run time. Exit 0 when the file is well-typed, 1 otherwise.)",
       {"--dim", "--rank", "-Werror", "-Wno-NAME"}},
      {"report",
       R"(report FILE [--fn NAME] [--dim NAME=INT]... [--rank NAME=INT]...
            [--in PARAM=FILE.npy...]
            [--device )" +
           deviceNames("|") + R"(] [--peak-flops FLOPS]
            [--bandwidth BYTES_PER_S] [--json] [--expand] [--target=cuda]
            [--no-fusion] [--train [--params W1,W2] [--optimizer NAME]
             [--param-dtype T] [--act-dtype T] [--tokens N]])",
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
fused column. --train adds the resource account of a training step
(docs/autodiff.md): FLOPs of the forward, the backward's data and weight
gradients and the optimizer beside the 2/4/6*N*P rule, memory of
parameters, gradients, optimizer states and saved activations, the peak
of live tensors, the ideal step time. --in binds the function's dims from
.npy files, as `run` does (one per parameter; only their shapes are used).
A line of the table keeps within 160 columns: an op in several fused
loops shows the first and a count (elementwise#15 +2), and a long formula
goes on at its column on the next lines.)",
       {"--fn", "--in", "--dim", "--rank", "--device", "--peak-flops",
        "--bandwidth", "--json", "--expand", "--target", "--no-fusion",
        "--train", "--params", "--optimizer", "--param-dtype", "--act-dtype",
        "--tokens", "-Werror", "-Wno-NAME"}},
      {"run",
       R"(run FILE --fn NAME --in PARAM=FILE.npy... --out FILE.npy... [--dim NAME=INT]...
    [--time] [--peak-flops FLOPS] [--bandwidth BYTES_PER_S] [--perf-jitdump]
    [--size-generic] [--target=cpu|cuda|cuda-emulated] [--allow-tf32])",
       R"(JIT-compile NAME for this CPU with the inputs' sizes and run it.
Inputs and results are .npy files or tensors of safetensors files (a
step's state can be one file in and one out). bf16 inputs are read from
bf16 safetensors, or from f32 .npy files (rounded to nearest even) or raw
uint16 ones; bf16 results are written as f32 to .npy files. Variadics (*NAME,
...) take their rank and sizes from the inputs. Exit 2 when the inputs
do not fit the signature; no output is written then. --target=cuda
builds the function's CUDA source with nvcc and runs it on this
machine's GPU (exit 2 without one); cuda-emulated builds the same
source with the host C++ compiler and runs it on the CPU.)",
       {"--fn", "--in", "--out", "--dim", "--time", "--peak-flops",
        "--bandwidth", "--tiles", "--cpu", "--cpu-features", "--no-fusion",
        "--perf-jitdump", "--size-generic", "--target", "--allow-tf32",
        "-Werror", "-Wno-NAME"}},
      {"train",
       R"(train FILE --fn LOSS --data PARAM=FILE[:TYPE]... --steps N
      [--params W1,W2] [--val-data PARAM=FILE | --val-fraction F]
      [--eval-every N] [--eval-batches N] [--order random|sequential]
      [--seed N] [--accumulate N] [--optimizer sgd|momentum|adam|adamw]
      [--lr LR] [--schedule constant|cosine] [--warmup N] [--min-lr LR]
      [--beta1 B] [--beta2 B] [--eps E] [--weight-decay W] [--momentum M]
      [--clip NORM] [--init FILE.safetensors | --resume CHECKPOINT]
      [--init-rule PATTERN=RULE]... [--checkpoint FILE.safetensors]
      [--checkpoint-every N] [--log FILE.jsonl] [--plot FILE.svg]
      [--print-every N] [--peak-flops FLOPS] [--dim NAME=INT]...
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
step and writes the checkpoint; a second quits at once. Exit 2 for bad
data, checkpoints or options.)",
       {"--fn",           "--data",         "--val-data",
        "--val-fraction", "--eval-every",   "--eval-batches",
        "--params-train", "--steps",        "--order",
        "--seed",         "--accumulate",   "--optimizer-train",
        "--lr",           "--schedule",     "--warmup",
        "--min-lr",       "--beta1",        "--beta2",
        "--eps",          "--weight-decay", "--momentum",
        "--clip",         "--init",         "--init-rule",
        "--resume",       "--checkpoint",   "--checkpoint-every",
        "--log",          "--plot",         "--print-every",
        "--peak-flops",   "--no-cache",     "--dim",
        "--target",       "--tiles",        "--cpu",
        "--cpu-features", "--no-fusion",    "-Werror",
        "-Wno-NAME"}},
      {"calibrate",
       "calibrate [--cpu NAME] [--cpu-features LIST]",
       R"(Measure this CPU (copy bandwidth, ein's matmul rate) and derive its f32
peak from /proc/cpuinfo; stored for `run --time`. With --cpu, the
measured kernels are compiled for that CPU (one this host can run).)",
       {"--cpu", "--cpu-features"}},
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
       R"(emit FILE --stage=ast|ein|linalg|loops|llvm [--dim NAME=INT]...
           [--rank NAME=INT]...)",
       R"(Print a compilation stage. After ein, a dim bound by `dim` or --dim is
static; every other is dynamic, read from the arguments; every variadic's
rank must be fixed (by --rank).)",
       {"--stage", "--dim", "--rank", "--tiles", "--cpu", "--cpu-features",
        "--no-fusion", "-Werror", "-Wno-NAME"}},
  };
  return list;
}

const CommandHelp *findCommand(const std::string &name) {
  for (const CommandHelp &c : commands())
    if (name == c.name)
      return &c;
  return nullptr;
}

/// The options, each with its help text (indented by the printer).
const std::vector<std::pair<const char *, std::string>> kOptionHelp = {
    {"--dim",
     R"(--dim NAME=INT   bind a dim (overrides `dim NAME = ...` in the file))"},
    {"--rank",
     R"(--rank NAME=INT  fix the rank (0 to 16) of the variadic *NAME; the '...'
                 in the type of parameter PARAM is PARAM... (--rank x...=2))"},
    {"--fn", R"(--fn NAME        the function (report: only this one))"},
    {"--in", R"(--in PARAM=FILE.npy
                 the input for parameter PARAM, one per parameter; also
                 PARAM=FILE.safetensors (its tensor PARAM) and
                 FILE.safetensors (each of its tensors is the input of the
                 parameter of its name; one naming none is an error))"},
    {"--out",
     R"(--out FILE.npy   where a result goes, one per result, in order; also
                 NAME=FILE.safetensors (the result is its tensor NAME;
                 several results may share a file) and FILE.safetensors
                 (named as the returned value))"},
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
    {"--stage", R"(--stage=STAGE    ast, ein, linalg, loops or llvm)"},
    {"-o", R"(-o OBJECT.o      the object file to write (also --output))"},
    {"--header", R"(--header HEADER.h
                 the C header to write)"},
    {"--tiles", R"(--tiles KEY=INT[,KEY=INT]...
                 blocking of contractions: mr and nr-vectors (register
                 tile: mr rows x nr-vectors vectors, default 6 x 4 with
                 AVX-512, 6 x 2 without), mc, nc, kc (packed blocks, in f32
                 elements, default 128, 1024, 256), vector-bits (default:
                 the host's), work-items (parallel blocks, default: twice
                 the hardware threads))"},
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
                 host's), as +avx512f,-avx512bw (default:
                 $EIN_CPU_FEATURES))"},
    {"--perf-jitdump",
     R"(--perf-jitdump   write a jitdump for `perf inject --jit` under
                 $JITDUMPDIR (default $HOME)/.debug/jit; also EIN_JIT_PERF=1.
                 EIN_JIT_GDB=1 registers the code with gdb. Both are off by
                 default.)"},
    {"--no-fusion",
     R"(--no-fusion      keep every op its own loop nest: no row tiles, no
                 elementwise op fused into the ops that read it, no
                 epilogue in a contraction's kernel (the CPU target))"},
    {"--size-generic",
     R"(--size-generic   compile without the inputs' sizes (only `dim`, --dim
                 and `#` dims given size 1 are specialised), as `einc
                 build` does, then call with them)"},
    {"--target",
     R"(--target=TARGET  cpu (the default), cuda or (run only) cuda-emulated)"},
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

/// A usage error, with the help to read.
Error usageError(const std::string &command, std::string message) {
  return Error::usage(std::move(message))
      .withContext(fmt::format("run 'einc {}--help' for usage\n",
                               command.empty() ? "" : command + " "));
}

struct Args {
  std::string command, file, fn, stage, device = defaultDevice().name, object,
                                        header, target = "cpu", mainFunction;
  bool allowTf32 = false;
  bool json = false, expand = false, time = false, perfJitdump = false,
       sizeGeneric = false;
  std::vector<std::pair<std::string, std::string>> inputs;
  std::vector<std::pair<std::string, std::string>> outputs;
  double peakFlops = 0, bandwidth = 0;
  bool train = false;
  TrainOptions trainOptions;
  std::vector<std::string> trainParams; // --params
  TrainRunOptions trainRun;             // `einc train`
  CheckOptions check;
  WarningOptions warnings;
  CPUOptions cpu;
};

/// The largest rank --rank accepts.
constexpr int kMaxRank = 16;

std::optional<double> parsePositive(const std::string &text) {
  char *end = nullptr;
  double v = std::strtod(text.c_str(), &end);
  if (text.empty() || *end != '\0' || !(v > 0) || v > 1e30)
    return std::nullopt;
  return v;
}

/// What the command line asks for: a command to run with `Args`, or text
/// (help, version) to print.
struct Parsed {
  std::optional<std::string> text;
};

/// The registry's use of a command's --target.
TargetUse useOf(const std::string &command) {
  return command == "build"    ? TargetUse::Build
         : command == "report" ? TargetUse::Report
                               : TargetUse::Run;
}

/// What the targets read from the command line.
TargetOptions targetOptions(const Args &args) {
  TargetOptions options;
  options.cpu = args.cpu;
  options.allowTf32 = args.allowTf32;
  options.mainFunction = args.mainFunction;
  options.perfListener = args.perfJitdump;
  return options;
}

ErrorOr<Parsed> parseArgs(const std::vector<std::string> &rest, Args &args) {
  if (rest.empty())
    return usageError("", "no command given");
  if (rest[0] == "--help" || rest[0] == "-h" || rest[0] == "help")
    return Parsed{globalUsage()};
  if (rest[0] == "--version" || rest[0] == "version")
    return Parsed{versionText()};
  args.command = rest[0];
  const CommandHelp *command = findCommand(args.command);
  if (!command)
    return usageError("", fmt::format("unknown command '{}'", args.command));
  // --help anywhere after the command asks for its help, whatever else is
  // on the line.
  for (size_t i = 1; i < rest.size(); ++i)
    if (rest[i] == "--help" || rest[i] == "-h")
      return Parsed{commandUsage(*command)};
  auto usage = [&](std::string message) {
    return usageError(args.command, std::move(message));
  };
  // EIN_CPU and EIN_CPU_FEATURES are the defaults of --cpu and
  // --cpu-features (a whole test suite or build can target one CPU).
  bool compiles = args.command == "run" || args.command == "train" ||
                  args.command == "build" || args.command == "emit" ||
                  args.command == "calibrate";
  for (auto [variable, field] :
       {std::pair{"EIN_CPU", &args.cpu.target.name},
        std::pair{"EIN_CPU_FEATURES", &args.cpu.target.features}})
    if (const char *set = std::getenv(variable); compiles && set && *set)
      *field = set;
  if (!args.cpu.target.isHost())
    if (auto resolved = resolveCPU(args.cpu.target); !resolved)
      return usage(fmt::format("from EIN_CPU/EIN_CPU_FEATURES: {}",
                               resolved.error().message));
  for (size_t i = 1; i < rest.size(); ++i) {
    const std::string &a = rest[i];
    auto value = [&](const std::string &flag) -> std::optional<std::string> {
      if (a.rfind(flag + "=", 0) == 0)
        return a.substr(flag.size() + 1);
      if (a == flag && i + 1 < rest.size())
        return rest[++i];
      return std::nullopt;
    };
    auto isFlag = [&](const std::string &flag) {
      return a == flag || a.rfind(flag + "=", 0) == 0;
    };
    if (isFlag("--dim")) {
      auto v = value("--dim");
      if (!v)
        return usage("--dim needs NAME=INT");
      auto eq = v->find('=');
      if (eq == std::string::npos || eq == 0)
        return usage(fmt::format("--dim needs NAME=INT, got '{}'", *v));
      std::string name = v->substr(0, eq);
      auto n = parseInt(v->substr(eq + 1));
      if (!n || *n < 0)
        return usage(fmt::format("--dim {}: '{}' is not a non-negative integer "
                                 "that fits in 128 bits",
                                 name, v->substr(eq + 1)));
      args.check.dimOverrides[name] = *n;
    } else if (isFlag("--rank") && args.command != "run") {
      auto v = value("--rank");
      if (!v)
        return usage("--rank needs NAME=INT");
      auto eq = v->rfind('=');
      if (eq == std::string::npos || eq == 0)
        return usage(fmt::format("--rank needs NAME=INT, got '{}'", *v));
      std::string name = v->substr(0, eq);
      auto n = parseInt(v->substr(eq + 1));
      if (!n || *n < 0 || *n > Int(kMaxRank))
        return usage(fmt::format("--rank {}: '{}' is not a rank from 0 to {}",
                                 name, v->substr(eq + 1), kMaxRank));
      args.check.packRanks[name] = static_cast<size_t>(*n);
    } else if (isFlag("--in") &&
               (args.command == "run" || args.command == "report")) {
      auto v = value("--in");
      auto eq = v ? v->find('=') : std::string::npos;
      // A safetensors file alone: its tensors name the parameters.
      if (v && eq == std::string::npos && runtime::isSafeTensorsPath(*v)) {
        args.inputs.push_back({"", *v});
      } else {
        if (!v || eq == std::string::npos || eq == 0 || eq + 1 == v->size())
          return usage("--in needs PARAM=FILE.npy, PARAM=FILE.safetensors "
                       "or FILE.safetensors");
        args.inputs.push_back({v->substr(0, eq), v->substr(eq + 1)});
      }
    } else if (isFlag("--out") && args.command == "run") {
      auto v = value("--out");
      if (!v || v->empty())
        return usage("--out needs FILE.npy, FILE.safetensors or "
                     "NAME=FILE.safetensors");
      // NAME=FILE.safetensors: the result's tensor name; '=' before any
      // '/' so that a path holding '=' is still a path.
      auto eq = v->find('=');
      if (runtime::isSafeTensorsPath(*v) && eq != std::string::npos &&
          eq < v->find('/')) {
        if (eq == 0 || !runtime::isSafeTensorsPath(v->substr(eq + 1)))
          return usage("--out needs NAME=FILE.safetensors");
        args.outputs.push_back({v->substr(0, eq), v->substr(eq + 1)});
      } else {
        args.outputs.push_back({"", *v});
      }
    } else if ((a == "-o" || isFlag("--output")) && args.command == "build") {
      std::optional<std::string> v;
      if (a != "-o")
        v = value("--output");
      else if (i + 1 < rest.size())
        v = rest[++i];
      if (!v || v->empty())
        return usage("-o needs an object file path");
      args.object = *v;
    } else if (isFlag("--header") && args.command == "build") {
      auto v = value("--header");
      if (!v || v->empty())
        return usage("--header needs a file path");
      args.header = *v;
    } else if (a == "--time" && args.command == "run") {
      args.time = true;
    } else if (a == "--perf-jitdump" && args.command == "run") {
      args.perfJitdump = true;
    } else if (a == "--no-fusion" &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "emit" ||
                args.command == "report")) {
      args.cpu.fusion = false;
    } else if (a == "--size-generic" && args.command == "run") {
      args.sizeGeneric = true;
    } else if (isFlag("--fn") &&
               (args.command == "report" || args.command == "run" ||
                args.command == "train")) {
      auto v = value("--fn");
      if (!v)
        return usage("--fn needs a function name");
      args.fn = *v;
    } else if (isFlag("--device") && args.command == "report") {
      auto v = value("--device");
      if (!v || !findDevice(*v))
        return usage("--device expects one of " + deviceNames(", "));
      args.device = *v;
    } else if (isFlag("--peak-flops") &&
               (args.command == "report" || args.command == "run")) {
      auto v = value("--peak-flops");
      auto d = v ? parsePositive(*v) : std::nullopt;
      if (!d)
        return usage("--peak-flops expects a positive number of FLOP/s");
      args.peakFlops = *d;
    } else if (isFlag("--bandwidth") &&
               (args.command == "report" || args.command == "run")) {
      auto v = value("--bandwidth");
      auto d = v ? parsePositive(*v) : std::nullopt;
      if (!d)
        return usage("--bandwidth expects a positive number of bytes/s");
      args.bandwidth = *d;
    } else if (isFlag("--tiles") &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "emit")) {
      auto v = value("--tiles");
      if (!v)
        return usage("--tiles needs KEY=INT[,KEY=INT]...");
      if (auto tiles = parseContractionTiles(*v, args.cpu); !tiles)
        return usage(tiles.error().message);
    } else if ((isFlag("--cpu") || isFlag("--cpu-features")) &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "emit" ||
                args.command == "calibrate")) {
      bool name = isFlag("--cpu");
      auto v = value(name ? "--cpu" : "--cpu-features");
      if (!v || v->empty())
        return usage(name ? "--cpu needs an LLVM CPU name (e.g. x86-64-v3)"
                          : "--cpu-features needs +FEATURE[,-FEATURE]...");
      (name ? args.cpu.target.name : args.cpu.target.features) = *v;
      if (auto resolved = resolveCPU(args.cpu.target); !resolved)
        return usage(resolved.error().message);
    } else if (isFlag("--target") &&
               (args.command == "run" || args.command == "train" ||
                args.command == "build" || args.command == "report")) {
      auto v = value("--target");
      auto target = lookupTarget(v ? *v : "", useOf(args.command));
      if (!target)
        return usage(target.error().message);
      args.target = *v;
    } else if (isFlag("--main") && args.command == "build") {
      auto v = value("--main");
      if (!v || v->empty())
        return usage("--main needs a function name");
      args.mainFunction = *v;
    } else if (a == "--allow-tf32" &&
               (args.command == "run" || args.command == "build")) {
      args.allowTf32 = true;
    } else if (a == "--json" && args.command == "report") {
      args.json = true;
    } else if (a == "--expand" && args.command == "report") {
      args.expand = true;
    } else if (a == "--train" && args.command == "report") {
      args.train = true;
    } else if (isFlag("--optimizer") && args.command == "report") {
      auto v = value("--optimizer");
      if (!v || !findOptimizer(*v))
        return usage("--optimizer expects one of sgd, momentum, adagrad, "
                     "rmsprop, adam, adamw");
      args.trainOptions.optimizer = *v;
    } else if ((isFlag("--param-dtype") || isFlag("--act-dtype")) &&
               args.command == "report") {
      bool param = isFlag("--param-dtype");
      auto v = value(param ? "--param-dtype" : "--act-dtype");
      auto t = v ? parseDType(*v) : std::nullopt;
      if (!t || !isFloat(*t))
        return usage(fmt::format("{} expects a float dtype: f64, f32, f16, "
                                 "bf16, f8e4m3, f8e5m2",
                                 param ? "--param-dtype" : "--act-dtype"));
      (param ? args.trainOptions.paramDType : args.trainOptions.actDType) = *t;
    } else if (isFlag("--tokens") && args.command == "report") {
      auto v = value("--tokens");
      auto e = v ? std::optional(parseSizeExpr(*v)) : std::nullopt;
      if (!e || !*e)
        return usage("--tokens expects a count or a formula of dims (b*s)");
      args.trainOptions.tokens = **e;
    } else if (isFlag("--params") && args.command == "report") {
      auto v = value("--params");
      if (!v || v->empty())
        return usage("--params expects parameter names: w1,w2");
      std::string name;
      for (char c : *v + ",") {
        if (c != ',') {
          name += c;
          continue;
        }
        if (!name.empty())
          args.trainParams.push_back(name);
        name.clear();
      }
    } else if (isFlag("--stage") && args.command == "emit") {
      auto v = value("--stage");
      if (!v || (*v != "ast" && *v != "ein" && *v != "linalg" &&
                 *v != "loops" && *v != "llvm"))
        return usage("--stage expects ast, ein, linalg, loops or llvm");
      args.stage = *v;
    } else if (a.rfind("-W", 0) == 0 && args.command != "calibrate") {
      if (a == "-Werror") {
        args.warnings.asErrors = true;
        continue;
      }
      bool disable = a.rfind("-Wno-", 0) == 0;
      std::string name = a.substr(disable ? 5 : 2);
      auto kind = parseWarningName(name);
      if (!kind) {
        std::string known;
        for (WarningKind k : allWarningKinds())
          known +=
              fmt::format("{}{}", known.empty() ? "" : ", ", warningName(k));
        return usage(fmt::format("unknown warning '{}' in {}; the warnings "
                                 "are {}",
                                 name, a, known));
      }
      if (disable)
        args.warnings.disabled.insert(*kind);
      else
        args.warnings.disabled.erase(*kind);
    } else if (args.command == "train" &&
               isTrainOption(a.substr(0, a.find('=')))) {
      std::string flag = a.substr(0, a.find('='));
      std::optional<std::string> v;
      if (trainOptionTakesValue(flag))
        v = value(flag);
      if (auto ok = parseTrainOption(flag, v, args.trainRun); !ok)
        return usage(ok.error().message);
    } else if (!a.empty() && a[0] == '-') {
      return usage(
          fmt::format("unknown option '{}' for '{}'", a, args.command));
    } else if (args.command == "calibrate") {
      return usage(fmt::format(
          "calibrate takes no FILE, only --cpu and --cpu-features; got '{}'",
          a));
    } else if (args.file.empty()) {
      args.file = a;
    } else {
      return usage(fmt::format("unexpected argument '{}'", a));
    }
  }
  if (args.command == "calibrate") {
    // Calibration runs its kernels here: a CPU this host cannot run is
    // refused now, not by SIGILL.
    auto target = resolveCPU(args.cpu.target);
    if (auto runnable = checkHostCanRun(*target); !runnable)
      return usage(runnable.error().message);
    return Parsed{};
  }
  if (args.file.empty())
    return usage(fmt::format("'{}' needs a FILE", args.command));
  const Target *target = nullptr;
  if (args.command == "run" || args.command == "train" ||
      args.command == "build" || args.command == "report") {
    auto found = lookupTarget(args.target, useOf(args.command));
    if (!found)
      return usage(found.error().message);
    target = *found;
  }
  if (!args.mainFunction.empty() && !target->acceptsMain()) {
    std::string with;
    for (const Target *t : targets())
      if (t->serves(TargetUse::Build) && t->acceptsMain())
        with += (with.empty() ? "--target=" : " or --target=") + t->flag();
    return usage("--main needs " + with);
  }
  if (args.command == "build" && (args.object.empty() || args.header.empty()))
    return usage(fmt::format("build needs -o {} and --header HEADER.h",
                             target->outputName()));
  if (args.command == "run" && args.fn.empty())
    return usage("run needs --fn NAME");
  if (args.command == "train") {
    args.trainRun.function = args.fn;
    if (auto ok = checkTrainOptions(args.trainRun); !ok)
      return usage(ok.error().message);
  }
  if (args.command == "run" || args.command == "train")
    if (auto runnable = target->checkRunnable(targetOptions(args)); !runnable)
      return usage(runnable.error().message);
  if (args.command == "emit" && args.stage.empty())
    return usage("emit needs --stage=ast|ein|linalg|loops|llvm");
  return Parsed{};
}

/// `einc report --train`: the function's report and its training account.
/// A function without grad() is differentiated here, its first result (a
/// scalar loss) with respect to --params.
ErrorOr<void> reportTraining(const Args &args, const CheckedModule &checked,
                             const Target &target, ReportOptions options,
                             const std::string &path, std::ostream &out) {
  auto programError = [&](std::string message) {
    return Error::inFile(ErrorKind::Program, path, std::move(message));
  };
  if (args.fn.empty() && checked.functions.size() != 1)
    return usageError("report", "--train needs --fn NAME (the training step "
                                "or the loss to differentiate)");
  const CheckedFunction *found =
      args.fn.empty() ? &checked.functions.front() : checked.find(args.fn);
  CheckedModule module = checked;
  module.functions = {*found};
  CheckedFunction &fn = module.functions.front();
  options.function = fn.name;
  if (!args.trainParams.empty()) {
    if (!fn.gradWrt.empty())
      return usageError("report", fmt::format("'{}' differentiates with "
                                              "grad(); --params is for a "
                                              "loss function without one",
                                              fn.name));
    if (fn.returns.empty() || !isFloat(fn.values[fn.returns[0]].type.dtype) ||
        !fn.ctx.expand(fn.values[fn.returns[0]].type.shape).empty())
      return programError(fmt::format(
          "--train --params needs '{}' to return a scalar float loss first",
          fn.name));
    std::vector<unsigned> wrt;
    for (const std::string &name : args.trainParams) {
      auto it =
          std::find_if(fn.params.begin(), fn.params.end(),
                       [&](unsigned v) { return fn.values[v].name == name; });
      if (it == fn.params.end())
        return usageError("report",
                          fmt::format("--params: '{}' is not a parameter of "
                                      "'{}'",
                                      name, fn.name));
      if (!isFloat(fn.values[*it].type.dtype))
        return usageError("report", fmt::format("--params: '{}' is not a "
                                                "float tensor",
                                                name));
      wrt.push_back(*it);
    }
    GradientResult grads = appendGradient(fn, fn.returns[0], wrt, fn.loc);
    if (grads.error) {
      SourceLoc at = grads.error->loc;
      return programError(fmt::format("{}:{}:{}: cannot differentiate: {}",
                                      module.pathOf(at), at.line, at.col,
                                      grads.error->message));
    }
    fn.gradWrt = wrt;
    fn.gradLosses = {fn.returns[0]};
    // The gradients are results of the step, as grad() would return them.
    for (size_t i = 0; i < wrt.size(); ++i) {
      fn.returns.push_back(grads.grads[i]);
      fn.results.push_back(fn.values[grads.grads[i]].type);
    }
  }
  if (fn.gradWrt.empty())
    return usageError("report",
                      fmt::format("--train: '{}' has no grad(); name the "
                                  "parameters to train with --params w1,w2 "
                                  "(its first result is the loss)",
                                  fn.name));
  // The target's column of the step, op by op (Described::TrainingStep).
  std::map<std::string, TargetColumn> columns = Engine(args.cpu).describe(
      target, module, fn.name, Described::TrainingStep, targetOptions(args));
  options.targetColumns = &columns;
  if (args.json) {
    std::string report = reportJSON(module, options);
    out << fmt::format("{{\"report\":{},\"train\":{}}}\n",
                       report.substr(0, report.find_last_not_of("\n") + 1),
                       trainReportJSON(module, fn, options, args.trainOptions));
    return {};
  }
  out << reportTable(module, options)
      << trainReportTable(module, fn, options, args.trainOptions);
  return {};
}

/// `einc report` of `checked` (checked with --dim, or with the sizes of
/// --in), the table, JSON or training account.
ErrorOr<void> reportCommand(const Args &args, const CheckedModule &checked,
                            const SourceFile &file, std::ostream &out) {
  ReportOptions options;
  options.function = args.fn;
  options.device = findDevice(args.device);
  options.peakOverride = args.peakFlops;
  options.bandwidthOverride = args.bandwidth;
  auto target = lookupTarget(args.target, TargetUse::Report);
  if (!target)
    return target.error();
  options.expandCalls = args.expand;
  if (args.train)
    return reportTraining(args, checked, **target, options, file.path, out);
  // The target's column: what each op becomes on it (the CPU's fusion, the
  // CUDA plan), asked of the target through the Engine.
  std::map<std::string, TargetColumn> columns = Engine(args.cpu).describe(
      **target, checked, args.fn, Described::Function, targetOptions(args));
  options.targetColumns = &columns;
  out << (args.json ? reportJSON(checked, options)
                    : reportTable(checked, options));
  return {};
}

ErrorOr<void> runCommand(const Args &args, std::ostream &out,
                         std::ostream &warnings) {
  if (args.command == "calibrate") {
    auto text = runCalibrate(args.cpu);
    if (!text)
      return text.error();
    out << *text;
    return {};
  }
  auto file = readSource(args.file);
  if (!file)
    return file.error();
  DiagnosticEngine diags(*file);
  diags.setWarningOptions(args.warnings);
  Module module = parseModule(*file, diags);
  if (!diags.hadError())
    resolveImports(module, *file, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  if (args.command == "emit" && args.stage == "ast") {
    printAST(module, out);
    return {};
  }
  if (args.command == "run") {
    // The symbolic check of `run`, once: its warnings are printed here and
    // runFunction binds and compiles from it.
    CheckOptions symbolic = args.check;
    symbolic.onlyFunction = args.fn;
    CheckedModule checked = checkModule(module, symbolic, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    diags.print(warnings);
    RunOptions run;
    run.function = args.fn;
    run.inputs = args.inputs;
    run.outputs = args.outputs;
    run.time = args.time;
    run.sizeGeneric = args.sizeGeneric;
    run.peakFlops = args.peakFlops;
    run.bandwidth = args.bandwidth;
    run.cpu = args.cpu;
    run.target = args.target;
    run.allowTf32 = args.allowTf32;
    run.jit = JITOptions::fromEnvironment();
    run.jit.perfListener |= args.perfJitdump;
    return runFunction(*file, module, args.check, run, out, &checked);
  }
  if (args.command == "train") {
    TrainRunOptions train = args.trainRun;
    train.target = args.target;
    train.cpu = args.cpu;
    train.jit = JITOptions::fromEnvironment();
    CheckOptions symbolic = args.check;
    symbolic.onlyFunction = args.fn;
    checkModule(module, symbolic, diags);
    if (diags.hadError())
      return errorFromDiagnostics(diags);
    diags.print(warnings);
    return trainFunction(*file, module, args.check, train, out);
  }
  CheckedModule checked = checkModule(module, args.check, diags);
  if (diags.hadError())
    return errorFromDiagnostics(diags);
  diags.print(warnings);
  // Lowering gives every tensor a fixed rank: a variadic must have one.
  // `build` builds the entry points whose ranks are fixed and skips the
  // others with a note (a variadic helper such as `rmsnorm(x: f32["*b d"])`
  // is inlined into its callers, which build); it fails only when no entry
  // point is left. `emit` prints every function, so each must lower.
  bool lowers =
      args.command == "build" ||
      (args.command == "emit" && args.stage != "ast" && args.stage != "ein");
  if (lowers) {
    std::vector<CheckedFunction> fixed;
    std::optional<Error> firstUnfixed;
    std::string notes;
    for (auto &fn : checked.functions) {
      auto pack = variadicOfUnknownRank(fn);
      if (!pack) {
        fixed.push_back(fn);
        continue;
      }
      std::string flag = *pack == "..." ? "PARAM..." : *pack;
      if (!firstUnfixed)
        firstUnfixed = Error::at(
            ErrorKind::Program, file->path, fn.loc.line, fn.loc.col,
            fmt::format("cannot {} '{}': the rank of variadic {} is not "
                        "fixed; give it with --rank {}=N",
                        args.command == "build" ? "build" : "lower", fn.name,
                        *pack, flag));
      notes += fmt::format("{}:{}:{}: note: not building '{}': the rank of "
                           "variadic {} is not fixed (--rank {}=N builds "
                           "it)\n",
                           file->path, fn.loc.line, fn.loc.col, fn.name, *pack,
                           flag);
    }
    if (firstUnfixed && (args.command == "emit" || fixed.empty()))
      return *firstUnfixed;
    warnings << notes;
    checked.functions = std::move(fixed);
  }
  if (args.command == "build") {
    auto target = lookupTarget(args.target, TargetUse::Build);
    if (!target)
      return target.error();
    return Engine(args.cpu).buildFiles(**target, checked, file->path,
                                       args.object, args.header,
                                       targetOptions(args));
  }
  if (args.command == "check") {
    for (auto &fn : checked.functions) {
      for (auto &c : fn.ctx.constraints)
        out << fmt::format("{}: {}: entry check: {}\n", file->path, fn.name,
                           c.str());
      for (auto &[name, value] : fn.ctx.inferred)
        out << fmt::format("{}: {}: entry check: {} == {}\n", file->path,
                           fn.name, name, toString(value));
    }
    return {};
  }
  if (args.command == "report") {
    if (!args.fn.empty() && !checked.find(args.fn))
      return noFunctionError(file->path, args.fn, module.functionNames());
    // --in: the function checked with the inputs' sizes, as `run` binds
    // them (entry checks included; only the shapes of the files are read).
    if (!args.inputs.empty()) {
      if (args.fn.empty() && checked.functions.size() != 1)
        return usageError("report", "--in needs --fn NAME (the function "
                                    "whose parameters the files are)");
      std::string name =
          args.fn.empty() ? checked.functions.front().name : args.fn;
      auto tensors = readInputs(*checked.find(name), name, args.inputs,
                                /*convert=*/false);
      if (!tensors)
        return tensors.error();
      std::vector<std::vector<int64_t>> shapes;
      for (const runtime::HostTensor &tensor : *tensors)
        shapes.push_back(tensor.shape);
      Engine engine(args.cpu);
      auto symbolic = engine.check(*file, module, args.check, name);
      if (!symbolic)
        return symbolic.error();
      auto bound = engine.bind(*file, module, args.check, *symbolic, name,
                               shapes, Specialisation::Sizes);
      if (!bound)
        return bound.error();
      checked = std::move(bound->concrete);
      Args only = args;
      only.fn = name;
      return reportCommand(only, checked, *file, out);
    }
    return reportCommand(args, checked, *file, out);
  }
  IRStage stage = args.stage == "ein"      ? IRStage::Ein
                  : args.stage == "linalg" ? IRStage::Linalg
                  : args.stage == "loops"  ? IRStage::Loops
                                           : IRStage::LLVM;
  if (auto emitted = emitIR(checked, stage, out, args.cpu); !emitted)
    return Error::inFile(ErrorKind::Program, file->path,
                         fmt::format("cannot emit --stage={}:", args.stage))
        .withContext(std::move(emitted.error().context));
  return {};
}

} // namespace

ErrorOr<void> runEinc(const std::vector<std::string> &arguments,
                      std::ostream &out, std::ostream &warnings) {
  Args args;
  auto parsed = parseArgs(arguments, args);
  if (!parsed)
    return parsed.error();
  if (parsed->text) {
    out << *parsed->text;
    return {};
  }
  return runCommand(args, out, warnings);
}

} // namespace ein
