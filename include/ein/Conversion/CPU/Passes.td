// Declarations of the CPU code-generation passes (lib/Conversion/CPU).
#ifndef EIN_CONVERSION_CPU_PASSES_TD
#define EIN_CONVERSION_CPU_PASSES_TD

include "mlir/Pass/PassBase.td"

def CopiesToLinalg : Pass<"ein-copies-to-linalg", "::mlir::ModuleOp"> {
  let summary = "Rewrite memref.copy as a linalg.generic that copies";
  let description = [{
    Bufferization copies with `memref.copy` (a result that is a parameter or
    a view, a merge of axes that a strided argument cannot do in place).
    Between strided memrefs, `finalize-memref-to-llvm` turns it into a call
    of `memrefCopy` from MLIR's C runner library, which object files would
    then need at link time and which copies element by element. As a
    `linalg.generic` the copy becomes a loop nest like any other op: its
    outermost loop runs on all cores, its innermost is vectorized. A copy of
    a buffer onto itself is removed.

    Before:
    ```mlir
    memref.copy %a, %b : memref<?x?xf32, strided<[?, ?], offset: ?>>
                      to memref<?x?xf32, strided<[?, ?], offset: ?>>
    ```
    After:
    ```mlir
    linalg.generic {indexing_maps = [(d0, d1) -> (d0, d1), (d0, d1) -> (d0, d1)],
                    iterator_types = ["parallel", "parallel"]}
        ins(%a : memref<?x?xf32, strided<[?, ?], offset: ?>>)
        outs(%b : memref<?x?xf32, strided<[?, ?], offset: ?>>) {
    ^bb0(%in: f32, %out: f32):
      linalg.yield %in : f32
    }
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def MergedOutputsInPlace
    : Pass<"ein-merged-outputs-in-place", "::mlir::ModuleOp"> {
  let summary = "A result whose dims merge axes is computed in a split view "
                "of its output parameter";
  let description = [{
    Runs on buffers, right after one-shot bufferization. An op whose result
    merges axes (`rearrange(x, "b h s d -> b s (h d)")`, `repeat(x,
    "h w -> (c h) w")`, an einsum into `b s (h d)`) computes over its
    elementary axes, and `ein-to-linalg` merges them with a
    `tensor.collapse_shape` of the result. Bufferization cannot write that
    result through the collapse into an output parameter of any strides, so
    it computes a temporary of the unmerged shape and copies
    `memref.collapse_shape` of it into the output: the data moves twice, and
    the whole result is allocated on every call.

    This pass replaces such a temporary by a view of the output split into
    the temporary's shape (always possible, whatever the output's strides)
    and removes the copy, when the temporary is used only by linalg ops and
    copies before it and nothing else touches the output meanwhile. The view
    is a `memref.expand_shape` when each group has at most one dynamic size;
    otherwise a `memref.reinterpret_cast` of the output's base with the
    split strides (MLIR 19's `expand-strided-metadata` cannot lower an
    expand_shape whose group has two dynamic sizes).

    Before:
    ```mlir
    %tmp = memref.alloc(%b, %s) : memref<?x?x16x64xf32>
    linalg.generic ... ins(%x : ...) outs(%tmp : memref<?x?x16x64xf32>)
    %m = memref.collapse_shape %tmp [[0], [1], [2, 3]]
        : memref<?x?x16x64xf32> into memref<?x?x1024xf32>
    memref.copy %m, %out : memref<?x?x1024xf32>
        to memref<?x?x1024xf32, strided<[?, ?, ?], offset: ?>>
    ```
    After:
    ```mlir
    %v = memref.expand_shape %out [[0], [1], [2, 3]]
        output_shape [%b, %s, 16, 64]
        : memref<?x?x1024xf32, strided<[?, ?, ?], offset: ?>>
        into memref<?x?x16x64xf32, strided<[?, ?, ?, ?], offset: ?>>
    linalg.generic ... ins(%x : ...) outs(%v : ...)
    ```
  }];
  let dependentDialects = [
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect"
  ];
}

def EarlyDealloc : Pass<"ein-early-dealloc", "::mlir::ModuleOp"> {
  let summary = "Free each temporary right after its last use, not at the "
                "end of its block";
  let description = [{
    Runs on buffers, right after MLIR's buffer-deallocation pipeline. MLIR
    19's ownership-based deallocation places each `memref.dealloc` at the
    end of the block that owns the buffer, so every temporary of a function
    lives until the function returns: a training step's gradient held all
    of its forward's and backward's temporaries at once (27.7 MiB for
    examples/gpt.ein at batch 8, against 8.9 MiB of live tensors).

    This pass moves an unconditional `memref.dealloc %m`, where `%m` is a
    `memref.alloc` of the same block, up to just after the last op of that
    block that uses `%m` or any alias of it: the results of views
    (`ViewLikeOpInterface`: subview, cast, reinterpret_cast,
    expand_shape, collapse_shape, extract_strided_metadata's base buffer,
    ...; and transpose), transitively. An op with regions counts as a use
    when anything inside it uses an alias, provided its regions have all run
    when it returns (scf and affine loops and ifs, linalg bodies).

    The dealloc stays where it is unless every use of every alias is
    understood: a linalg op on buffers, a load, store, copy, dim or vector
    transfer of the buffer, or a view. An alias that is returned, yielded,
    stored, passed to a call or to a branch, freed elsewhere, used in
    another block, or used by any other op keeps the dealloc in place, as
    does a conditional dealloc (`scf.if` around it, which this pass does not
    move). A dealloc is never placed before a use of its buffer.

    Before:
    ```mlir
    %a = memref.alloc() : memref<4x8xf32>
    linalg.fill ins(%c : f32) outs(%a : memref<4x8xf32>)
    %v = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
    linalg.copy ins(%v : memref<32xf32>) outs(%out : memref<32xf32>)
    %b = memref.alloc() : memref<32xf32>
    ...
    memref.dealloc %a : memref<4x8xf32>
    memref.dealloc %b : memref<32xf32>
    return
    ```
    After:
    ```mlir
    %a = memref.alloc() : memref<4x8xf32>
    linalg.fill ins(%c : f32) outs(%a : memref<4x8xf32>)
    %v = memref.collapse_shape %a [[0, 1]] : memref<4x8xf32> into memref<32xf32>
    linalg.copy ins(%v : memref<32xf32>) outs(%out : memref<32xf32>)
    memref.dealloc %a : memref<4x8xf32>
    %b = memref.alloc() : memref<32xf32>
    ...
    memref.dealloc %b : memref<32xf32>
    return
    ```
  }];
}

def HostCallingConvention
    : Pass<"ein-host-calling-convention", "::mlir::ModuleOp"> {
  let summary = "Results become output parameters written in place; C entry "
                "points with noalias arguments";
  let description = [{
    Runs on the output of `ein-to-linalg`, before bufferization. Every
    function's results become trailing parameters (the caller's output
    buffers, in return order) and each returned value is materialized in its
    parameter with `bufferization.materialize_in_destination`; the function
    still returns those tensors so that one-shot bufferization sees them as
    equivalent to the parameters, and `drop-equivalent-buffer-results` then
    removes the results. With `eliminate-empty-tensors` the op that computes a
    result writes straight into the caller's buffer (no copy); a result that
    is a parameter, a view, or a value returned twice is copied.

    Inputs are marked `bufferization.writable = false` (the compiled code
    never writes them) and every parameter `llvm.noalias`: inputs are
    read-only and outputs overlap neither inputs nor each other (the rule of
    the C header; `einc run` allocates fresh outputs). The function gets
    `llvm.emit_c_interface`: a `_mlir_ciface_NAME` entry point over memref
    descriptors, which after bufferization with
    `function-boundary-type-conversion=fully-dynamic-layout-map` carry any
    sizes, strides and offset.

    Before:
    ```mlir
    func.func @f(%x: tensor<?xf32>) -> tensor<?xf32> {
      %0 = linalg.generic ... ins(%x) outs(%empty) -> tensor<?xf32>
      return %0 : tensor<?xf32>
    }
    ```
    After:
    ```mlir
    func.func @f(%x: tensor<?xf32> {bufferization.writable = false,
                                    llvm.noalias},
                 %out0: tensor<?xf32> {llvm.noalias}) -> tensor<?xf32>
        attributes {llvm.emit_c_interface} {
      %0 = linalg.generic ... ins(%x) outs(%empty) -> tensor<?xf32>
      %1 = bufferization.materialize_in_destination %0 in %out0
          : (tensor<?xf32>, tensor<?xf32>) -> tensor<?xf32>
      return %1 : tensor<?xf32>
    }
    ```
  }];
  let dependentDialects = ["::mlir::bufferization::BufferizationDialect"];
}

def ConstantGlobals : Pass<"ein-constant-globals", "::mlir::ModuleOp"> {
  let summary = "Create the memref.global of every tensor constant, in "
                "program order, before one-shot bufferization";
  let description = [{
    Runs right before `one-shot-bufferize`, which turns each ranked-tensor
    `arith.constant` into a `memref.get_global` of a `memref.global` that it
    creates (or finds: one with the same value and alignment) as it
    bufferizes the constant. With `bufferize-function-boundaries` MLIR 19
    bufferizes the functions in an order read from a `DenseMap` keyed by
    function pointers (`getFuncOpsOrderedByCalls`), so with two or more
    functions the globals were created, named (`__constant_xf32`, `_0`,
    `_1`, ...) and placed in an order that changed from run to run: `einc
    emit --stage=loops` and `einc build` objects were not reproducible.
    This pass creates the same globals with the same function
    (`bufferization::getGlobalFor`, the same alignment) walking the module
    in program order; bufferization then finds each one and creates none.
    The tensor constants stay; only globals are added.

    Before:
    ```mlir
    func.func @f() -> tensor<f32> {
      %cst = arith.constant dense<2.0> : tensor<f32>
      ...
    ```

    After:
    ```mlir
    memref.global "private" constant @__constant_xf32 : memref<f32> =
        dense<2.0> {alignment = 64 : i64}
    func.func @f() -> tensor<f32> {
      %cst = arith.constant dense<2.0> : tensor<f32>
      ...
    ```
  }];
  let options = [
    Option<"alignment", "alignment", "uint64_t", "64",
           "Alignment of the globals: one-shot bufferization's "
           "buffer-alignment (a global of another alignment is not reused)">,
  ];
  let dependentDialects = ["::mlir::memref::MemRefDialect"];
}

def ExpandFp8 : Pass<"ein-expand-fp8", "::mlir::ModuleOp"> {
  let summary = "Run fp8 arithmetic in f32 and fp8 conversions as integer code";
  let description = [{
    LLVM 19 has no fp8 types: its type converter stores `f8E4M3FN` and
    `f8E5M2` as `i8`, but cannot extend, truncate or compute on them. This
    pass runs on loops, just before the conversion to the LLVM dialect, and
    leaves no arith or math op that computes on fp8 (scalars or vectors):

    - an arith or math op with fp8 operands or results (`addf`, `maximumf`,
      `cmpf`, `math.exp`, `fptosi`, ...) runs in f32: fp8 operands are
      extended, fp8 results rounded once. For `+ - * /` that is the
      correctly rounded fp8 result, since f32 has more than twice fp8's
      precision plus two bits;
    - `arith.extf` from fp8 goes through f16, which holds every fp8 value:
      e5m2 is an f16's top byte; e4m3fn's bits shifted into f16's fields
      read as the value times 2^-8 (subnormals too), scaled back in f32, its
      NaN pattern selected apart. Exact, without f32 subnormals, then
      `extf`/`truncf` to f64, f16 or bf16 (exact);
    - `arith.truncf` to fp8 from f32 or f64 rounds to nearest even in one
      step (f16 and bf16 are extended to f32 first, exactly): values past
      the largest finite one become inf (e5m2) or NaN (e4m3fn, which has no
      inf; 464 still rounds down to 448), NaN keeps its sign. This is the
      rounding of the `.npy` runtime (lib/Runtime/FloatConvert.cpp) and of
      ml_dtypes;
    - an fp8 constant becomes an `i8` constant bitcast to fp8.

    Loads, stores, selects and bitcasts of fp8 stay: they only move bits.
    Any other arith or math op on fp8 left behind is an error.

    Before:
    ```mlir
    %y = arith.mulf %x, %c : f8E4M3FN
    ```
    After (abridged):
    ```mlir
    %b = arith.bitcast %x : f8E4M3FN to i8
    %w = arith.extui %b : i8 to i16
    ...                                   // bits into f16's fields
    %h = arith.bitcast %m : i16 to f16
    %e = arith.extf %h : f16 to f32
    %v = arith.mulf %e, %c256 : f32
    ...                                   // NaN, sign
    %xf = arith.bitcast %bits : i32 to f32
    %yf = arith.mulf %xf, %cf : f32
    %i = arith.bitcast %yf : f32 to i32
    ...                                   // round to nearest even
    %t = arith.trunci %code : i32 to i8
    %y = arith.bitcast %t : i8 to f8E4M3FN
    ```
  }];
  let dependentDialects = ["::mlir::arith::ArithDialect"];
}

def TileReductions : Pass<"ein-tile-reductions", "::mlir::ModuleOp"> {
  let summary = "Tile reductions over an outer axis so the output stays in cache";
  let description = [{
    Runs on buffers, after `ein-tile-contractions`. A one-input
    `linalg.generic` whose outermost loop is parallel and one of whose
    reduced loops is more major than it in the input (`a b c -> b c`, sum
    over the first axis: loops `b a c`) would otherwise read, for every
    output row, one row from each of the `a` planes: as many concurrent
    streams as `a`, which the hardware prefetchers follow badly. This pass
    tiles loop 0 (rows of about `tile-bytes` of output per tile, at least
    `work-items` tiles) with an `scf.parallel`, and inside a tile runs the
    reduced loops first: every plane then streams a contiguous block of
    rows into an output tile that stays in cache. A fill of the output
    right before moves into the tile. The loops inside a tile are
    sequential `scf.for`s. Reductions over inner axes are left alone.

    Sizes may be dynamic: the rows per tile are then computed at run time
    from `memref.dim` by the same rule (at least one). Operands may have
    any strided layout; which axis is more major is read from the strides
    when the type gives them all, else from the axis order (row-major, what
    strides known only at run time nearly always are). The tiles are
    subviews and every access goes through the real strides, so a wrong
    guess costs speed, never the result.

    Before:
    ```mlir
    linalg.fill ins(%zero : f32) outs(%out : memref<1024x4096xf32>)
    linalg.generic {indexing_maps = [(b, a, c) -> (a, b, c), (b, a, c) -> (b, c)],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%x : memref<16x1024x4096xf32>) outs(%out : memref<1024x4096xf32>)
    ```
    After:
    ```mlir
    scf.parallel (%b0) = (%c0) to (%c1024) step (%c64) {
      %o = memref.subview %out[%b0, 0] [64, 4096] [1, 1]
      scf.for ... { memref.store %zero, %o[...] }       // the fill, per tile
      scf.for %a = %c0 to %c16 step %c1 {
        scf.for %b = %c0 to %c64 step %c1 {
          scf.for %c = %c0 to %c4096 step %c1 { ... addf ... }
        }
      }
    }
    ```
  }];
  let options = [
    Option<"tileBytes", "tile-bytes", "int64_t", "1048576",
           "Bytes of output per tile (about the L2 cache)">,
    Option<"workItems", "work-items", "int64_t", "0",
           "Tiles to aim for at least; 0: twice the host's hardware threads">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::linalg::LinalgDialect"
  ];
}

def TileTransposes : Pass<"ein-tile-transposes", "::mlir::ModuleOp"> {
  let summary = "Copies that transpose run in cache tiles of register transposes";
  let description = [{
    Runs on buffers, after `ein-copies-to-linalg`. A `linalg.generic` that
    only copies (all loops parallel, the body yields its input) and whose
    output's last (contiguous) axis is indexed by a different loop `lo` than
    the input's last axis (loop `li`) is a transpose: as plain loops it reads
    or writes one element per cache line, and when the stride of that side
    is a power of two every line falls into the same cache set. This pass
    emits an `scf.parallel` over every other loop and over `block` x `block`
    blocks of (`li`, `lo`); in a block, `n` x `n` register tiles (`n` =
    vector bits / element bits, at most 8: 8 x 8 f32 and i32, 4 x 4 f64,
    8 x 8 of 16- and 8-bit types) are read as `n` vectors along `li`,
    transposed by log2(`n`) rounds of interleaving `vector.shuffle`s, and
    written as `n` vectors along `lo`; the edges of a block that no whole
    tile covers are copied element by element. Other loops (batch axes) and
    broadcast input axes index the accesses unchanged.

    Sizes may be dynamic. When a type does not say that an operand's last
    stride is 1, it is checked at run time, and the copy as it was (strided
    loops) runs otherwise. Element types: integers of 8 to 64 bits, f16,
    bf16, f32, f64 (i1 and fp8 are left to the loops).

    Before:
    ```mlir
    linalg.generic {indexing_maps = [(i, j) -> (j, i), (i, j) -> (i, j)],
                    iterator_types = ["parallel", "parallel"]}
        ins(%x : memref<64x128xf32>) outs(%y : memref<128x64xf32>)
    ```
    After (`block` = 32):
    ```mlir
    scf.parallel (%i0, %j0) = (%c0, %c0) to (%c128, %c64) step (%c32, %c32) {
      scf.for %i = %i0 to %iw step %c8 {      // whole 8 x 8 tiles
        scf.for %j = %j0 to %jw step %c8 {
          %r0 = vector.load %x[%j, %i] : memref<64x128xf32>, vector<8xf32>
          ...                                  // 8 rows, %j + 0 ... %j + 7
          %s0 = vector.shuffle %r0, %r4 [0, 8, 1, 9, 2, 10, 3, 11]
          ...                                  // 3 rounds of 8 shuffles
          vector.store %t0, %y[%i, %j] : memref<128x64xf32>, vector<8xf32>
          ...
        }
      }
      scf.for ... { memref.load ... memref.store ... }  // edges
    }
    ```
  }];
  let options = [
    Option<"block", "block", "int64_t", "64",
           "Elements per side of a cache block (rounded to register tiles)">,
    Option<"vectorBits", "vector-bits", "int64_t", "0",
           "Vector register bits; 0: the host's widest">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::vector::VectorDialect", "::mlir::arith::ArithDialect"
  ];
}

def FuseParallelLoops : Pass<"ein-fuse-parallel-loops", "::mlir::func::FuncOp"> {
  let summary = "Fuse adjacent parallel nests over the same iterations";
  let description = [{
    Runs on scf loops at the end of the `loops` stage. MLIR's parallel loop
    fusion (`naivelyFuseParallelOps`) makes adjacent `scf.parallel` nests
    with equal bounds one when each iteration of the second reads only
    what the same iteration of the first wrote; the alias test also knows
    that distinct parameters marked `llvm.noalias`
    (`ein-host-calling-convention`) never overlap, which MLIR's alias
    analysis does not read. A reduction's fill, the reduction and its
    epilogue (a mean's division, a max's integer keys mapped back) then
    run as one nest: one OpenMP region instead of three, each row's value
    still in cache.

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { store %zero, %acc[%i] }
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { scf.for %j ... acc[%i] += x[%i, %j] }
    scf.parallel (%i) = (%c0) to (%n) step (%c1) { store acc[%i] / 64, %out[%i] }
    ```
    After:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      store %zero, %acc[%i]
      scf.for %j ... acc[%i] += x[%i, %j]
      store acc[%i] / 64, %out[%i]
    }
    ```
  }];
}

def SerialSmallLoops : Pass<"ein-serial-small-loops", "::mlir::ModuleOp"> {
  let summary = "Run parallel loop nests with little work on the calling thread";
  let description = [{
    Runs on scf loops, right before `convert-scf-to-openmp`, which makes
    every outermost `scf.parallel` an OpenMP region: a fork and join of the
    thread team that costs microseconds, far more than a small nest (an
    elementwise op on a few elements) takes. This pass estimates the work of
    each outermost `scf.parallel` without reductions: the iterations of its
    innermost bodies (the product of the trip counts down each nest, summed
    over the loops of a body). Below `min-work` the nest becomes `scf.for`
    loops on the calling thread. When the trip counts are known only at run
    time (sizes read from `memref.dim`, hoisted in front of the nest), the
    estimate is computed there and an `scf.if` runs the parallel nest when
    it reaches `min-work`, else a serial copy. A tile's loop that moves
    with the nest's induction variables counts the tighter of its tile's
    bound (`min(i + 64, n) - i`: 64) and the tensor's; a body of
    `vector.load`s counts the elements they read. A nest whose trip counts
    have no bound here stays parallel.

    Before:
    ```mlir
    scf.parallel (%i) = (%c0) to (%n) step (%c1) {
      scf.for %j = %c0 to %c4 step %c1 { ... }
    }
    ```
    After:
    ```mlir
    %trips = arith.maxsi (arith.ceildivsi (%n - %c0), %c1), %c0
    %work = arith.muli %trips, %c4
    %big = arith.cmpi sge, %work, %c16384
    scf.if %big {
      scf.parallel (%i) = (%c0) to (%n) step (%c1) { scf.for %j ... }
    } else {
      scf.for %i = %c0 to %n step %c1 { scf.for %j ... }
    }
    ```
  }];
  let options = [
    Option<"minWork", "min-work", "int64_t", "16384",
           "Innermost iterations from which a nest runs in parallel">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::arith::ArithDialect"
  ];
}

def TileContractions : Pass<"ein-tile-contractions", "::mlir::ModuleOp"> {
  let summary = "Packed, cache-blocked, register-tiled loops for contractions";
  let description = [{
    Runs on buffers, after bufferization. A `linalg.generic` that computes
    `C += A * B` summed over its reduction loops (the shape every einsum
    lowers to; the operands may be 16-bit floats extended to an f32 or f64
    accumulator) becomes the loop nest of a BLIS-style GEMM:

    - runs of loops that are consecutive axes, in the same order, in every
      operand that uses them, and contiguous in memory there, first become
      one loop over `memref.collapse_shape` views (`b s h d, d e -> b s h e`
      is one GEMM with m = b * s * h); where only the run time knows the
      strides, they are compared there and the operands as they are serve
      otherwise;
    - the output's contiguous axis `n` (from one operand, called B), the
      largest axis `m` of the other operand A alone, and the largest axis
      `k` they share are blocked; every other loop is an outer loop;
    - one `scf.parallel` over the outer parallel loops and chunks of `m`
      (at least `work-items` of them, so every core gets work);
    - `kc x nc` blocks of B and `mc x kc` blocks of A are packed into
      aligned panels in the accumulator type (any strides, any layout, edges
      padded with zeros);
    - a micro-kernel keeps an `mr x nr` tile of C in vector registers
      (`mr * nr / lanes` accumulators: 6 x 64 f32 = 24 AVX-512 registers,
      6 x 16 = 12 AVX2 registers by default), one FMA per row and vector
      per k,
      and reads/writes C once per k block with vector accesses (masked
      only in tiles narrower than `nr`, at the edge).

    Unset sizes come from the host (HostCPU.h, `gemmTiles`): the register
    tile from the vector width, kc, mc and nc from the L1d, L2 and L3 sizes
    read from /sys/devices/system/cpu/cpu0/cache by the BLIS analytic model
    (on a Zen 3 with AVX2: 6 x 16, kc 320, mc 204, nc 4096); the `l1-bytes`,
    `l1-ways`, `l2-bytes` and `l3-bytes` options stand in for the host's.

    A contraction inside a fused tile (an `scf.forall` of `ein-fuse-rows`,
    which `ein-parallel-tiles` runs on one core) gets the same nest with an
    `scf.for` over its work items instead of the `scf.parallel`.

    A zero `linalg.fill` of C right before the contraction is folded: the
    accumulators start at zero on the first k block.

    With `bf16-dot` (the CPU has avx512bf16), a contraction of bf16
    operands into an f32 accumulator with 512-bit vectors packs both
    operands as bf16, k pairs adjacent (`Bp[panel][p/2][2*j + p%2]`, A
    likewise; an odd k block padded with a zero), and the micro-kernel
    issues one `llvm.x86.avx512bf16.dpbf16ps.512` per row and vector per k
    PAIR: the pair of A's row broadcast to all 16 lanes, times B's 16
    column pairs, summed into the f32 accumulators. Without it, bf16 is
    widened to f32 as it is packed and runs on f32 FMAs.

    With `int8-dot` other than `none`, a contraction of i8 operands into
    an i32 accumulator (an i8 einsum with `acc=i32`: `sext * sext` summed
    by `addi`) over exactly the loops m, n, k is the int8 GEMM
    (Int8Gemm.cpp): A and B packed once as k pairs widened to i16, a pair
    one i32 word (`Ap[m][p]`, `Bp[n/lanes][p][n%lanes]`, an odd k padded
    with 0), a 6 x 4-vector register tile (4 x 2 with AVX2) stepping one
    k pair at a time with `llvm.x86.avx512.vpdpwssd.512` (`vnni`), or
    `pmaddw.d.512` + add (`avx512bw`), or `avx2.pmadd.wd` + add on 256
    bits (`avx2`); blocks of rows in parallel. Exact: a pair of i8
    products is at most 32768. Other integer contractions stay loops.

    An epilogue is applied in the kernel (`epilogues`, on unless `einc
    --no-fusion`): when C is a temporary that only one elementwise
    `linalg.generic` reads, through its own loops, writing a buffer D of
    C's shape in loop order (a bias, an activation, a scale), the kernel
    accumulates into D and, on the last block of the sum, applies that
    op's body to the accumulator vectors before storing them; C is never
    allocated. The op's other operands are read as vectors (masked loads
    where the columns are their contiguous axis, broadcasts where they do
    not depend on the column, one load per lane otherwise). Before:
    `C = A B; D = relu(C + bias)`; after: one kernel whose stores on the
    last k block are `max(acc + bias[n..n+8], 0)`. Contractions it does
    not match (integers, no shared reduction, an output whose contiguous
    axis both operands carry) are left to the generic lowering.

    Sizes may be dynamic (`memref<?x?xf32>`): loop bounds come from
    `memref.dim`, the blocking (chunks of `m`, the extent of the packed
    buffers) from index arithmetic at run time by the same rules, and a loop
    that is empty at run time skips the kernel (a folded zero fill still
    runs). Operands may have any strided layout (`strided<[?, ?], offset:
    ?>`: transposed, sliced, stride 0); every access goes through the
    operand's strides. Where speed needs a unit stride and the type does
    not give it, the stride is checked at run time and the fast version
    reads through a `memref.reinterpret_cast` whose type states it: vector
    accesses to C along `n` (else C's tile goes through a contiguous
    scratch tile, copied element by element) and the vectorized pack copy
    along the lanes (else the copy runs along `k`). A is read in place only
    when its type gives `k` unit stride; otherwise it is packed.

    Before:
    ```mlir
    linalg.fill ins(%zero : f32) outs(%c : memref<2048x2048xf32>)
    linalg.generic {indexing_maps = [(m, k, n) -> (m, k), (m, k, n) -> (k, n),
                                     (m, k, n) -> (m, n)],
                    iterator_types = ["parallel", "reduction", "parallel"]}
        ins(%a, %b : memref<2048x2048xf32>, memref<2048x2048xf32>)
        outs(%c : memref<2048x2048xf32>) { mulf, addf }
    ```
    After:
    ```mlir
    scf.parallel (%item) = (%c0) to (%c4) step (%c1) {
      %ap = memref.alloc() {alignment = 64} : memref<21x256x6xf32>
      %bp = memref.alloc() {alignment = 64} : memref<16x256x64xf32>
      scf.for %jc ... scf.for %pc ... {      // pack B's kc x nc block
        scf.for %ic ... {                    // pack A's mc x kc block
          scf.for %jr ... scf.for %ir ... {
            %acc:16 = scf.for %p = %c0 to %kc iter_args(...) {
              %b0 = vector.load %bp[%jp, %p, %c0] : vector<16xf32>
              %a0 = memref.load %ap[%ip, %p, %c0]
              %s0 = vector.broadcast %a0 : f32 to vector<16xf32>
              %f0 = vector.fma %s0, %b0, %acc#0 : vector<16xf32>
              ...
            }
            vector.maskedstore %c[...], %mask, %acc#0 ...
      } } }
      memref.dealloc %ap
      memref.dealloc %bp
    }
    ```
    With `%c: memref<?x?xf32, strided<[?, ?], offset: ?>>`, C's tile is
    read (and written) per tile as:
    ```mlir
    %base, %offset, %sizes:2, %strides:2 = memref.extract_strided_metadata %c
    %unit = arith.cmpi eq, %strides#1, %c1 : index
    %acc:24 = scf.if %unit -> (vector<16xf32>, ...) {
      %cv = memref.reinterpret_cast %base to offset: [%offset],
          sizes: [%sizes#0, %sizes#1], strides: [%strides#0, 1]
          : memref<f32> to memref<?x?xf32, strided<[?, 1], offset: ?>>
      %r0 = vector.load %cv[%i, %j] : ..., vector<16xf32>  // full tile
      ...
    } else {
      scf.for ... { memref.store (memref.load %c[...]), %tile[...] }
      %r0 = vector.load %tile[%c0, %c0] : memref<6x64xf32>, vector<16xf32>
      ...
    }
    ```
  }];
  let options = [
    Option<"mr", "mr", "int64_t", "0",
           "Rows of the register tile; 0: the host model's (6)">,
    Option<"nrVectors", "nr-vectors", "int64_t", "0",
           "Vectors per row of the register tile; 0: 4 with 512-bit vectors "
           "(32 registers), 2 otherwise (16 registers)">,
    Option<"mc", "mc", "int64_t", "0",
           "Rows of a packed A block (f32 elements); 0: from the L2 size">,
    Option<"nc", "nc", "int64_t", "0",
           "Columns of a packed B block (f32 elements); 0: from the L3 size">,
    Option<"kc", "kc", "int64_t", "0",
           "Depth of the packed blocks (f32 elements); 0: from the L1 size">,
    Option<"l1Bytes", "l1-bytes", "int64_t", "0",
           "L1 data cache bytes for the blocking model; 0: the host's">,
    Option<"l1Ways", "l1-ways", "int64_t", "0",
           "L1 data cache ways for the blocking model; 0: the host's">,
    Option<"l2Bytes", "l2-bytes", "int64_t", "0",
           "L2 cache bytes for the blocking model; 0: the host's">,
    Option<"l3Bytes", "l3-bytes", "int64_t", "0",
           "L3 bytes per thread for the blocking model; 0: the host's">,
    Option<"vectorBits", "vector-bits", "int64_t", "0",
           "Vector register width in bits; 0: the host's (512 with AVX-512)">,
    Option<"workItems", "work-items", "int64_t", "0",
           "Parallel blocks to aim for; 0: twice the host's hardware threads">,
    Option<"epilogues", "epilogues", "bool", "true",
           "Apply an elementwise reader of a temporary result in the kernel">,
    Option<"bf16Dot", "bf16-dot", "bool", "false",
           "bf16 x bf16 -> f32 with 512-bit vectors through vdpbf16ps "
           "(avx512bf16): operands packed as bf16 k pairs">,
    Option<"int8Dot", "int8-dot", "std::string", "\"none\"",
           "i8 x i8 -> i32 on integer pair dot products: none, avx2 "
           "(vpmaddwd, 256-bit), avx512bw (vpmaddwd, 512-bit) or vnni "
           "(vpdpwssd)">,
  ];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::vector::VectorDialect",
    "::mlir::memref::MemRefDialect", "::mlir::arith::ArithDialect",
    "::mlir::LLVM::LLVMDialect"
  ];
}

def FuseElementwise : Pass<"ein-fuse-elementwise", "::mlir::ModuleOp"> {
  let summary = "Fuse elementwise ops into the ops that read them, on tensors";
  let description = [{
    Runs on `linalg` tensors, before bufferization. An elementwise
    `linalg.generic` (every loop parallel) moves into each `linalg.generic`
    that reads it, so the chain runs as one loop nest and its intermediate
    tensor is never allocated: `exp(x - m)` computes in the loop of the sum
    that reads it, `e / z` recomputes `exp(x - m)` in its own loop instead
    of reading a buffer of them.

    A producer fuses only when every reader takes it (so its buffer
    disappears rather than being written and recomputed), each reader reads
    it through a permutation (one producer element per reader iteration: a
    broadcast reader would recompute it once per broadcast copy), and no
    reader is a contraction (`ein-tile-contractions` must still recognise
    `C += A * B`). The fused op's location is a `FusedLoc` named
    `ein.fused` of every op it now computes (`einc report` reads it for its
    `fused` column). `einc run|build|emit|report --no-fusion` leaves this
    pass out.

    Before:
    ```mlir
    %d = linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%x, %m : tensor<?x?xf32>, tensor<?xf32>) outs(%t0 : tensor<?x?xf32>) {
      %v = arith.subf %in, %in_1 : f32
      linalg.yield %v : f32 }
    %e = linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%d : tensor<?x?xf32>) outs(%t1 : tensor<?x?xf32>) {
      %v = math.exp %in : f32
      linalg.yield %v : f32 }
    ```
    After:
    ```mlir
    %e = linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%x, %m : tensor<?x?xf32>, tensor<?xf32>) outs(%t1 : tensor<?x?xf32>) {
      %v = arith.subf %in, %in_1 : f32
      %w = math.exp %v : f32
      linalg.yield %w : f32 } loc(fused<"ein.fused">[...])
    ```
  }];
  let dependentDialects = ["::mlir::linalg::LinalgDialect"];
}

def FuseRows : Pass<"ein-fuse-rows", "::mlir::ModuleOp"> {
  let summary = "Run an op that reads row reductions tile by tile of rows, "
                "the reductions inside";
  let description = [{
    Runs on `linalg` tensors, after `ein-fuse-elementwise`. An elementwise
    `linalg.generic` that reads the result of a reduction (not a
    contraction) through its leading loops, the rows (the division of a
    softmax by its row sums, a layer norm's normalisation), and writes its
    result in loop order, is tiled over the rows: `rows-per-tile` rows on
    the innermost row loop, one on the others, the other loops whole, in an
    `scf.forall`. Every fill, reduction and elementwise op it reads,
    directly or not, is computed inside the tile for the tile's rows only
    (`scf::tileConsumerAndFuseProducersUsingSCF`), so a softmax reads each
    row from memory once: the max, the sum of exponentials and the division
    then find it in cache. A contraction that reads such a chain's result
    through the chain's rows and writes its result leading with them
    (attention's `p v`) is tiled the same way, `contraction-rows-per-tile`
    rows per tile, and also takes in a contraction the chain reads if
    nothing else reads it (attention's scores `q k`): the whole attention
    head is one loop nest, its scores never whole in memory. Unit dims of
    non-contraction ops are dropped first, so reductions written with a kept
    `1` axis (`"b s d -> b s 1"`) fuse like the plain form. The loop carries
    `ein.row_tiles`; `ein-parallel-tiles` runs it on all cores after
    bufferization. `einc run|build|emit --no-fusion` leaves this pass out.

    Before:
    ```mlir
    %m = linalg.generic {iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<?x?xf32>) outs(%fill : tensor<?xf32>) { maximumf }
    %y = linalg.generic {iterator_types = ["parallel", "parallel"]}
        ins(%x, %m : tensor<?x?xf32>, tensor<?xf32>) outs(%e : tensor<?x?xf32>) { subf }
    ```
    After:
    ```mlir
    %y = scf.forall (%i) = (0) to (%rows) step (8) shared_outs(%o = %e) {
      %xs = tensor.extract_slice %x[%i, 0] [%n, %cols] [1, 1]
      %f = linalg.fill ... -> tensor<?xf32>
      %ms = linalg.generic {reduction} ins(%xs) outs(%f) { maximumf }
      %ys = linalg.generic {parallel} ins(%xs, %ms) outs(...) { subf }
      scf.forall.in_parallel { tensor.parallel_insert_slice %ys into %o[%i, 0] ... }
    } {ein.row_tiles}
    ```
  }];
  let options = [
    Option<"rowsPerTile", "rows-per-tile", "int64_t", "8",
           "Rows of the innermost row loop per tile">,
    Option<"contractionRowsPerTile", "contraction-rows-per-tile", "int64_t",
           "64", "Rows of the innermost row loop per tile of a contraction">,
  ];
  let dependentDialects = [
    "::mlir::linalg::LinalgDialect", "::mlir::scf::SCFDialect",
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect"
  ];
}

def SkipMaskedKeys : Pass<"ein-skip-masked-keys", "::mlir::ModuleOp"> {
  let summary = "Bound the keys of a causal attention head's row tiles by "
                "each tile's last row";
  let description = [{
    Runs on `linalg` tensors, right after `ein-fuse-rows`, on its row tiles
    whose one result is a contraction over one reduction loop, the keys
    (attention's `p v`). When the tile's `p` is a softmax of `where(mask,
    scores, fill)` with `mask` the causal `t <= s` of two aranges (also
    `t < s`, `s >= t`, `s > t`; the keys' from 0, the rows' from the tile's
    first row) and `fill` a constant at most -1e4, every key past the
    tile's last row `r + step` is masked in every row of the tile, and
    `exp(fill - max)` is exactly 0 there: the tile's tensors then run over
    the keys below `min(r + step, t)` only (the scores, the mask, the
    softmax and both contractions), a key dim of size `?`. `t < s` keeps
    every key in the tile of row 0 (row 0 allows none: its softmax is
    uniform over all of them). A tile whose values past the bound could
    reach its result otherwise (another mask, another fill, work on the
    masked scores that is not the softmax) is left as it is. Half the work
    of a causal head at long `t`.

    Before (a tile of 64 rows of 2048 keys):
    ```mlir
    scf.forall (%i) = (0) to (2048) step (64) {
      %s = linalg.generic ... -> tensor<64x2048xf32>   // q k
      %w = linalg.generic { select(mask, s, -1e9) } -> tensor<64x2048xf32>
      ...                                               // softmax
      %o = linalg.generic ins(%p, %v : tensor<64x2048xf32>, tensor<2048x64xf32>)
    } {ein.row_tiles}
    ```
    After:
    ```mlir
    scf.forall (%i) = (0) to (2048) step (64) {
      %n = affine.min affine_map<(d0)[s0] -> (d0 + 64, s0)>(%i)[%c2048]
      %s = linalg.generic ... -> tensor<64x?xf32>
      ...
      %o = linalg.generic ins(%p, %v : tensor<64x?xf32>, tensor<?x64xf32>)
    } {ein.row_tiles}
    ```
  }];
  let dependentDialects = [
    "::mlir::tensor::TensorDialect", "::mlir::arith::ArithDialect",
    "::mlir::affine::AffineDialect"
  ];
}

def ParallelTiles : Pass<"ein-parallel-tiles", "::mlir::ModuleOp"> {
  let summary = "Run the loops over fused tiles on all cores";
  let description = [{
    Runs on buffers, after `ein-copies-to-linalg` (so the copies
    bufferization put in a tile are linalg ops too) and before the ops
    become affine loops. Each outermost `scf.forall`
    (the loops over row tiles of `ein-fuse-rows`) becomes an `scf.parallel`
    (OpenMP later), and every `linalg` op inside it becomes a sequential
    `scf.for` nest now, before the other ops become affine loops: the
    parallel loop over tiles is then the only one, and a tile runs on one
    core with its rows in that core's cache. Buffers of a tile whose lives
    do not overlap (same type and sizes; one's last use before the other's
    first) become one, so a tile touches less memory: attention's
    probabilities take the scores' buffer.

    Before:
    ```mlir
    scf.forall (%i) = (0) to (%rows) step (8) {
      %xs = memref.subview %x[%i, 0] [%n, %cols] [1, 1]
      linalg.generic {reduction} ins(%xs) outs(%ms) { maximumf }
    }
    ```
    After:
    ```mlir
    scf.parallel (%i) = (%c0) to (%rows) step (%c8) {
      %xs = memref.subview %x[%i, 0] [%n, %cols] [1, 1]
      scf.for %r = %c0 to %n step %c1 {
        scf.for %c = %c0 to %cols step %c1 { ... arith.maximumf ... }
      }
    }
    ```
  }];
  let dependentDialects = [
    "::mlir::scf::SCFDialect", "::mlir::memref::MemRefDialect",
    "::mlir::arith::ArithDialect", "::mlir::affine::AffineDialect"
  ];
}

def ApproximateMath : Pass<"ein-approximate-math", "::mlir::ModuleOp"> {
  let summary = "Vectorizable polynomial exp, log, log1p, tanh, erf for f32, "
                "f16 and bf16";
  let description = [{
    Runs on loops, before the conversion to the LLVM dialect. Without it a
    `math.exp` becomes `llvm.exp`, which LLVM 19 can only call `expf` for,
    one element at a time, and a loop with a call does not vectorize. This
    pass rewrites `math.exp`, `expm1`, `log`, `log2`, `log1p`, `tanh` and
    `erf` on f32 (scalars or vectors) into MLIR's polynomial approximations
    (`populateMathPolynomialApproximationPatterns`): arithmetic, `math.fma`,
    bitcasts and selects, no branch and no call, which the loop vectorizer
    widens. So `sigmoid`, `silu`, `softplus`, `gelu` (through erf) and
    `gelu_tanh` vectorize as a whole.

    - f16 and bf16 compute in f32: the operand is extended, the result
      rounded once.
    - `log` and `log2` of an f32 subnormal: MLIR clamps the argument to the
      smallest normal number, so the argument is first scaled by 2^23 and
      23·ln 2 (or 23) subtracted after.
    - `exp` on f32 where the result is subnormal (MLIR flushes it to 0) or
      in the last binade before overflow (MLIR loses 5 ulps there) is
      exp(x/2)^2 (x is halved before the one polynomial, where it is at
      an edge); `erf` takes the sign of x (erf(-0) = -0).
    - f64 keeps libm: MLIR has no f64 approximation, and f64 programs ask
      for accuracy first. f64 `log1p`, which `convert-math-to-llvm` would
      lower to log(1 + x) (no digit left for small x), becomes Goldberg's
      log(u) * x / (u - 1) with u = 1 + x.
    - `sin`, `cos` and `pow` keep libm: MLIR's f32 sine reduces its
      argument with a one-word pi/2, which loses every digit past a few
      hundred.

    The accuracy of every function and dtype is measured against a float64
    reference by test/run/math-accuracy.test; docs/lowering.md tabulates it.

    Before:
    ```mlir
    %y = math.exp %x : f32
    %z = math.log %h : f16
    ```
    After (abridged):
    ```mlir
    %k = math.roundeven ...           // x = k ln2 + r
    %p = math.fma %r, %c5, %c4 : f32  // the polynomial in r
    ...
    %y = arith.bitcast %e : i32 to f32 // 2^k, scaled in
    %w = arith.extf %h : f16 to f32
    %s = arith.cmpf olt, %w, %min_normal : f32
    ...                               // Cephes log, frexp by bit masks
    %z = arith.truncf %l : f32 to f16
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::math::MathDialect",
    "::mlir::vector::VectorDialect"
  ];
}

def MinMaxReductions : Pass<"ein-min-max-reductions", "::mlir::ModuleOp"> {
  let summary = "Float max/min reductions run as integer max/min on ordered "
                "keys, which vectorize";
  let description = [{
    Runs on buffers, before `ein-tile-reductions`. A reduction whose body
    yields `arith.maximumf` (or `minimumf`) of the accumulator and a value
    computed from the inputs alone (the input itself, its `extf`, or
    elementwise work fused in, as attention's `max(s * 0.125)`) becomes, after lowering, a chain of `llvm.maximum` calls that LLVM 19's
    loop vectorizer does not widen on x86: `max` over a contiguous axis ran
    one element at a time while `sum` vectorized.

    The reduction runs instead on integer keys of the float's width: `k =
    bits ^ ((bits >>s (w-1)) & MAX)` keeps a positive float's bits and
    flips a negative one's magnitude bits, so that keys compare as signed
    integers like the floats compare, -0 below +0. A NaN of either sign
    becomes MAX (for a max; MIN for a min), which wins every comparison.
    `arith.maxsi` and `minsi` reductions vectorize (`vpmaxsd` on AVX2). The
    result reads back through the same map, which is its own inverse: the
    exact `maximumf`/`minimumf` semantics (and torch.amax's): a NaN anywhere
    gives NaN, max(-0, +0) = +0, infinities order as usual.

    The keys live in a buffer of the output's shape: filled from a fill of
    the output right before (its constant's key; the fill is then dead), or
    from the output's keys, and copied back through the map after. f16,
    bf16, f32 and f64 are handled (i16, i32, i64 keys).

    Before:
    ```mlir
    linalg.fill ins(%ninf : f32) outs(%out : memref<?xf32>)
    linalg.generic {indexing_maps = [(a, b) -> (a, b), (a, b) -> (a)],
                    iterator_types = ["parallel", "reduction"]}
        ins(%x : memref<?x?xf32>) outs(%out : memref<?xf32>) {
    ^bb0(%in: f32, %acc: f32):
      %m = arith.maximumf %acc, %in : f32
      linalg.yield %m : f32
    }
    ```
    After:
    ```mlir
    %keys = memref.alloc(%n) : memref<?xi32>
    linalg.fill ins(%c-2139095041_i32 : i32)  // the key of -inf outs(%keys : memref<?xi32>)
    linalg.generic {... same maps and iterators ...}
        ins(%x : memref<?x?xf32>) outs(%keys : memref<?xi32>) {
    ^bb0(%in: f32, %acc: i32):
      %bits = arith.bitcast %in : f32 to i32
      %nan = arith.cmpf uno, %in, %in : f32
      ...                                   // the key, MAX for NaN
      %m = arith.maxsi %acc, %key : i32
      linalg.yield %m : i32
    }
    linalg.generic ... ins(%keys) outs(%out) { ... arith.bitcast ... }
    memref.dealloc %keys : memref<?xi32>
    ```
  }];
  let dependentDialects = [
    "::mlir::arith::ArithDialect", "::mlir::linalg::LinalgDialect",
    "::mlir::memref::MemRefDialect"
  ];
}

#endif // EIN_CONVERSION_CPU_PASSES_TD
