// Small building blocks for charts drawn as inline SVG, so that a report page needs no script,
// font or image from anywhere: scales (linear and log10) with readable ticks, a canvas that
// collects marks (each may carry a tooltip as an SVG <title>), axes, error bars and a legend.
// Every string that reaches the markup goes through escape(); callers pass plain text.
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kernelarc::svg {

/// Text made safe for HTML and SVG content and attribute values (& < > " ' escaped); control
/// characters other than tab and newline become U+FFFD, which the HTML parser would otherwise
/// pass through into a page that no longer validates.
std::string escape(std::string_view text);

/// One of ten colours that stay apart for the common colour deficiencies; index wraps around.
const std::string& palette_color(std::size_t index);

/// "#rrggbb" a fraction t (clamped to [0, 1]) of the way from `from` to `to` (both "#rrggbb").
std::string mix_color(std::string_view from, std::string_view to, double t);

/// "0.5", "12", "2000", "1e4", "2.5e-4": short tick text, exponent form from 1e4 and below 1e-3.
std::string tick_text(double value);

/// Maps a data interval onto a pixel interval, linearly or by log10 (data must then be > 0).
class Scale {
 public:
  static Scale linear(double lo, double hi, double from, double to);
  static Scale log10(double lo, double hi, double from, double to);

  double operator()(double value) const;
  /// About five to eight round values inside the domain: 1-2-5 steps for linear; decades, or
  /// 1-2-5 within decades, or plain round steps when a log domain spans less than a decade.
  std::vector<double> ticks() const;
  /// Steps no finer than `step` on a linear scale: 1 keeps ticks of counts and depths whole.
  void set_min_tick_step(double step) { min_step_ = step; }
  bool is_log() const { return log_; }
  double lo() const { return lo_; }
  double hi() const { return hi_; }
  double from() const { return from_; }
  double to() const { return to_; }

 private:
  Scale(bool log, double lo, double hi, double from, double to);
  bool log_;
  double lo_, hi_, from_, to_;
  double min_step_ = 0;
};

/// [lo, hi] around the values on a log axis, widened by `margin` (a factor) on each side; a
/// single value gets a domain around it. Non-positive values are ignored; none at all give [1, 10].
std::pair<double, double> log_domain(const std::vector<double>& values, double margin);

struct Point {
  double x = 0;
  double y = 0;
};

/// How a mark is painted, built by chaining: Style::filled("#4e79a7").outline("#fff", 0.6).
struct Style {
  static Style filled(std::string color);
  static Style stroked(std::string color, double width = 1);
  Style& outline(std::string color, double width);
  Style& faded(double opacity);
  Style& dashed(std::string pattern);
  /// A class on the mark, so that the page's CSS (and tests) can find the marks of one kind.
  Style& css(std::string name);

  std::string fill = "none";
  std::string stroke = "none";
  double stroke_width = 1;
  double opacity = 1;
  std::string dash;  ///< stroke-dasharray, empty for solid
  std::string css_class;
};

/// 11 px, start-anchored, dark grey unless chained otherwise: TextStyle().sized(10).end().
struct TextStyle {
  TextStyle& sized(double px);
  TextStyle& middle();
  TextStyle& end();
  TextStyle& colored(std::string color);
  TextStyle& strong();
  /// Degrees, about the text's anchor point.
  TextStyle& rotated(double degrees);

  double size = 11;
  std::string anchor = "start";
  std::string fill = "#333";
  bool bold = false;
  double rotate = 0;
};

/// The marks of one chart; finish() wraps them in an <svg> that scales to its container's width.
class Canvas {
 public:
  /// `label` is the chart's accessible name (aria-label), for screen readers.
  Canvas(double width, double height, std::string label);

  double width() const { return width_; }
  double height() const { return height_; }

  void line(double x1, double y1, double x2, double y2, const Style& style);
  void polyline(const std::vector<Point>& points, const Style& style);
  /// Marks take an optional tooltip, shown by browsers on hover as the SVG <title> child.
  void circle(double cx, double cy, double r, const Style& style, std::string_view title = {});
  void rect(double x, double y, double w, double h, const Style& style,
            std::string_view title = {});
  /// An "x" of half-size r, stroked with style.stroke.
  void cross(double cx, double cy, double r, const Style& style, std::string_view title = {});
  void text(double x, double y, std::string_view text, const TextStyle& style = {});
  /// A whisker from lo to hi at y (horizontal) or at x (vertical), with end caps of half-size cap.
  void error_bar_h(double lo, double hi, double y, double cap, const std::string& stroke);
  void error_bar_v(double x, double lo, double hi, double cap, const std::string& stroke);

  std::string finish() const;

 private:
  double width_, height_;
  std::string label_;
  std::string body_;
};

/// The rectangle the data is drawn in, in canvas units.
struct Frame {
  double left = 0, top = 0, right = 0, bottom = 0;
};

using TickFormat = std::function<std::string(double)>;

/// Ticks, tick labels, light grid lines across the frame, and the axis title (which says "log
/// scale" by itself when the scale is one, so that no chart forgets to).
void x_axis(Canvas& canvas, const Scale& scale, const Frame& frame, std::string_view title,
            const TickFormat& format = tick_text);
void y_axis(Canvas& canvas, const Scale& scale, const Frame& frame, std::string_view title,
            const TickFormat& format = tick_text);

struct LegendEntry {
  enum class Mark { Dot, Line, Cross, Square, Ring };
  std::string label;
  std::string color;
  Mark mark = Mark::Dot;
  double stroke_width = 2;  ///< for Line
};

/// Entries in rows from (x, y) wrapping at `width`; legend_height says how much room they take.
double legend_height(const std::vector<LegendEntry>& entries, double width);
void legend(Canvas& canvas, double x, double y, double width,
            const std::vector<LegendEntry>& entries);

}  // namespace kernelarc::svg
