// einc build: LLVM dialect -> LLVM IR -> object file, plus the C header with
// size-checking entry points over the compiled C interface.
#include "ein/Execution/AOT.h"
#include "ein/Conversion/CPU/Pipelines.h"
#include "ein/Dialect/EinDialect.h"
#include "ein/MLIRGen/MLIRGen.h"
#include "ein/Shape/SizeReads.h"
#include "ein/Syntax/Unicode.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/ExecutionEngine/OptUtils.h"
#include "mlir/IR/BuiltinOps.h"
#include "mlir/IR/Diagnostics.h"
#include "mlir/IR/Verifier.h"
#include "mlir/Target/LLVMIR/Export.h"
#include "llvm/IR/LegacyPassManager.h"
#include "llvm/IR/Module.h"
#include "llvm/MC/TargetRegistry.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/TargetSelect.h"
#include "llvm/Support/raw_ostream.h"
#include "llvm/Target/TargetMachine.h"
#include "llvm/Target/TargetOptions.h"
#include "llvm/TargetParser/Host.h"

#include <fmt/format.h>

#include <fstream>
#include <map>
#include <set>

namespace ein {

namespace {

const char *cType(DType t) {
  switch (t) {
  case DType::F64:
    return "double";
  case DType::F32:
    return "float";
  case DType::F16:
  case DType::BF16:
    return "uint16_t"; // raw 16-bit patterns
  case DType::F8E4M3:
  case DType::F8E5M2:
    return "uint8_t";
  case DType::I64:
    return "int64_t";
  case DType::I32:
    return "int32_t";
  }
  return "void";
}

/// The ASCII C spelling of an ein name: ASCII characters stay, every other
/// code point becomes `_uXXXX` (or `_UXXXXXXXX` above U+FFFF), hex digits in
/// lowercase, so `α` becomes `_u03b1`. The same name is used for the object's
/// symbols, so the header and the object agree whatever the C compiler does
/// with non-ASCII identifiers.
std::string cName(const std::string &name) {
  std::string out;
  for (size_t i = 0; i < name.size();) {
    auto d = unicode::decodeUtf8(name, i);
    if (d.valid() && d.codePoint < 0x80)
      out += static_cast<char>(d.codePoint);
    else if (d.codePoint <= 0xFFFF)
      out += fmt::format("_u{:04x}", static_cast<uint32_t>(d.codePoint));
    else
      out += fmt::format("_U{:08x}", static_cast<uint32_t>(d.codePoint));
    i += d.size;
  }
  return out;
}

/// An error when two functions, or two parameters of one function, get the
/// same C name; empty when all are distinct.
std::string cNameClash(const CheckedModule &module) {
  std::map<std::string, std::string> functions;
  for (auto &fn : module.functions) {
    auto [it, fresh] = functions.emplace(cName(fn.name), fn.name);
    if (!fresh)
      return fmt::format(
          "functions '{}' and '{}' both have the C name 'ein_{}'; rename one\n",
          it->second, fn.name, it->first);
    std::map<std::string, std::string> params;
    for (unsigned id : fn.params) {
      auto [p, freshParam] =
          params.emplace(cName(fn.values[id].name), fn.values[id].name);
      if (!freshParam)
        return fmt::format(
            "parameters '{}' and '{}' of '{}' both have the C name '{}'; "
            "rename one\n",
            p->second, fn.values[id].name, fn.name, p->first);
    }
  }
  return "";
}

std::string upper(std::string s) {
  for (char &c : s)
    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return s;
}

} // namespace

namespace {

/// C text that computes sizes with overflow checks: names are the locals
/// `ein_s<k>`, quotients floor divisions; `ovf` is set on overflow or a
/// division by 0 (the caller then returns EIN_ERR_SIZE).
class CSizeWriter {
public:
  std::map<std::string, std::string> names; // ein name -> C local

  std::string expr(const SizeExpr &e) const {
    if (auto c = e.constantValue())
      return literal(*c);
    std::string sum;
    for (auto &term : e.termList()) {
      std::string product;
      for (auto &f : term.factors) {
        std::string factor =
            f.num ? "ein_div_(" + expr(*f.num) + ", " + expr(*f.den) + ", &ovf)"
                  : names.at(f.symbol);
        for (unsigned p = 0; p < f.power; ++p)
          product = product.empty()
                        ? factor
                        : "ein_mul_(" + product + ", " + factor + ", &ovf)";
      }
      std::string value =
          product.empty() ? literal(term.coefficient)
          : term.coefficient == 1
              ? product
              : "ein_mul_(" + literal(term.coefficient) + ", " + product +
                    ", &ovf)";
      sum = sum.empty() ? value : "ein_add_(" + sum + ", " + value + ", &ovf)";
    }
    return sum.empty() ? "0" : sum;
  }

private:
  static std::string literal(Int v) {
    // Coefficients of sizes fit in 64 bits (larger ones overflowed at check
    // time); INT64_MIN has no literal, and no size needs it.
    if (v > Int(INT64_MAX) || v < -Int(INT64_MAX))
      return "(ovf = 1, 0)";
    return "INT64_C(" + toString(v) + ")";
  }
};

} // namespace

std::string cHeader(const CheckedModule &module, const std::string &guard) {
  std::string h;
  auto out = std::back_inserter(h);
  fmt::format_to(
      out,
      "/* Generated by einc build from {}: C entry points of the compiled ein\n"
      " * functions. Each tensor is passed as (data, rank, sizes, strides):\n"
      " * data points at element (0, ..., 0), rank is the number of sizes and\n"
      " * strides (the compiled one, or EIN_ERR_RANK), strides are in\n"
      " * elements, any non-negative values (0 repeats an element: a\n"
      " * broadcast view; a transposed or sliced view needs no copy). Sizes\n"
      " * bound when the object was built are checked; every other size is\n"
      " * read from the arguments, so one object serves every size its types\n"
      " * allow. An output must not overlap itself, an input or another\n"
      " * output. Every function returns 0 on success or an EIN_ERR_* code\n"
      " * and then writes nothing. Needs GCC or Clang (__builtin_*_overflow).\n"
      " * Link with LLVM 19's OpenMP runtime (-lomp: the loops run on all\n"
      " * cores) and libm. */\n"
      "#ifndef {}\n#define {}\n\n"
      "#include <stdint.h>\n\n"
      "#define EIN_OK 0\n"
      "#define EIN_ERR_SIZE 1    /* sizes that do not fit the types, or a "
      "failed entry check */\n"
      "#define EIN_ERR_STRIDE 2  /* a negative stride, or an output whose "
      "elements overlap */\n"
      "#define EIN_ERR_NULL 3    /* a null data pointer of a non-empty "
      "tensor */\n"
      "#define EIN_ERR_ALIAS 4   /* an output overlapping an input or "
      "another output */\n"
      "#define EIN_ERR_RANK 5    /* a rank other than the compiled one (a "
      "variadic's rank is chosen at build time) */\n\n"
      "#ifdef __cplusplus\nextern \"C\" {{\n#endif\n\n",
      module.path, guard, guard);
  // The memref descriptors of MLIR's C interface, one per rank used.
  std::set<size_t> ranks;
  for (auto &fn : module.functions) {
    for (unsigned id : fn.params)
      ranks.insert(fn.ctx.expand(fn.values[id].type.shape).size());
    for (unsigned id : fn.returns)
      ranks.insert(fn.ctx.expand(fn.values[id].type.shape).size());
  }
  for (size_t r : ranks)
    fmt::format_to(
        out,
        "typedef struct {{ void *allocated; void *aligned; int64_t "
        "offset;{} }} ein_memref{}_t;\n",
        r ? fmt::format(" int64_t sizes[{0}]; int64_t strides[{0}];", r) : "",
        r);
  h += R"(
static inline int64_t ein_add_(int64_t a, int64_t b, int *ovf) {
  int64_t r; if (__builtin_add_overflow(a, b, &r)) *ovf = 1; return r;
}
static inline int64_t ein_mul_(int64_t a, int64_t b, int *ovf) {
  int64_t r; if (__builtin_mul_overflow(a, b, &r)) *ovf = 1; return r;
}
static inline int64_t ein_div_(int64_t a, int64_t b, int *ovf) {
  if (b <= 0 || a < 0) { *ovf = 1; return 0; }
  return a / b;
}
/* The number of elements (0 for an empty tensor). */
static inline int64_t ein_count_(int64_t rank, const int64_t *sizes) {
  int64_t n = 1, i; int ovf = 0;
  for (i = 0; i < rank; ++i) n = ein_mul_(n, sizes[i], &ovf);
  return ovf ? -1 : n;
}
/* Checks the strides of a non-empty tensor: none negative; for an output,
 * no two elements at one address (sorted by stride, each stride exceeds
 * the span of the dims below it). Sets the address range [lo, hi). */
static inline int ein_strides_(int64_t rank, const int64_t *sizes,
    const int64_t *strides, int64_t bytes, const void *data, int output,
    uintptr_t *lo, uintptr_t *hi) {
  int64_t order[64], i, j, span = 0; int ovf = 0;
  if (rank > 64) return EIN_ERR_STRIDE;
  for (i = 0; i < rank; ++i) {
    if (strides[i] < 0) return EIN_ERR_STRIDE;
    span = ein_add_(span, ein_mul_(sizes[i] - 1, strides[i], &ovf), &ovf);
  }
  span = ein_mul_(ein_add_(span, 1, &ovf), bytes, &ovf);
  if (ovf) return EIN_ERR_STRIDE;
  *lo = (uintptr_t)data; *hi = *lo + (uintptr_t)span;
  if (!output) return EIN_OK;
  for (i = 0; i < rank; ++i) order[i] = i;
  for (i = 1; i < rank; ++i)
    for (j = i; j > 0 && strides[order[j]] < strides[order[j - 1]]; --j) {
      int64_t t = order[j]; order[j] = order[j - 1]; order[j - 1] = t;
    }
  span = 0;
  for (i = 0; i < rank; ++i) {
    int64_t d = order[i];
    if (sizes[d] == 1) continue;
    if (strides[d] <= span) return EIN_ERR_STRIDE;
    span = ein_add_(span, ein_mul_(sizes[d] - 1, strides[d], &ovf), &ovf);
    if (ovf) return EIN_ERR_STRIDE;
  }
  return EIN_OK;
}
static inline void ein_fill_(void *desc, int64_t rank, const void *data,
    const int64_t *sizes, const int64_t *strides) {
  int64_t *d = (int64_t *)desc, i;
  ((const void **)d)[0] = data; ((const void **)d)[1] = data; d[2] = 0;
  for (i = 0; i < rank; ++i) { d[3 + i] = sizes[i]; d[3 + rank + i] = strides[i]; }
}

)";
  for (auto &fn : module.functions) {
    size_t n = fn.params.size() + fn.returns.size();
    auto idOf = [&](size_t i) {
      return i < fn.params.size() ? fn.params[i]
                                  : fn.returns[i - fn.params.size()];
    };
    auto nameOf = [&](size_t i) {
      return i < fn.params.size() ? cName(fn.values[idOf(i)].name)
                                  : fmt::format("out{}", i - fn.params.size());
    };
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n; ++i)
      shapes.push_back(fn.ctx.expand(fn.values[idOf(i)].type.shape));
    std::vector<Shape> paramShapes(shapes.begin(),
                                   shapes.begin() + fn.params.size());
    SizeReadPlan plan = planSizeReads(paramShapes, fn.ctx.env);
    CSizeWriter sizes;
    for (size_t k = 0; k < plan.reads.size(); ++k)
      sizes.names[plan.reads[k].symbol] = fmt::format("ein_s{}", k);

    std::string fnName = cName(fn.name);
    fmt::format_to(out, "/* {}: {}:{} */\n", fn.name, module.path, fn.loc.line);
    fmt::format_to(out, "void _mlir_ciface_ein_impl_{}(", fnName);
    for (size_t i = 0; i < n; ++i)
      fmt::format_to(out, "{}ein_memref{}_t *", i ? ", " : "",
                     shapes[i].size());
    h += ");\n";
    fmt::format_to(out, "static inline int ein_{}(", fnName);
    for (size_t i = 0; i < n; ++i) {
      bool isOut = i >= fn.params.size();
      fmt::format_to(out,
                     "{0}{1}{2} *{3}_data, int64_t {3}_rank, const int64_t "
                     "*{3}_sizes, const int64_t *{3}_strides",
                     i ? ",\n    " : "", isOut ? "" : "const ",
                     cType(fn.values[idOf(i)].type.dtype), nameOf(i));
    }
    size_t slots = std::max<size_t>(n, 1);
    fmt::format_to(out,
                   ") {{\n  int ovf = 0, rc;\n  uintptr_t lo[{0}], hi[{0}];\n",
                   slots);
    for (size_t k = 0; k < plan.reads.size(); ++k)
      fmt::format_to(out, "  int64_t ein_s{}; /* {} */\n", k,
                     plan.reads[k].symbol);
    for (size_t i = 0; i < n; ++i)
      fmt::format_to(out, "  ein_memref{}_t {}_m;\n", shapes[i].size(),
                     nameOf(i));
    // Ranks first: the sizes and strides arrays are only as long as the
    // rank the caller passed, so nothing is read before it matches.
    for (size_t i = 0; i < n; ++i)
      fmt::format_to(out, "  if ({}_rank != {}) return EIN_ERR_RANK;\n",
                     nameOf(i), shapes[i].size());
    // Sizes: negative ones are refused before any arithmetic.
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < shapes[i].size(); ++d)
        fmt::format_to(out, "  if ({}_sizes[{}] < 0) return EIN_ERR_SIZE;\n",
                       nameOf(i), d);
    // Free names from the parameters' sizes, in the order the compiled code
    // reads them; then every size of every tensor against its type.
    for (size_t k = 0; k < plan.reads.size(); ++k) {
      const SizeRead &r = plan.reads[k];
      fmt::format_to(out,
                     "  ein_s{} = ein_div_(ein_add_({}_sizes[{}], -({}), "
                     "&ovf), INT64_C({}), &ovf);\n",
                     k, nameOf(r.param), r.dim, sizes.expr(r.offset),
                     toString(r.scale));
    }
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < shapes[i].size(); ++d)
        fmt::format_to(out, "  if ({}_sizes[{}] != {}) return EIN_ERR_SIZE;\n",
                       nameOf(i), d,
                       sizes.expr(shapes[i][d].size.substitute(fn.ctx.env)));
    for (auto &c : fn.ctx.constraints) {
      SizeExpr l = c.lhs.substitute(fn.ctx.env),
               r = c.rhs.substitute(fn.ctx.env);
      std::string cond;
      switch (c.kind) {
      case Constraint::Kind::Divisible:
        cond = fmt::format("({}) % ({}) != 0", sizes.expr(l), sizes.expr(r));
        fmt::format_to(out, "  if ({} == 0) return EIN_ERR_SIZE;\n",
                       sizes.expr(r));
        break;
      case Constraint::Kind::Equal:
        cond = fmt::format("{} != {}", sizes.expr(l), sizes.expr(r));
        break;
      case Constraint::Kind::NonEmpty:
        cond = fmt::format("{} < 1", sizes.expr(l));
        break;
      }
      fmt::format_to(out, "  if ({}) return EIN_ERR_SIZE; /* {} */\n", cond,
                     c.str());
    }
    h += "  if (ovf) return EIN_ERR_SIZE;\n";
    // Pointers and strides of non-empty tensors; outputs overlap nothing.
    for (size_t i = 0; i < n; ++i) {
      bool isOut = i >= fn.params.size();
      fmt::format_to(
          out,
          "  lo[{0}] = hi[{0}] = 0;\n"
          "  if (ein_count_({1}, {2}_sizes) != 0) {{\n"
          "    if (!{2}_data) return EIN_ERR_NULL;\n"
          "    if ((rc = ein_strides_({1}, {2}_sizes, {2}_strides, {3}, "
          "{2}_data, {4}, &lo[{0}], &hi[{0}])) != EIN_OK) return rc;\n  }}\n",
          i, shapes[i].size(), nameOf(i),
          dtypeBytes(fn.values[idOf(i)].type.dtype), isOut ? 1 : 0);
    }
    if (!fn.returns.empty())
      fmt::format_to(out,
                     "  {{\n    int i, j;\n    for (i = {}; i < {}; ++i)\n"
                     "      for (j = 0; j < {}; ++j)\n"
                     "        if (j != i && lo[i] != hi[i] && lo[j] != hi[j] "
                     "&& lo[i] < hi[j] && lo[j] < hi[i])\n"
                     "          return EIN_ERR_ALIAS;\n  }}\n",
                     fn.params.size(), n, n);
    for (size_t i = 0; i < n; ++i)
      fmt::format_to(out,
                     "  ein_fill_(&{0}_m, {1}, {0}_data, {0}_sizes, "
                     "{0}_strides);\n",
                     nameOf(i), shapes[i].size());
    fmt::format_to(out, "  _mlir_ciface_ein_impl_{}(", fnName);
    for (size_t i = 0; i < n; ++i)
      fmt::format_to(out, "{}&{}_m", i ? ", " : "", nameOf(i));
    h += ");\n  return EIN_OK;\n}\n\n";
  }
  fmt::format_to(out, "#ifdef __cplusplus\n}}\n#endif\n\n#endif /* {} */\n",
                 guard);
  return h;
}

ErrorOr<void> compileToObject(const CheckedModule &module,
                              const std::string &objectPath,
                              const std::string &headerPath,
                              const CPUOptions &options) {
  auto failure = [](std::string reason) {
    return Error::program("cannot build:").withContext(std::move(reason));
  };
  static bool initialized = [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    return true;
  }();
  (void)initialized;
  if (std::string clash = cNameClash(module); !clash.empty())
    return failure(std::move(clash));
  mlir::MLIRContext context;
  auto verified = buildVerifiedEinModule(context, module);
  if (!verified)
    return failure(std::move(verified.error().context));
  mlir::OwningOpRef<mlir::ModuleOp> ir = std::move(*verified);
  // Compiled symbols get a prefix so that a function named like a C library
  // function (pow, tanh, malloc) neither clashes with nor calls itself.
  for (auto f : ir->getOps<mlir::func::FuncOp>())
    f.setSymName("ein_impl_" + cName(f.getName().str()));
  if (auto lowered = lowerToStage(*ir, CPUStage::LLVM, options); !lowered)
    return failure(std::move(lowered.error().context));

  llvm::LLVMContext llvmContext;
  auto llvmModule = mlir::translateModuleToLLVMIR(*ir, llvmContext);
  if (!llvmModule)
    return failure("translation to LLVM IR failed");
  std::string triple = llvm::sys::getProcessTriple();
  std::string lookupError;
  const llvm::Target *target = llvm::TargetRegistry::lookupTarget(triple, lookupError);
  if (!target)
    return failure(lookupError);
  llvm::StringMap<bool> features = llvm::sys::getHostCPUFeatures();
  std::string featureString;
  for (auto &f : features)
    featureString += (featureString.empty() ? "" : ",") +
                     std::string(f.second ? "+" : "-") + f.getKey().str();
  std::unique_ptr<llvm::TargetMachine> machine(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), featureString, llvm::TargetOptions(),
      llvm::Reloc::PIC_, std::nullopt, llvm::CodeGenOptLevel::Aggressive));
  llvmModule->setTargetTriple(triple);
  llvmModule->setDataLayout(machine->createDataLayout());
  auto optimize = mlir::makeOptimizingTransformer(3, 0, machine.get());
  if (auto err = optimize(llvmModule.get()))
    return failure(fmt::format("LLVM optimization failed: {}",
                               llvm::toString(std::move(err))));
  // Write to temporaries and rename, so a failure leaves no partial file.
  std::error_code ec;
  std::string objectTmp = objectPath + ".tmp";
  {
    llvm::raw_fd_ostream out(objectTmp, ec, llvm::sys::fs::OF_None);
    if (ec)
      return failure(
          fmt::format("cannot write {}: {}", objectPath, ec.message()));
    llvm::legacy::PassManager pm;
    if (machine->addPassesToEmitFile(pm, out, nullptr,
                                     llvm::CodeGenFileType::ObjectFile))
      return failure("this target cannot emit object files");
    pm.run(*llvmModule);
  }
  std::string guard = "EIN_GENERATED_" + upper(std::to_string(
                                             std::hash<std::string>()(headerPath)));
  std::string headerTmp = headerPath + ".tmp";
  {
    std::ofstream out(headerTmp);
    out << cHeader(module, guard);
    if (!out)
      return failure(fmt::format("cannot write {}", headerPath));
  }
  if (std::rename(objectTmp.c_str(), objectPath.c_str()) != 0 ||
      std::rename(headerTmp.c_str(), headerPath.c_str()) != 0)
    return failure("cannot rename the outputs into place");
  return {};
}

} // namespace ein
