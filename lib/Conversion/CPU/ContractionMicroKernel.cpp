// Part of ein-tile-contractions: the packing copies of A and B and the
// register-tiled micro-kernel (FMAs, or bf16 pair dot products) with the
// epilogue applied to its accumulators.
#include "ContractionKernel.h"
#include "PairDot.h"
#include "RegisterTranspose.h"

#include "mlir/Dialect/Linalg/IR/Linalg.h"
#include "mlir/Dialect/MemRef/IR/MemRef.h"
#include "mlir/Dialect/Vector/IR/VectorOps.h"

namespace ein::tiling {

/// Copies the block of `source` with `lanesCount` values of loop `lanesDim`
/// from `lanesLo` and `kCount` of loop k from `kLo` into `packed`
/// [panel][p][lane] (panels of `lanes`), converted to the accumulator type
/// (with pair dot products: bf16 at [panel][p / 2][2 * lane + p % 2], an odd
/// `kCount`'s last pair completed with a zero); lanes at or past `lanesEnd`
/// are zero. The copy's inner loop runs along
/// the lanes where they have unit stride (checked at run time when the type
/// does not say, and then read through a view that says so, so the copy
/// vectorizes), else, where k is the source's last axis with unit stride
/// (checked at run time when the type does not say), as whole vectors along
/// k transposed in registers (not with pair dot products; RegisterTranspose.h),
/// else along k where k has or may have unit stride, else along the
/// source's last axis.
void KernelEmitter::pack(Value packed, Value source, mlir::AffineMap map,
                         llvm::SmallVector<Value> iv, unsigned lanesDim,
                         int64_t lanes, Value lanesLo, Value lanesCount,
                         Value lanesEnd, Value kLo, Value kCount) {
  Value panels = ceilDiv(lanesCount, cst(lanes));
  Value last = sub(lanesEnd, cst(1));
  // k with unit stride and lanes without: whole vectors along k, one per
  // lane, transposed in registers. Groups of `vl` lanes are square tiles
  // whose transposes are the panel's rows; fewer (A's `mr`) are interleaved
  // and stored through a view of the panels as [panel][k * lanes + lane].
  unsigned lanesAxis = axisOf(map, lanesDim), kAxis = axisOf(map, c.k);
  auto strides = *stridesOf(llvm::cast<mlir::MemRefType>(source.getType()));
  bool kMayBeUnit = strides[kAxis] == 1 || strides[kAxis] == kDynamic;
  bool transposeK =
      !blk.pairDot && kMayBeUnit && kAxis + 1 == map.getNumResults();
  bool squares = lanes % blk.vl == 0;
  Value flat =
      transposeK && !squares
          ? b.create<memref::CollapseShapeOp>(
                loc, packed,
                llvm::ArrayRef<mlir::ReassociationIndices>{{0}, {1, 2}})
          : Value();
  // Only the last panel can run past `lanesEnd`: the others copy without
  // the bounds check, so LLVM vectorizes them.
  auto copy = [&](Value from, bool alongLanes, Value panel, bool checked,
                  bool inRegisters = false) {
    auto element = [&](Value p, Value lane) {
      Value at = add(lanesLo, add(mul(panel, cst(lanes)), lane));
      Value valid = checked ? lt(at, lanesEnd) : Value();
      iv[lanesDim] =
          checked ? b.create<arith::SelectOp>(loc, valid, at, last) : at;
      iv[c.k] = add(kLo, p);
      Value v = b.create<memref::LoadOp>(loc, from, indices(map, iv));
      if (v.getType() != packedType())
        v = b.create<arith::ExtFOp>(loc, packedType(), v);
      if (checked)
        v = b.create<arith::SelectOp>(loc, valid, v, zero(packedType()));
      b.create<memref::StoreOp>(loc, v, packed, packedAt(panel, p, lane));
    };
    if (inRegisters) {
      auto sourceType =
          llvm::cast<mlir::MemRefType>(from.getType()).getElementType();
      auto rowType = mlir::VectorType::get({blk.vl}, sourceType);
      auto packedRowType = mlir::VectorType::get({blk.vl}, packedType());
      Value whole =
          sub(kCount, b.createOrFold<arith::RemUIOp>(loc, kCount, cst(blk.vl)));
      loop(cst(0), whole, blk.vl, [&](Value q) {
        auto row = [&](int64_t r) {
          iv[c.k] = add(kLo, q);
          iv[lanesDim] = add(lanesLo, add(mul(panel, cst(lanes)), cst(r)));
          Value v =
              b.create<vector::LoadOp>(loc, rowType, from, indices(map, iv));
          if (sourceType != packedType())
            v = b.create<arith::ExtFOp>(loc, packedRowType, v);
          return v;
        };
        llvm::SmallVector<Value> rows;
        if (squares) {
          for (int64_t group = 0; group < lanes; group += blk.vl) {
            rows.clear();
            for (int64_t r = 0; r < blk.vl; ++r)
              rows.push_back(row(group + r));
            llvm::SmallVector<Value> out = transposeSquare(b, loc, rows);
            for (int64_t p = 0; p < blk.vl; ++p)
              b.create<vector::StoreOp>(
                  loc, out[p], packed,
                  packedAt(panel, add(q, cst(p)), cst(group)));
          }
          return;
        }
        for (int64_t r = 0; r < lanes; ++r)
          rows.push_back(row(r));
        llvm::SmallVector<Value> out = interleaveRows(b, loc, rows, blk.vl);
        for (int64_t j = 0; j < lanes; ++j)
          b.create<vector::StoreOp>(
              loc, out[j], flat,
              mlir::ValueRange{panel,
                               add(mul(q, cst(lanes)), cst(j * blk.vl))});
      });
      loop(whole, kCount, 1, [&](Value p) {
        loop(cst(0), cst(lanes), 1, [&](Value lane) { element(p, lane); });
      });
      return;
    }
    // With pair dot products, both values of a k pair in one iteration:
    // their stores interleave into whole vectors.
    auto fromStrides = *stridesOf(llvm::cast<mlir::MemRefType>(from.getType()));
    bool pairsContiguous =
        innermostLoop(map) == c.k && fromStrides.back() == 1 && !checked;
    auto step = [&](Value q, Value lane) {
      if (!blk.pairDot)
        return element(q, lane);
      if (pairsContiguous) { // the pair as one 32-bit copy
        iv[lanesDim] = add(lanesLo, add(mul(panel, cst(lanes)), lane));
        iv[c.k] = add(kLo, mul(q, cst(2)));
        auto pairType = mlir::VectorType::get({2}, packedType());
        Value pair =
            b.create<vector::LoadOp>(loc, pairType, from, indices(map, iv));
        b.create<vector::StoreOp>(loc, pair, packed,
                                  packedAt(panel, mul(q, cst(2)), lane));
        return;
      }
      element(mul(q, cst(2)), lane);
      element(add(mul(q, cst(2)), cst(1)), lane);
    };
    Value steps = blk.pairDot
                      ? b.createOrFold<arith::DivUIOp>(loc, kCount, cst(2))
                      : kCount;
    // A full panel of lanes that are the source's contiguous last axis:
    // per k pair, two vector loads interleaved into one store (LLVM does
    // not vectorize the pairs' interleaving stores itself).
    if (blk.pairDot && alongLanes && !checked &&
        axisOf(map, lanesDim) + 1 == map.getNumResults()) {
      auto rowType = mlir::VectorType::get({lanes}, packedType());
      loop(cst(0), steps, 1, [&](Value q) {
        iv[lanesDim] = add(lanesLo, mul(panel, cst(lanes)));
        llvm::SmallVector<Value> rows;
        for (int64_t half = 0; half < 2; ++half) {
          iv[c.k] = add(kLo, add(mul(q, cst(2)), cst(half)));
          rows.push_back(
              b.create<vector::LoadOp>(loc, rowType, from, indices(map, iv)));
        }
        Value pairs = b.create<vector::InterleaveOp>(loc, rows[0], rows[1]);
        b.create<vector::StoreOp>(loc, pairs, packed,
                                  mlir::ValueRange{panel, q, cst(0)});
      });
    } else if (alongLanes) {
      loop(cst(0), steps, 1, [&](Value q) {
        loop(cst(0), cst(lanes), 1, [&](Value lane) { step(q, lane); });
      });
    } else {
      loop(cst(0), cst(lanes), 1, [&](Value lane) {
        loop(cst(0), steps, 1, [&](Value q) { step(q, lane); });
      });
    }
    if (!blk.pairDot)
      return;
    // An odd k block: its last value, paired with a zero.
    Value odd = b.create<arith::CmpIOp>(
        loc, arith::CmpIPredicate::eq,
        b.createOrFold<arith::RemUIOp>(loc, kCount, cst(2)), cst(1));
    auto ifOdd = b.create<scf::IfOp>(loc, odd, /*withElseRegion=*/false);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOdd.thenBlock()->getTerminator());
    loop(cst(0), cst(lanes), 1, [&](Value lane) {
      element(sub(kCount, cst(1)), lane);
      b.create<memref::StoreOp>(loc, zero(packedType()), packed,
                                packedAt(panel, kCount, lane));
    });
  };
  // The order for strides other than 1 along the lanes: along k where it
  // has unit stride or may have at run time, else along the source's last
  // axis if that is the lanes. The partial last panel always takes the order
  // that the type's strides call for.
  bool lanesLast = innermostLoop(map) == lanesDim;
  bool otherOrder =
      strides[kAxis] == 1 || strides[kAxis] == kDynamic ? false : lanesLast;
  bool partialOrder = strides[lanesAxis] == 1 ? true
                      : strides[kAxis] == 1   ? false
                                              : lanesLast;
  loop(cst(0), panels, 1, [&](Value panel) {
    Value end = add(lanesLo, mul(add(panel, cst(1)), cst(lanes)));
    Value full =
        b.create<arith::CmpIOp>(loc, arith::CmpIPredicate::sle, end, lanesEnd);
    auto ifOp = b.create<scf::IfOp>(loc, full, /*withElseRegion=*/true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
    versions(
        source, lanesAxis, {},
        [&](Value view) {
          copy(view, /*alongLanes=*/true, panel, false);
          return llvm::SmallVector<Value>();
        },
        [&] {
          // k's unit stride, checked where only the run time knows it:
          // transposed in registers.
          if (transposeK)
            return versions(
                source, kAxis, {},
                [&](Value view) {
                  copy(view, /*alongLanes=*/false, panel, false,
                       /*inRegisters=*/true);
                  return llvm::SmallVector<Value>();
                },
                [&] {
                  copy(source, otherOrder, panel, false);
                  return llvm::SmallVector<Value>();
                });
          // bf16 pairs along a last axis k whose unit stride only the run
          // time knows: checked, so that they copy as 32-bit moves.
          if (!blk.pairDot || otherOrder || innermostLoop(map) != c.k) {
            copy(source, otherOrder, panel, false);
            return llvm::SmallVector<Value>();
          }
          return versions(
              source, kAxis, {},
              [&](Value view) {
                copy(view, /*alongLanes=*/false, panel, false);
                return llvm::SmallVector<Value>();
              },
              [&] {
                copy(source, /*alongLanes=*/false, panel, false);
                return llvm::SmallVector<Value>();
              });
        });
    b.setInsertionPoint(ifOp.elseBlock()->getTerminator());
    copy(source, partialOrder, panel, true);
  });
}

/// C[mLo + r, nLo + j] (+)= sum_p A[mLo + r][kLo + p] * Bp[panelB][p][j] for
/// r < rows, j < cols, with mr x nr accumulators in vector registers; A is
/// read in place or from its packed panel Ap[panelA][p][r].
void KernelEmitter::microKernel(llvm::SmallVector<Value> iv, Value ap, Value bp,
                                Value panelA, Value panelB, Value mLo,
                                Value rows, Value nLo, Value cols, Value kLo,
                                Value kCount, Value startAtZero,
                                Value lastBlock) {
  auto vecType = mlir::VectorType::get({blk.vl}, c.acc);
  auto maskType = mlir::VectorType::get({blk.vl}, b.getI1Type());
  int64_t vectors = blk.nr / blk.vl;
  llvm::SmallVector<Value> masks;
  for (int64_t v = 0; v < vectors; ++v) {
    Value left = sub(cols, cst(v * blk.vl));
    Value count = max(min(left, cst(blk.vl)), cst(0));
    masks.push_back(b.create<vector::CreateMaskOp>(loc, maskType, count));
  }
  auto cIndices = [&](Value row, Value col) {
    iv[c.m] = add(mLo, row);
    iv[c.n] = add(nLo, col);
    return indices(c.mapC, iv);
  };
  // The next register tile's C (the rows below, the same columns; clamped
  // to the last row and column) is fetched into the cache while this one
  // sums: C's tile is read and written once per k block, and its rows are
  // seldom still cached then (a 2048^3 matmul spent 9% of its time in those
  // loads).
  Value lastRow = sub(size[c.m], cst(1));
  Value lastCol = sub(size[c.n], cst(1));
  for (int64_t r = 0; r < blk.mr; ++r) {
    for (int64_t v = 0; v < vectors; ++v) {
      iv[c.m] = min(add(mLo, cst(blk.mr + r)), lastRow);
      iv[c.n] = min(add(nLo, cst(v * blk.vl)), lastCol);
      b.create<memref::PrefetchOp>(loc, c.c, indices(c.mapC, iv),
                                   /*isWrite=*/true, /*localityHint=*/3,
                                   /*isDataCache=*/true);
    }
  }
  // C's tile goes to and from vector registers with vector accesses on C
  // where its n has unit stride (known from the type, or checked at run
  // time, per tile), else through the scratch tile [mr][nr], copied from and
  // to C element by element through C's strides.
  auto rowIndices = [&](Value tile, int64_t r,
                        int64_t v) -> llvm::SmallVector<Value> {
    if (tile == scratch)
      return {cst(r), cst(v * blk.vl)};
    return cIndices(cst(r), cst(v * blk.vl));
  };
  auto copyTile = [&](bool toScratch) {
    loop(cst(0), rows, 1, [&](Value i) {
      loop(cst(0), cols, 1, [&](Value j) {
        llvm::SmallVector<Value> at = cIndices(i, j);
        llvm::SmallVector<Value> inTile{i, j};
        if (toScratch)
          b.create<memref::StoreOp>(loc, b.create<memref::LoadOp>(loc, c.c, at),
                                    scratch, inTile);
        else
          b.create<memref::StoreOp>(
              loc, b.create<memref::LoadOp>(loc, scratch, inTile), c.c, at);
      });
    });
  };
  Value readC = b.create<arith::XOrIOp>(
      loc, startAtZero, b.create<arith::ConstantOp>(loc, b.getBoolAttr(true)));
  llvm::SmallVector<Type> rowTypes(vectors, vecType);
  Value zeros = b.create<vector::SplatOp>(loc, vecType, zero());

  // C is read and written with plain vector accesses when the tile is
  // `nr` columns wide, masked ones only at the edge (masked stores are slow
  // on some CPUs, e.g. AMD's, and their masks are only known at run time).
  Value full = b.createOrFold<arith::CmpIOp>(loc, arith::CmpIPredicate::eq,
                                             cols, cst(blk.nr));
  // `body(masked)` in both branches; it yields `types` (none: the branches
  // end in the yield scf.if adds).
  auto ifFull = [&](llvm::ArrayRef<Type> types,
                    llvm::function_ref<void(bool)> body) {
    auto ifOp = b.create<scf::IfOp>(loc, types, full, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    body(false);
    b.setInsertionPointToStart(ifOp.elseBlock());
    body(true);
    return ifOp;
  };

  // Accumulators: zero, or the current C (rows past `rows` are not read).
  auto load = [&](Value tile) {
    if (tile == scratch) {
      auto ifOp = b.create<scf::IfOp>(loc, readC, /*withElseRegion=*/false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      copyTile(/*toScratch=*/true);
    }
    llvm::SmallVector<Value> init;
    for (int64_t r = 0; r < blk.mr; ++r) {
      Value read = b.create<arith::AndIOp>(loc, lt(cst(r), rows), readC);
      auto ifOp = b.create<scf::IfOp>(loc, rowTypes, read, true);
      {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPointToStart(ifOp.thenBlock());
        auto loads = ifFull(rowTypes, [&](bool masked) {
          llvm::SmallVector<Value> row;
          for (int64_t v = 0; v < vectors; ++v)
            row.push_back(
                masked ? Value(b.create<vector::MaskedLoadOp>(
                             loc, vecType, tile, rowIndices(tile, r, v),
                             masks[v], zeros))
                       : Value(b.create<vector::LoadOp>(
                             loc, vecType, tile, rowIndices(tile, r, v))));
          b.create<scf::YieldOp>(loc, row);
        });
        b.create<scf::YieldOp>(loc, loads.getResults());
        b.setInsertionPointToStart(ifOp.elseBlock());
        b.create<scf::YieldOp>(loc, llvm::SmallVector<Value>(vectors, zeros));
      }
      init.append(ifOp.getResults().begin(), ifOp.getResults().end());
    }
    return init;
  };
  unsigned nAxis = axisOf(c.mapC, c.n);
  llvm::SmallVector<Type> accTypes(blk.mr * vectors, vecType);
  llvm::SmallVector<Value> init =
      versions(c.c, nAxis, accTypes, load, [&] { return load(scratch); });

  // With pair dot products, one step per k pair (PairDot.h): A's pair of
  // each row broadcast, times B's pairs of each vector's columns.
  Value steps = blk.pairDot ? ceilDiv(kCount, cst(2)) : kCount;
  auto sum = b.create<scf::ForOp>(
      loc, cst(0), steps, cst(1), init,
      [&](OpBuilder &nb, Location nl, Value p, mlir::ValueRange accs) {
        OpBuilder::InsertionGuard guard(b);
        b.setInsertionPoint(nb.getInsertionBlock(), nb.getInsertionPoint());
        llvm::SmallVector<Value> bs, next;
        if (blk.pairDot) {
          auto pairsType = mlir::VectorType::get({2 * blk.vl}, b.getBF16Type());
          for (int64_t v = 0; v < vectors; ++v)
            bs.push_back(b.create<vector::LoadOp>(
                loc, pairsType, bp,
                mlir::ValueRange{panelB, p, cst(2 * v * blk.vl)}));
          for (int64_t r = 0; r < blk.mr; ++r) {
            Value pair = broadcastPair(b, loc, ap, {panelA, p, cst(2 * r)});
            for (int64_t v = 0; v < vectors; ++v)
              next.push_back(
                  pairDot(b, loc, accs[r * vectors + v], pair, bs[v]));
          }
          b.create<scf::YieldOp>(loc, next);
          return;
        }
        for (int64_t v = 0; v < vectors; ++v)
          bs.push_back(b.create<vector::LoadOp>(
              loc, vecType, bp, mlir::ValueRange{panelB, p, cst(v * blk.vl)}));
        for (int64_t r = 0; r < blk.mr; ++r) {
          Value x;
          if (direct) {
            // Rows past the edge read the last row; their results are not
            // stored.
            iv[c.m] = min(add(mLo, cst(r)), lastRow);
            iv[c.k] = add(kLo, p);
            x = b.create<memref::LoadOp>(loc, c.a, indices(c.mapA, iv));
          } else {
            x = b.create<memref::LoadOp>(loc, ap,
                                         mlir::ValueRange{panelA, p, cst(r)});
          }
          Value splat = b.create<vector::BroadcastOp>(loc, vecType, x);
          for (int64_t v = 0; v < vectors; ++v)
            next.push_back(b.create<vector::FMAOp>(loc, splat, bs[v],
                                                   accs[r * vectors + v]));
        }
        b.create<scf::YieldOp>(loc, next);
      });

  // The values stored: the sums, or on the last block of the sum the
  // epilogue applied to them (rows past the edge read the last row's
  // operands; their results are not stored).
  llvm::SmallVector<Value> results(sum.getResults());
  if (epi) {
    auto ifOp = b.create<scf::IfOp>(loc, accTypes, lastBlock, true);
    OpBuilder::InsertionGuard guard(b);
    b.setInsertionPointToStart(ifOp.thenBlock());
    llvm::SmallVector<Value> applied;
    for (int64_t r = 0; r < blk.mr; ++r) {
      Value row = min(add(mLo, cst(r)), lastRow);
      for (int64_t v = 0; v < vectors; ++v) {
        llvm::SmallVector<Value> args;
        for (mlir::OpOperand *input : epi->op.getDpsInputOperands())
          args.push_back(input->get() == epi->temporary.getResult()
                             ? sum.getResult(r * vectors + v)
                             : epilogueInput(input, iv, row,
                                             add(nLo, cst(v * blk.vl)),
                                             masks[v]));
        applied.push_back(vectorizeEpilogue(b, loc, *epi, args, blk.vl));
      }
    }
    b.create<scf::YieldOp>(loc, applied);
    b.setInsertionPointToStart(ifOp.elseBlock());
    b.create<scf::YieldOp>(loc, sum.getResults());
    results.assign(ifOp.getResults().begin(), ifOp.getResults().end());
  }
  auto store = [&](Value tile) {
    for (int64_t r = 0; r < blk.mr; ++r) {
      auto ifOp = b.create<scf::IfOp>(loc, lt(cst(r), rows), false);
      OpBuilder::InsertionGuard guard(b);
      b.setInsertionPoint(ifOp.thenBlock()->getTerminator());
      ifFull({}, [&](bool masked) {
        for (int64_t v = 0; v < vectors; ++v) {
          Value acc = results[r * vectors + v];
          if (masked)
            b.create<vector::MaskedStoreOp>(loc, tile, rowIndices(tile, r, v),
                                            masks[v], acc);
          else
            b.create<vector::StoreOp>(loc, acc, tile, rowIndices(tile, r, v));
        }
      });
    }
    if (tile == scratch)
      copyTile(/*toScratch=*/false);
    return llvm::SmallVector<Value>();
  };
  versions(c.c, nAxis, {}, store, [&] { return store(scratch); });
}

/// The vector of epilogue operand `input` (not C) at C's row `row` and the
/// `blk.vl` columns from `col`: a masked vector load where the columns are
/// the operand's last axis with unit stride in its type, else one value per
/// lane (columns past the edge read the last one), or one value broadcast
/// where the operand does not depend on the column.
Value KernelEmitter::epilogueInput(mlir::OpOperand *input,
                                   llvm::SmallVector<Value> iv, Value row,
                                   Value col, Value mask) {
  Value source = input->get();
  auto type = llvm::cast<mlir::MemRefType>(source.getType());
  auto vecType = mlir::VectorType::get({blk.vl}, type.getElementType());
  // The epilogue's loops are C's axes, one for one.
  mlir::AffineMap map = epi->op.getMatchingIndexingMap(input);
  iv[c.m] = row;
  iv[c.n] = col;
  llvm::SmallVector<Value> at;
  std::optional<unsigned> lanesAxis;
  for (unsigned i = 0; i < map.getNumResults(); ++i) {
    unsigned loopDim = c.mapC.getDimPosition(map.getDimPosition(i));
    if (loopDim == c.n)
      lanesAxis = i;
    at.push_back(iv[loopDim]);
  }
  if (!lanesAxis)
    return b.create<vector::BroadcastOp>(
        loc, vecType, b.create<memref::LoadOp>(loc, source, at));
  if (*lanesAxis + 1 == map.getNumResults() &&
      (*stridesOf(type))[*lanesAxis] == 1) {
    Value zeros =
        b.create<arith::ConstantOp>(loc, vecType, b.getZeroAttr(vecType));
    return b.create<vector::MaskedLoadOp>(loc, vecType, source, at, mask,
                                          zeros);
  }
  Value lastCol = sub(size[c.n], cst(1));
  Value vec = b.create<arith::ConstantOp>(loc, vecType, b.getZeroAttr(vecType));
  for (int64_t lane = 0; lane < blk.vl; ++lane) {
    at[*lanesAxis] = min(add(col, cst(lane)), lastCol);
    Value x = b.create<memref::LoadOp>(loc, source, at);
    vec = b.create<vector::InsertOp>(loc, x, vec, lane);
  }
  return vec;
}

} // namespace ein::tiling
