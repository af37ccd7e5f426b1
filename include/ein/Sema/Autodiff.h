// Reverse-mode differentiation of a checked function: grad() appends the
// backward ops to the function as ordinary checked ops (docs/autodiff.md).
#pragma once

#include "ein/Sema/Program.h"

#include <optional>
#include <string>
#include <vector>

namespace ein {

/// Why a gradient cannot be built: the op that does not differentiate, at
/// its place (in the callee for an inlined op, with its call site).
struct GradientError {
  std::string message;
  SourceLoc loc;
  int callSite = -1;
};

struct GradientResult {
  std::vector<unsigned> grads; // one per `wrt`, with the wrt value's type
  std::optional<GradientError> error;
};

/// Appends to `fn` the ops computing d`loss`/d`wrt[i]` (loss: a rank-0 float
/// value of `fn`; wrt: float values computed before it) by reverse-mode
/// differentiation over the ops before them. Every backward op is built
/// through the same shape inference as a written one, is tagged with its
/// GradPhase, and carries the place and call site of the forward op it
/// differentiates (`at`, the grad() call, for the seed and for zeros: a wrt
/// value the loss does not depend on gets zeros).
GradientResult appendGradient(CheckedFunction &fn, unsigned loss,
                              const std::vector<unsigned> &wrt, SourceLoc at);

/// Recomputes in the backward, instead of saving, each saved value made by
/// an elementwise op from values that are saved anyway (or are inputs):
/// the op is repeated (GradPhase::Recompute) before the first backward op
/// that reads it, which then reads the copy, so the forward value dies at
/// its last forward use. Memory falls, FLOPs rise by the repeated ops.
/// Returns how many values are recomputed.
size_t recomputeCheapValues(CheckedFunction &fn);

/// The probabilities of each softmax differentiated by its fused rule
/// (exp(z - max) / sum, docs/autodiff.md) are computed again before the
/// first backward op reading them, from z and the saved row max and row
/// sum, and z's own ops too when they are elementwise ops, views or
/// contractions between activations of values the backward holds anyway
/// (an attention's scores from q and k): the probabilities and the scores
/// are not saved. appendGradient runs it. Returns how many softmaxes.
size_t recomputeSoftmax(CheckedFunction &fn);

/// The forward values the backward ops of `fn` read (its saved
/// activations, parameters included), in value order.
std::vector<unsigned> savedForBackward(const CheckedFunction &fn);

} // namespace ein
