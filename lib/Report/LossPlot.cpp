// The loss curve of a training run as a hand-written SVG document (see
// LossPlot.h): axes with nice ticks, grid, legend, non-finite markers.
#include "ein/Report/LossPlot.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <limits>

namespace ein {

namespace {

// The canvas and the plot area inside its margins (room for the title on
// top, tick labels and the axis names left and below).
constexpr double kWidth = 800, kHeight = 480;
constexpr double kLeft = 80, kRight = 780, kTop = 50, kBottom = 420;
/// About this many ticks per axis.
constexpr int kTicks = 6;
/// Colours for series that name none (matplotlib's first ones).
constexpr const char *kPalette[] = {"#1f77b4", "#ff7f0e", "#2ca02c",
                                    "#d62728", "#9467bd", "#8c564b"};

std::string escape(const std::string &text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&':
      out += "&amp;";
      break;
    case '<':
      out += "&lt;";
      break;
    case '>':
      out += "&gt;";
      break;
    case '"':
      out += "&quot;";
      break;
    case '\'':
      out += "&apos;";
      break;
    default:
      // Control characters are not allowed in XML 1.0: show them as '?'.
      if (static_cast<unsigned char>(c) < 0x20 && c != '\t' && c != '\n')
        out += '?';
      else
        out += c;
    }
  }
  return out;
}

/// A coordinate, always with two decimals: the document is byte-for-byte
/// the same for the same input.
std::string num(double v) { return fmt::format("{:.2f}", v); }

/// An axis: the data range widened to whole ticks, and the ticks.
struct Axis {
  double lo = 0, hi = 1;     // in axis units (log10 of the value for log)
  std::vector<double> ticks; // in axis units
  std::vector<std::string> labels;
  /// Log axes spanning few decades: 2..9 times each power of ten, for
  /// lighter grid lines (labelled at 2 and 5 over at most two decades).
  std::vector<double> minor;
  std::vector<std::string> minorLabels; // "" where unlabelled
};

/// 1, 2 or 5 times a power of ten, the smallest at least `raw`.
double niceStep(double raw) {
  double p = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0})
    if (m * p >= raw * (1 - 1e-9))
      return m * p;
  return 10 * p;
}

Axis linearAxis(double lo, double hi) {
  constexpr double kMax = std::numeric_limits<double>::max();
  if (!(hi > lo)) { // one value: a range around it
    double pad = lo == 0 ? 1 : std::fabs(lo) * 0.1;
    lo = std::max(lo - pad, -kMax);
    hi = std::min(hi + pad, kMax);
  }
  // Halves first: hi - lo itself may overflow (a loss near 1e308).
  double step = niceStep(hi / kTicks - lo / kTicks);
  double first = std::floor(lo / step), last = std::ceil(hi / step);
  Axis a;
  a.lo = std::max(first * step, -kMax);
  a.hi = std::min(last * step, kMax);
  // Fixed decimals, enough to tell ticks apart (none for a step of 1 or
  // more), unless the values are huge or the step is tiny: then as many
  // significant digits as tell the ticks apart.
  double magnitude = std::max(std::fabs(a.lo), std::fabs(a.hi));
  bool fixed = step >= 1e-5 && magnitude < 1e12;
  int decimals = std::max(0, -static_cast<int>(std::floor(std::log10(step))));
  int digits = std::clamp(
      static_cast<int>(std::ceil(std::log10(magnitude / step))) + 1, 1, 17);
  // At most a few dozen ticks, even where first + 1 == first in doubles
  // (a range tiny against its magnitude).
  const int count = static_cast<int>(std::min(last - first, 50.0));
  for (int k = 0; k <= count; ++k) {
    double v = (first + k) * step;
    if (!std::isfinite(v) || v < a.lo || v > a.hi ||
        (!a.ticks.empty() && v <= a.ticks.back()))
      continue;
    a.ticks.push_back(v);
    std::string label = fixed ? fmt::format("{:.{}f}", v, decimals)
                              : fmt::format("{:.{}g}", v, digits);
    if (fixed && label.find_first_not_of("-0.") == std::string::npos)
      label = decimals ? fmt::format("{:.{}f}", 0.0, decimals) : "0";
    a.labels.push_back(label);
  }
  return a;
}

/// Where `v` (in axis units) lies between the axis' ends, from 0 to 1;
/// computed on halves so that a range near the largest double does not
/// overflow.
double fraction(const Axis &a, double v) {
  return (v / 2 - a.lo / 2) / (a.hi / 2 - a.lo / 2);
}

/// Whole decades from below the smallest to above the largest value; a tick
/// on every decade (every second, fifth, ... when there are many).
Axis logAxis(double lo, double hi) {
  Axis a;
  a.lo = std::floor(std::log10(lo));
  a.hi = std::ceil(std::log10(hi));
  if (a.hi <= a.lo)
    a.hi = a.lo + 1;
  double every = std::max(1.0, niceStep((a.hi - a.lo) / kTicks));
  for (double k = std::ceil(a.lo / every) * every; k <= a.hi; k += every) {
    a.ticks.push_back(k);
    a.labels.push_back(fmt::format("{:g}", std::pow(10.0, k)));
  }
  if (a.hi - a.lo <= 3)
    for (double k = a.lo; k < a.hi; ++k)
      for (int m = 2; m <= 9; ++m) {
        a.minor.push_back(k + std::log10(m));
        bool label = a.hi - a.lo <= 2 && (m == 2 || m == 5);
        a.minorLabels.push_back(
            label ? fmt::format("{:g}", m * std::pow(10.0, k)) : "");
      }
  return a;
}

struct Bounds {
  double lo = std::numeric_limits<double>::infinity();
  double hi = -std::numeric_limits<double>::infinity();
  void add(double v) {
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  bool empty() const { return lo > hi; }
};

} // namespace

std::string lossPlotSVG(const std::vector<PlotSeries> &series,
                        const std::string &title, const std::string &yLabel,
                        bool logY) {
  // The ranges: x over every point with a finite step (a non-finite loss is
  // still marked at its step), y over the finite values.
  Bounds xs, ys;
  size_t nonFinite = 0;
  bool positive = true;
  for (const PlotSeries &s : series)
    for (const auto &[step, value] : s.points) {
      if (!std::isfinite(step)) {
        ++nonFinite; // cannot be placed: counted in the note only
        continue;
      }
      xs.add(step);
      if (!std::isfinite(value)) {
        ++nonFinite;
        continue;
      }
      ys.add(value);
      positive = positive && value > 0;
    }
  const bool hasData = !ys.empty();
  const bool useLog = logY && hasData && positive;
  Axis xAxis = xs.empty() ? linearAxis(0, 1) : linearAxis(xs.lo, xs.hi);
  Axis yAxis = !hasData ? linearAxis(0, 1)
               : useLog ? logAxis(ys.lo, ys.hi)
                        : linearAxis(ys.lo, ys.hi);
  auto px = [&](double step) {
    return kLeft + fraction(xAxis, step) * (kRight - kLeft);
  };
  auto pyAxis = [&](double axisUnits) {
    return kBottom - fraction(yAxis, axisUnits) * (kBottom - kTop);
  };
  auto py = [&](double value) {
    return pyAxis(useLog ? std::log10(value) : value);
  };

  std::string out;
  out += fmt::format(
      "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"{0}\" "
      "height=\"{1}\" viewBox=\"0 0 {0} {1}\" font-family=\"sans-serif\" "
      "font-size=\"12\">\n",
      kWidth, kHeight);
  out += fmt::format("<title>{}</title>\n", escape(title));
  out += fmt::format("<rect width=\"{}\" height=\"{}\" fill=\"white\"/>\n",
                     kWidth, kHeight);
  out += fmt::format("<text class=\"title\" x=\"{}\" y=\"30\" "
                     "text-anchor=\"middle\" font-size=\"16\">{}</text>\n",
                     num((kLeft + kRight) / 2), escape(title));

  // Grid lines and tick labels, only where there is something to measure.
  if (hasData) {
    for (size_t i = 0; i < xAxis.ticks.size(); ++i) {
      double x = px(xAxis.ticks[i]);
      out += fmt::format("<line class=\"grid-x\" x1=\"{0}\" y1=\"{1}\" "
                         "x2=\"{0}\" y2=\"{2}\" stroke=\"#dddddd\"/>\n",
                         num(x), num(kTop), num(kBottom));
      out += fmt::format("<text class=\"xtick\" x=\"{}\" y=\"{}\" "
                         "text-anchor=\"middle\">{}</text>\n",
                         num(x), num(kBottom + 18), xAxis.labels[i]);
    }
    for (size_t i = 0; i < yAxis.minor.size(); ++i) {
      double y = pyAxis(yAxis.minor[i]);
      out += fmt::format("<line class=\"grid-minor\" x1=\"{1}\" y1=\"{0}\" "
                         "x2=\"{2}\" y2=\"{0}\" stroke=\"#f0f0f0\"/>\n",
                         num(y), num(kLeft), num(kRight));
      if (!yAxis.minorLabels[i].empty())
        out += fmt::format("<text class=\"ytick-minor\" x=\"{}\" y=\"{}\" "
                           "text-anchor=\"end\" fill=\"#555555\">{}</text>\n",
                           num(kLeft - 6), num(y + 4), yAxis.minorLabels[i]);
    }
    for (size_t i = 0; i < yAxis.ticks.size(); ++i) {
      double y = pyAxis(yAxis.ticks[i]);
      out += fmt::format("<line class=\"grid-y\" x1=\"{1}\" y1=\"{0}\" "
                         "x2=\"{2}\" y2=\"{0}\" stroke=\"#dddddd\"/>\n",
                         num(y), num(kLeft), num(kRight));
      out += fmt::format("<text class=\"ytick\" x=\"{}\" y=\"{}\" "
                         "text-anchor=\"end\">{}</text>\n",
                         num(kLeft - 6), num(y + 4), yAxis.labels[i]);
    }
  }
  // The frame and the axis names.
  out += fmt::format("<rect class=\"frame\" x=\"{}\" y=\"{}\" width=\"{}\" "
                     "height=\"{}\" fill=\"none\" stroke=\"black\"/>\n",
                     num(kLeft), num(kTop), num(kRight - kLeft),
                     num(kBottom - kTop));
  out += fmt::format("<text class=\"xlabel\" x=\"{}\" y=\"{}\" "
                     "text-anchor=\"middle\">step</text>\n",
                     num((kLeft + kRight) / 2), num(kHeight - 20));
  std::string yName = escape(yLabel);
  if (useLog)
    yName += " (log scale)";
  else if (logY && hasData)
    yName += " (linear: a value is not positive)";
  out += fmt::format("<text class=\"ylabel\" x=\"20\" y=\"{0}\" "
                     "text-anchor=\"middle\" "
                     "transform=\"rotate(-90 20 {0})\">{1}</text>\n",
                     num((kTop + kBottom) / 2), yName);
  if (!hasData)
    out += fmt::format("<text class=\"nodata\" x=\"{}\" y=\"{}\" "
                       "text-anchor=\"middle\" font-size=\"16\" "
                       "fill=\"#888888\">no data</text>\n",
                       num((kLeft + kRight) / 2), num((kTop + kBottom) / 2));

  // The curves: each series' finite points in order; a lone point as a dot.
  for (size_t i = 0; i < series.size(); ++i) {
    const PlotSeries &s = series[i];
    std::string color =
        escape(s.color.empty() ? kPalette[i % std::size(kPalette)] : s.color);
    std::vector<std::string> coords;
    for (const auto &[step, value] : s.points)
      if (std::isfinite(step) && std::isfinite(value))
        coords.push_back(fmt::format("{},{}", num(px(step)), num(py(value))));
    if (coords.size() == 1) {
      size_t comma = coords[0].find(',');
      out += fmt::format("<circle class=\"series\" cx=\"{}\" cy=\"{}\" "
                         "r=\"3\" fill=\"{}\"/>\n",
                         coords[0].substr(0, comma),
                         coords[0].substr(comma + 1), color);
    } else if (coords.size() > 1) {
      std::string points;
      for (const std::string &c : coords)
        points += (points.empty() ? "" : " ") + c;
      out += fmt::format("<polyline class=\"series\" fill=\"none\" "
                         "stroke=\"{}\" stroke-width=\"1.5\" "
                         "points=\"{}\"/>\n",
                         color, points);
    }
  }
  // A NaN or inf loss: a red triangle on the top edge at its step.
  for (const PlotSeries &s : series)
    for (const auto &[step, value] : s.points)
      if (std::isfinite(step) && !std::isfinite(value)) {
        double x = px(step);
        out += fmt::format("<path class=\"nonfinite\" d=\"M{} {} L{} {} L{} "
                           "{} Z\" fill=\"red\"/>\n",
                           num(x - 4), num(kTop), num(x + 4), num(kTop), num(x),
                           num(kTop + 7));
      }

  // The legend, inside the plot's top-right corner.
  size_t rows = series.size() + (nonFinite ? 1 : 0);
  if (rows) {
    // Wide enough for the longest label at about 7 px a character.
    size_t longest = nonFinite ? 16 : 0;
    for (const PlotSeries &s : series)
      longest = std::max(longest, s.name.size());
    constexpr double kRowH = 18;
    const double kBoxW =
        std::min(48 + 7.0 * static_cast<double>(longest), (kRight - kLeft) / 2);
    double x0 = kRight - kBoxW - 10, y0 = kTop + 10;
    out += fmt::format("<g class=\"legend\">\n<rect x=\"{}\" y=\"{}\" "
                       "width=\"{}\" height=\"{}\" fill=\"white\" "
                       "fill-opacity=\"0.85\" stroke=\"#aaaaaa\"/>\n",
                       num(x0), num(y0), num(kBoxW), num(rows * kRowH + 8));
    double y = y0 + 4 + kRowH / 2;
    for (size_t i = 0; i < series.size(); ++i, y += kRowH) {
      const PlotSeries &s = series[i];
      std::string color =
          escape(s.color.empty() ? kPalette[i % std::size(kPalette)] : s.color);
      out += fmt::format("<line x1=\"{0}\" y1=\"{2}\" x2=\"{1}\" y2=\"{2}\" "
                         "stroke=\"{3}\" stroke-width=\"2\"/>\n",
                         num(x0 + 8), num(x0 + 32), num(y), color);
      out += fmt::format("<text x=\"{}\" y=\"{}\">{}</text>\n", num(x0 + 40),
                         num(y + 4), escape(s.name));
    }
    if (nonFinite) {
      out += fmt::format("<path d=\"M{} {} L{} {} L{} {} Z\" fill=\"red\"/>\n",
                         num(x0 + 16), num(y - 4), num(x0 + 24), num(y - 4),
                         num(x0 + 20), num(y + 3));
      out += fmt::format("<text class=\"nonfinite-note\" x=\"{}\" y=\"{}\">"
                         "non-finite: {}</text>\n",
                         num(x0 + 40), num(y + 4), nonFinite);
    }
    out += "</g>\n";
  }
  out += "</svg>\n";
  return out;
}

} // namespace ein
