// The loss curve of a training run as a picture a user can open: an SVG
// line plot of one or more series (training loss, validation loss) by step.
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace ein {

/// One curve: (step, value) points in increasing step order. Non-finite
/// values (a NaN or inf loss) are left out of the line and marked.
struct PlotSeries {
  std::string name;  // the legend's label: "train", "validation"
  std::string color; // an SVG colour: "#1f77b4"
  std::vector<std::pair<double, double>> points;
};

/// A standalone SVG document (UTF-8, no scripts, no external references),
/// 800 × 480: axes with "nice" ticks (1, 2, 5 × 10^k) and their labels, the
/// x axis "step", the y axis `yLabel` (a log scale when `logY` and every
/// finite value is > 0: a tick per decade, lighter lines at 2..9 over at most
/// three decades; otherwise linear, and the label says why), `title` on top,
/// a legend naming each series, and each series as a polyline (a series with
/// one point as a dot; an empty `color` takes one from a fixed palette). A
/// point with a NaN or inf value is drawn as a red triangle on the top edge
/// at its step, and the legend says "non-finite: N" (N counts points with a
/// non-finite step too, which cannot be placed). Text is XML-escaped.
/// Coordinates have two decimals: the same input gives the same bytes. An
/// empty plot (no finite points) still renders its frame and says "no data".
std::string lossPlotSVG(const std::vector<PlotSeries> &series,
                        const std::string &title,
                        const std::string &yLabel = "loss", bool logY = false);

} // namespace ein
