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
#include <sstream>

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
  std::ostringstream h;
  h << "/* Generated by einc build from " << module.path
    << ": C entry points of the compiled ein functions.\n"
    << " * Each tensor is passed as (data, sizes, strides): data points at\n"
    << " * element (0, ..., 0), strides are in elements, any non-negative\n"
    << " * values (0 repeats an element: a broadcast view; a transposed or\n"
    << " * sliced view needs no copy). Sizes bound when the object was built\n"
    << " * are checked; every other size is read from the arguments, so one\n"
    << " * object serves every size its types allow. An output must not\n"
    << " * overlap itself, an input or another output. Every function\n"
    << " * returns 0 on success or an EIN_ERR_* code and then writes\n"
    << " * nothing. Needs GCC or Clang (__builtin_*_overflow). Link with\n"
    << " * LLVM 19's OpenMP runtime (-lomp: the loops run on all cores) and\n"
    << " * libm. */\n"
    << "#ifndef " << guard << "\n#define " << guard << "\n\n"
    << "#include <stdint.h>\n\n"
    << "#define EIN_OK 0\n"
    << "#define EIN_ERR_SIZE 1    /* sizes that do not fit the types, or a "
       "failed entry check */\n"
    << "#define EIN_ERR_STRIDE 2  /* a negative stride, or an output whose "
       "elements overlap */\n"
    << "#define EIN_ERR_NULL 3    /* a null data pointer of a non-empty "
       "tensor */\n"
    << "#define EIN_ERR_ALIAS 4   /* an output overlapping an input or "
       "another output */\n\n"
    << "#ifdef __cplusplus\nextern \"C\" {\n#endif\n\n";
  // The memref descriptors of MLIR's C interface, one per rank used.
  std::set<size_t> ranks;
  for (auto &fn : module.functions) {
    for (unsigned id : fn.params)
      ranks.insert(fn.ctx.expand(fn.values[id].type.shape).size());
    for (unsigned id : fn.returns)
      ranks.insert(fn.ctx.expand(fn.values[id].type.shape).size());
  }
  for (size_t r : ranks) {
    h << "typedef struct { void *allocated; void *aligned; int64_t offset;";
    if (r)
      h << " int64_t sizes[" << r << "]; int64_t strides[" << r << "];";
    h << " } ein_memref" << r << "_t;\n";
  }
  h << R"(
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
      return i < fn.params.size()
                 ? cName(fn.values[idOf(i)].name)
                 : "out" + std::to_string(i - fn.params.size());
    };
    std::vector<Shape> shapes;
    for (size_t i = 0; i < n; ++i)
      shapes.push_back(fn.ctx.expand(fn.values[idOf(i)].type.shape));
    std::vector<Shape> paramShapes(shapes.begin(),
                                   shapes.begin() + fn.params.size());
    SizeReadPlan plan = planSizeReads(paramShapes, fn.ctx.env);
    CSizeWriter sizes;
    for (size_t k = 0; k < plan.reads.size(); ++k)
      sizes.names[plan.reads[k].symbol] = "ein_s" + std::to_string(k);

    h << "/* " << fn.name << ": " << module.path << ":" << fn.loc.line
      << " */\n";
    h << "void _mlir_ciface_ein_impl_" << cName(fn.name) << "(";
    for (size_t i = 0; i < n; ++i)
      h << (i ? ", " : "") << "ein_memref" << shapes[i].size() << "_t *";
    h << ");\n";
    h << "static inline int ein_" << cName(fn.name) << "(";
    for (size_t i = 0; i < n; ++i) {
      bool isOut = i >= fn.params.size();
      h << (i ? ",\n    " : "") << (isOut ? "" : "const ")
        << cType(fn.values[idOf(i)].type.dtype) << " *" << nameOf(i)
        << "_data, const int64_t *" << nameOf(i) << "_sizes, const int64_t *"
        << nameOf(i) << "_strides";
    }
    h << ") {\n  int ovf = 0, rc;\n  uintptr_t lo[" << std::max<size_t>(n, 1)
      << "], hi[" << std::max<size_t>(n, 1) << "];\n";
    for (size_t k = 0; k < plan.reads.size(); ++k)
      h << "  int64_t ein_s" << k << "; /* " << plan.reads[k].symbol
        << " */\n";
    for (size_t i = 0; i < n; ++i)
      h << "  ein_memref" << shapes[i].size() << "_t " << nameOf(i)
        << "_m;\n";
    // Sizes: negative ones are refused before any arithmetic.
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < shapes[i].size(); ++d)
        h << "  if (" << nameOf(i) << "_sizes[" << d
          << "] < 0) return EIN_ERR_SIZE;\n";
    // Free names from the parameters' sizes, in the order the compiled code
    // reads them; then every size of every tensor against its type.
    for (size_t k = 0; k < plan.reads.size(); ++k) {
      const SizeRead &r = plan.reads[k];
      std::string size =
          nameOf(r.param) + "_sizes[" + std::to_string(r.dim) + "]";
      std::string offset = sizes.expr(r.offset);
      h << "  ein_s" << k << " = ein_div_(ein_add_(" << size << ", -("
        << offset << "), &ovf), INT64_C(" << toString(r.scale)
        << "), &ovf);\n";
    }
    for (size_t i = 0; i < n; ++i)
      for (size_t d = 0; d < shapes[i].size(); ++d)
        h << "  if (" << nameOf(i) << "_sizes[" << d
          << "] != " << sizes.expr(shapes[i][d].size.substitute(fn.ctx.env))
          << ") return EIN_ERR_SIZE;\n";
    for (auto &c : fn.ctx.constraints) {
      SizeExpr l = c.lhs.substitute(fn.ctx.env),
               r = c.rhs.substitute(fn.ctx.env);
      std::string cond;
      switch (c.kind) {
      case Constraint::Kind::Divisible:
        cond = "(" + sizes.expr(l) + ") % (" + sizes.expr(r) + ") != 0";
        h << "  if (" << sizes.expr(r) << " == 0) return EIN_ERR_SIZE;\n";
        break;
      case Constraint::Kind::Equal:
        cond = sizes.expr(l) + " != " + sizes.expr(r);
        break;
      case Constraint::Kind::NonEmpty:
        cond = sizes.expr(l) + " < 1";
        break;
      }
      h << "  if (" << cond << ") return EIN_ERR_SIZE; /* " << c.str()
        << " */\n";
    }
    h << "  if (ovf) return EIN_ERR_SIZE;\n";
    // Pointers and strides of non-empty tensors; outputs overlap nothing.
    for (size_t i = 0; i < n; ++i) {
      bool isOut = i >= fn.params.size();
      std::string t = nameOf(i);
      size_t rank = shapes[i].size();
      h << "  lo[" << i << "] = hi[" << i << "] = 0;\n"
        << "  if (ein_count_(" << rank << ", " << t << "_sizes) != 0) {\n"
        << "    if (!" << t << "_data) return EIN_ERR_NULL;\n"
        << "    if ((rc = ein_strides_(" << rank << ", " << t << "_sizes, "
        << t << "_strides, " << dtypeBytes(fn.values[idOf(i)].type.dtype)
        << ", " << t << "_data, " << (isOut ? 1 : 0) << ", &lo[" << i
        << "], &hi[" << i << "])) != EIN_OK) return rc;\n  }\n";
    }
    if (!fn.returns.empty())
      h << "  {\n    int i, j;\n    for (i = " << fn.params.size() << "; i < "
        << n << "; ++i)\n      for (j = 0; j < " << n << "; ++j)\n"
        << "        if (j != i && lo[i] != hi[i] && lo[j] != hi[j] && "
           "lo[i] < hi[j] && lo[j] < hi[i])\n"
        << "          return EIN_ERR_ALIAS;\n  }\n";
    for (size_t i = 0; i < n; ++i)
      h << "  ein_fill_(&" << nameOf(i) << "_m, " << shapes[i].size() << ", "
        << nameOf(i) << "_data, " << nameOf(i) << "_sizes, " << nameOf(i)
        << "_strides);\n";
    h << "  _mlir_ciface_ein_impl_" << cName(fn.name) << "(";
    for (size_t i = 0; i < n; ++i)
      h << (i ? ", " : "") << "&" << nameOf(i) << "_m";
    h << ");\n  return EIN_OK;\n}\n\n";
  }
  h << "#ifdef __cplusplus\n}\n#endif\n\n#endif /* " << guard << " */\n";
  return h.str();
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
