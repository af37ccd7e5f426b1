// einc train's loss picture (ein/Report/LossPlot.h): the SVG parses as XML
// (Python's xml.dom.minidom is the independent parser), one polyline point
// per finite loss, coordinates that follow the steps and the values (linear
// and log), escaped text, non-finite markers and the empty plot.
#include "ein/Report/LossPlot.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <limits>
#include <regex>
#include <string>
#include <unistd.h>
#include <vector>

using namespace ein;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

/// How often `needle` occurs in `text`.
size_t count(const std::string &text, const std::string &needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++n;
  return n;
}

/// The (x, y) pairs of every polyline's points="..." attribute, in order.
std::vector<std::vector<std::pair<double, double>>>
polylines(const std::string &svg) {
  std::vector<std::vector<std::pair<double, double>>> lines;
  std::regex line("<polyline[^>]* points=\"([^\"]*)\"");
  std::regex pair("(-?[0-9.]+),(-?[0-9.]+)");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), line);
       it != std::sregex_iterator(); ++it) {
    std::string pts = (*it)[1];
    std::vector<std::pair<double, double>> xy;
    for (auto p = std::sregex_iterator(pts.begin(), pts.end(), pair);
         p != std::sregex_iterator(); ++p)
      xy.emplace_back(std::stod((*p)[1]), std::stod((*p)[2]));
    lines.push_back(xy);
  }
  return lines;
}

/// The value of attribute `attr` of every element with class="cls".
std::vector<std::string> attrOfClass(const std::string &svg,
                                     const std::string &cls,
                                     const std::string &attr) {
  std::vector<std::string> out;
  std::regex el("<[a-z]+ class=\"" + cls + "\"[^>]*>");
  std::regex value(" " + attr + "=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), el);
       it != std::sregex_iterator(); ++it) {
    std::string tag = (*it)[0];
    std::smatch m;
    if (std::regex_search(tag, m, value))
      out.push_back(m[1]);
  }
  return out;
}

/// The text of every <text class="cls">.
std::vector<std::string> textsOfClass(const std::string &svg,
                                      const std::string &cls) {
  std::vector<std::string> out;
  std::regex el("<text class=\"" + cls + "\"[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), el);
       it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1]);
  return out;
}

class LossPlotTest : public ::testing::Test {
protected:
  void SetUp() override {
    const char *base = std::getenv("TMPDIR");
    std::string tmpl =
        std::string(base && *base ? base : "/tmp") + "/ein-lossplot-XXXXXX";
    std::vector<char> buf(tmpl.begin(), tmpl.end());
    buf.push_back('\0');
    ASSERT_NE(::mkdtemp(buf.data()), nullptr);
    dir = buf.data();
  }
  void TearDown() override {
    for (const std::string &f : written)
      ::unlink(f.c_str());
    ::rmdir(dir.c_str());
  }

  std::string write(const std::string &name, const std::string &text) {
    std::string p = dir + "/" + name;
    std::ofstream(p, std::ios::binary) << text;
    written.push_back(p);
    return p;
  }

  /// Python's XML parser reads the document, and the <title> element's text
  /// is exactly `title` (so the escaping round-trips).
  void expectParses(const std::string &svg, const std::string &title) {
    std::string doc = write("plot.svg", svg);
    std::string want = write("title.txt", title);
    std::string cmd =
        "python3 -c \"import sys, xml.dom.minidom as m; "
        "d = m.parse(sys.argv[1]); "
        "t = d.getElementsByTagName('title')[0]; "
        "text = ''.join(c.data for c in t.childNodes); "
        "sys.exit(0 if text == open(sys.argv[2], encoding='utf-8').read() "
        "else 3)\" " +
        doc + " " + want;
    EXPECT_EQ(std::system(cmd.c_str()), 0) << svg;
  }

  std::string dir;
  std::vector<std::string> written;
};

TEST_F(LossPlotTest, OnePointPerFiniteLossAndMarkersForTheRest) {
  PlotSeries train{"train", "#1f77b4", {}};
  for (int s = 0; s < 10; ++s)
    train.points.emplace_back(s * 10, 5.0 - 0.3 * s);
  train.points[3].second = kNaN;
  train.points[6].second = kInf;
  train.points[7].second = -kInf;
  PlotSeries val{"validation", "#ff7f0e", {{0, 5.1}, {50, 3.9}, {90, 2.6}}};
  std::string svg = lossPlotSVG({train, val}, "GPT run", "loss");
  expectParses(svg, "GPT run");

  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 2u);
  EXPECT_EQ(lines[0].size(), 7u); // 10 points, 3 not finite
  EXPECT_EQ(lines[1].size(), 3u);
  // x follows the step; y (downwards in SVG) follows the falling loss.
  for (const auto &l : lines)
    for (size_t i = 1; i < l.size(); ++i) {
      EXPECT_GT(l[i].first, l[i - 1].first);
      EXPECT_GT(l[i].second, l[i - 1].second);
    }
  // Linear: equal steps are equal distances, and equal loss drops too.
  // train's steps 0, 10, 20 and losses 5.0, 4.7, 4.4.
  EXPECT_NEAR(lines[0][1].first - lines[0][0].first,
              lines[0][2].first - lines[0][1].first, 0.02);
  EXPECT_NEAR(lines[0][1].second - lines[0][0].second,
              lines[0][2].second - lines[0][1].second, 0.02);
  // Both series share the axes: step 0 and step 90 at the same x.
  EXPECT_EQ(lines[0][0].first, lines[1][0].first);
  EXPECT_EQ(lines[0].back().first, lines[1].back().first);

  EXPECT_EQ(count(svg, "class=\"nonfinite\""), 3u);
  EXPECT_NE(svg.find("non-finite: 3"), std::string::npos);
  // The markers sit on the top edge, at the steps of the bad losses.
  std::vector<std::string> frameY = attrOfClass(svg, "frame", "y");
  ASSERT_EQ(frameY.size(), 1u);
  std::vector<std::string> marks = attrOfClass(svg, "nonfinite", "d");
  ASSERT_EQ(marks.size(), 3u);
  for (const std::string &d : marks)
    EXPECT_NE(d.find(" " + frameY[0] + " L"), std::string::npos) << d;
  // The NaN at step 30 is halfway between steps 20 and 40 (points 2, 3).
  double x30 = std::stod(marks[0].substr(1)) + 4;
  EXPECT_NEAR(x30, (lines[0][2].first + lines[0][3].first) / 2, 0.02);
  EXPECT_NE(svg.find(">train</text>"), std::string::npos);
  EXPECT_NE(svg.find(">validation</text>"), std::string::npos);
  EXPECT_NE(svg.find(">step</text>"), std::string::npos);

  // Tick labels are 1, 2 or 5 times a power of ten apart.
  std::vector<std::string> xt = textsOfClass(svg, "xtick");
  ASSERT_GE(xt.size(), 3u);
  double gap = std::stod(xt[1]) - std::stod(xt[0]);
  double mant = gap / std::pow(10, std::floor(std::log10(gap)));
  EXPECT_TRUE(std::fabs(mant - 1) < 1e-9 || std::fabs(mant - 2) < 1e-9 ||
              std::fabs(mant - 5) < 1e-9)
      << gap;
  EXPECT_LE(std::stod(xt.front()), 0);
  EXPECT_GE(std::stod(xt.back()), 90);

  // The same input gives the same bytes.
  EXPECT_EQ(svg, lossPlotSVG({train, val}, "GPT run", "loss"));
}

TEST_F(LossPlotTest, LogScaleMapsDecadesEvenly) {
  PlotSeries s{
      "train", "#1f77b4", {{0, 1000}, {1, 100}, {2, 10}, {3, 1}, {4, 0.1}}};
  std::string svg = lossPlotSVG({s}, "decades", "loss", /*logY=*/true);
  expectParses(svg, "decades");
  auto lines = polylines(svg);
  ASSERT_EQ(lines.size(), 1u);
  ASSERT_EQ(lines[0].size(), 5u);
  double decade = lines[0][1].second - lines[0][0].second;
  EXPECT_GT(decade, 10);
  for (size_t i = 1; i < 5; ++i)
    EXPECT_NEAR(lines[0][i].second - lines[0][i - 1].second, decade, 0.02);
  // One grid line per decade, as far apart as the points' decades.
  std::vector<std::string> ys = attrOfClass(svg, "grid-y", "y1");
  ASSERT_EQ(ys.size(), 5u);
  for (size_t i = 1; i < ys.size(); ++i)
    EXPECT_NEAR(std::stod(ys[i - 1]) - std::stod(ys[i]), decade, 0.02);
  EXPECT_EQ(textsOfClass(svg, "ytick"),
            (std::vector<std::string>{"0.1", "1", "10", "100", "1000"}));
  EXPECT_NE(svg.find("loss (log scale)"), std::string::npos);

  // Within one decade, lighter lines mark 2..9 at their logarithms, and 2
  // and 5 are labelled.
  std::string one =
      lossPlotSVG({{"train", "", {{0, 3}, {1, 8}}}}, "one", "loss", true);
  std::vector<std::string> major = attrOfClass(one, "grid-y", "y1");
  std::vector<std::string> minor = attrOfClass(one, "grid-minor", "y1");
  ASSERT_EQ(major.size(), 2u); // 1 and 10
  ASSERT_EQ(minor.size(), 8u); // 2..9
  double y1 = std::stod(major[0]), y10 = std::stod(major[1]);
  for (int m = 2; m <= 9; ++m)
    EXPECT_NEAR((y1 - std::stod(minor[m - 2])) / (y1 - y10), std::log10(m),
                1e-4);
  EXPECT_EQ(textsOfClass(one, "ytick-minor"),
            (std::vector<std::string>{"2", "5"}));

  // A value of 0 cannot be drawn on a log scale: linear, and it says so.
  s.points.emplace_back(5, 0.0);
  std::string lin = lossPlotSVG({s}, "decades", "loss", true);
  EXPECT_NE(lin.find("(linear: a value is not positive)"), std::string::npos);
  auto l = polylines(lin);
  ASSERT_EQ(l.size(), 1u);
  // Linear: the drop 1000 -> 100 is ten times the drop 100 -> 10.
  EXPECT_NEAR((l[0][1].second - l[0][0].second) /
                  (l[0][2].second - l[0][1].second),
              10, 0.05);
}

TEST_F(LossPlotTest, TextIsEscaped) {
  std::string title = "a<b & \"c\" 'd' > e";
  PlotSeries s{"x<y&\"z\"", "#000000", {{0, 1}, {1, 2}}};
  std::string svg = lossPlotSVG({s}, title, "l<o>s&s");
  expectParses(svg, title);
  EXPECT_NE(svg.find("a&lt;b &amp; &quot;c&quot; &apos;d&apos; &gt; e"),
            std::string::npos);
  EXPECT_NE(svg.find(">x&lt;y&amp;&quot;z&quot;</text>"), std::string::npos);
  EXPECT_NE(svg.find(">l&lt;o&gt;s&amp;s</text>"), std::string::npos);
  EXPECT_EQ(svg.find("<b"), std::string::npos);
}

TEST_F(LossPlotTest, EmptyPlotsRenderTheirFrame) {
  for (const std::vector<PlotSeries> &series :
       {std::vector<PlotSeries>{},
        std::vector<PlotSeries>{{"train", "#1f77b4", {}}},
        std::vector<PlotSeries>{{"train", "", {{0, kNaN}, {5, kInf}}}}}) {
    std::string svg = lossPlotSVG(series, "empty", "loss", true);
    expectParses(svg, "empty");
    EXPECT_NE(svg.find(">no data</text>"), std::string::npos);
    EXPECT_EQ(count(svg, "class=\"frame\""), 1u);
    EXPECT_EQ(count(svg, "<polyline"), 0u);
    EXPECT_EQ(count(svg, "class=\"grid-"), 0u);
  }
  std::string nan = lossPlotSVG({{"train", "", {{0, kNaN}, {5, kInf}}}}, "e");
  EXPECT_EQ(count(nan, "class=\"nonfinite\""), 2u);
  EXPECT_NE(nan.find("non-finite: 2"), std::string::npos);
}

TEST_F(LossPlotTest, ExtremeValuesStayInsideTheFrame) {
  // A diverged run: losses near the largest double (hi - lo overflows),
  // and steps whose range is tiny against their size.
  for (const PlotSeries &s :
       {PlotSeries{"t", "", {{0, 1.7e308}, {1, -1.7e308}}},
        PlotSeries{"t", "", {{1e16, 1}, {1e16 + 2, 2}}}}) {
    std::string svg = lossPlotSVG({s}, "extreme");
    expectParses(svg, "extreme");
    EXPECT_EQ(svg.find("nan"), std::string::npos) << svg;
    EXPECT_EQ(svg.find("inf"), std::string::npos) << svg;
    auto lines = polylines(svg);
    ASSERT_EQ(lines.size(), 1u);
    ASSERT_EQ(lines[0].size(), 2u);
    for (const auto &[x, y] : lines[0]) {
      EXPECT_GE(x, 80);
      EXPECT_LE(x, 780);
      EXPECT_GE(y, 50);
      EXPECT_LE(y, 420);
    }
    std::vector<std::string> xt = textsOfClass(svg, "xtick");
    for (size_t i = 1; i < xt.size(); ++i)
      EXPECT_NE(xt[i], xt[i - 1]); // no two ticks print alike
  }
}

TEST_F(LossPlotTest, OnePointIsADot) {
  std::string svg = lossPlotSVG({{"train", "#1f77b4", {{100, 2.5}}}}, "one");
  expectParses(svg, "one");
  EXPECT_EQ(count(svg, "<polyline"), 0u);
  EXPECT_EQ(count(svg, "<circle class=\"series\""), 1u);
  // The dot lies inside the frame.
  std::vector<std::string> cx = attrOfClass(svg, "series", "cx");
  std::vector<std::string> fx = attrOfClass(svg, "frame", "x");
  std::vector<std::string> fw = attrOfClass(svg, "frame", "width");
  ASSERT_EQ(cx.size(), 1u);
  ASSERT_EQ(fx.size(), 1u);
  EXPECT_GT(std::stod(cx[0]), std::stod(fx[0]));
  EXPECT_LT(std::stod(cx[0]), std::stod(fx[0]) + std::stod(fw[0]));
}

} // namespace
