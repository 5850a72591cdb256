#include "app/svg_chart.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include <fmt/format.h>

namespace kernelarc::svg {

namespace {

/// Coordinates to a tenth of a unit: finer is invisible and only makes the page bigger.
std::string coord(double value) {
  if (!std::isfinite(value)) value = 0;
  std::string text = fmt::format("{:.1f}", value);
  if (text.size() > 2 && text.compare(text.size() - 2, 2, ".0") == 0) text.resize(text.size() - 2);
  return text == "-0" ? "0" : text;
}

std::string style_attributes(const Style& style) {
  std::string out =
      fmt::format(R"( fill="{}" stroke="{}")", escape(style.fill), escape(style.stroke));
  if (style.stroke != "none" && style.stroke_width != 1)
    out += fmt::format(R"( stroke-width="{:.3g}")", style.stroke_width);
  if (style.opacity < 1) out += fmt::format(R"( opacity="{:.2g}")", style.opacity);
  if (!style.dash.empty()) out += fmt::format(R"( stroke-dasharray="{}")", escape(style.dash));
  if (!style.css_class.empty()) out += fmt::format(R"( class="{}")", escape(style.css_class));
  return out;
}

/// A self-closing element, or one holding its tooltip.
std::string element(std::string_view name, const std::string& attributes, std::string_view title) {
  if (title.empty()) return fmt::format("<{}{}/>", name, attributes);
  return fmt::format("<{}{}><title>{}</title></{}>", name, attributes, escape(title), name);
}

/// Round steps of 1, 2 or 5 times a power of ten, about `count` of them across [lo, hi].
std::vector<double> round_ticks(double lo, double hi, double count, double min_step = 0) {
  std::vector<double> ticks;
  const double span = hi - lo;
  if (!(span > 0) || !std::isfinite(span)) return {lo};
  const double raw = span / count;
  const double magnitude = std::pow(10.0, std::floor(std::log10(raw)));
  const double norm = raw / magnitude;
  const double step = std::max(min_step, (norm < 1.5 ? 1
                                          : norm < 3 ? 2
                                          : norm < 7 ? 5
                                                     : 10) *
                                             magnitude);
  for (double k = std::ceil(lo / step - 1e-9); k * step <= hi + step * 1e-9; ++k) {
    const double value = k * step;
    ticks.push_back(std::abs(value) < step * 1e-9 ? 0.0 : value);
  }
  return ticks;
}

}  // namespace

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (const char c : text) {
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
        out += "&#39;";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20 && c != '\n' && c != '\t')
          out += "\xEF\xBF\xBD";
        else
          out += c;
    }
  }
  return out;
}

const std::string& palette_color(std::size_t index) {
  // Tableau 10: distinct hues of similar weight, readable on white.
  static const std::array<std::string, 10> colors = {"#4e79a7", "#f28e2b", "#59a14f", "#b07aa1",
                                                     "#76b7b2", "#edc948", "#9c755f", "#ff9da7",
                                                     "#e15759", "#bab0ac"};
  return colors[index % colors.size()];
}

std::string mix_color(std::string_view from, std::string_view to, double t) {
  t = std::clamp(std::isfinite(t) ? t : 0.0, 0.0, 1.0);
  auto channel = [](std::string_view hex, int i) {
    return hex.size() == 7 ? std::stoi(std::string(hex.substr(1 + 2 * i, 2)), nullptr, 16) : 0;
  };
  std::string out = "#";
  for (int i = 0; i < 3; ++i) {
    const double value = channel(from, i) + (channel(to, i) - channel(from, i)) * t;
    out += fmt::format("{:02x}", static_cast<int>(std::lround(value)));
  }
  return out;
}

std::string tick_text(double value) {
  if (value == 0 || !std::isfinite(value)) return "0";
  const double magnitude = std::abs(value);
  if (magnitude >= 1e4 || magnitude < 1e-3) {
    int exponent = static_cast<int>(std::floor(std::log10(magnitude)));
    double mantissa = value / std::pow(10.0, exponent);
    if (std::abs(std::abs(mantissa) - 10) < 1e-9) mantissa /= 10, ++exponent;
    if (std::abs(mantissa - std::round(mantissa)) < 1e-9)
      return fmt::format("{}e{}", static_cast<int>(std::round(mantissa)), exponent);
    return fmt::format("{:.2g}e{}", mantissa, exponent);
  }
  return fmt::format("{:.6g}", value);
}

Style Style::filled(std::string color) {
  Style style;
  style.fill = std::move(color);
  return style;
}

Style Style::stroked(std::string color, double width) {
  Style style;
  style.stroke = std::move(color);
  style.stroke_width = width;
  return style;
}

Style& Style::outline(std::string color, double width) {
  stroke = std::move(color);
  stroke_width = width;
  return *this;
}

Style& Style::faded(double value) {
  opacity = value;
  return *this;
}

Style& Style::dashed(std::string pattern) {
  dash = std::move(pattern);
  return *this;
}

Style& Style::css(std::string name) {
  css_class = std::move(name);
  return *this;
}

TextStyle& TextStyle::sized(double px) {
  size = px;
  return *this;
}

TextStyle& TextStyle::middle() {
  anchor = "middle";
  return *this;
}

TextStyle& TextStyle::end() {
  anchor = "end";
  return *this;
}

TextStyle& TextStyle::colored(std::string color) {
  fill = std::move(color);
  return *this;
}

TextStyle& TextStyle::strong() {
  bold = true;
  return *this;
}

TextStyle& TextStyle::rotated(double degrees) {
  rotate = degrees;
  return *this;
}

Scale::Scale(bool log, double lo, double hi, double from, double to)
    : log_(log), lo_(lo), hi_(hi), from_(from), to_(to) {}

Scale Scale::linear(double lo, double hi, double from, double to) {
  return Scale(false, lo, hi, from, to);
}

Scale Scale::log10(double lo, double hi, double from, double to) {
  return Scale(true, lo > 0 ? lo : 1e-12, hi > 0 ? hi : 1e-12, from, to);
}

double Scale::operator()(double value) const {
  double a = lo_, b = hi_, v = value;
  if (log_) {
    // A non-positive value has no place on a log axis: it is pinned to the axis's start.
    if (!(v > 0)) return from_;
    a = std::log10(a), b = std::log10(b), v = std::log10(v);
  }
  if (b == a) return (from_ + to_) / 2;
  return from_ + (v - a) / (b - a) * (to_ - from_);
}

std::vector<double> Scale::ticks() const {
  if (!log_) return round_ticks(lo_, hi_, 6, min_step_);
  const double first = std::log10(lo_), last = std::log10(hi_);
  std::vector<double> decades;
  for (double e = std::ceil(first - 1e-9); e <= last + 1e-9; ++e) decades.push_back(e);
  if (decades.size() >= 3) {
    const std::size_t every = (decades.size() + 7) / 8;
    std::vector<double> ticks;
    for (std::size_t i = 0; i < decades.size(); ++i)
      if (static_cast<long long>(decades[i]) % static_cast<long long>(every) == 0)
        ticks.push_back(std::pow(10.0, decades[i]));
    return ticks;
  }
  std::vector<double> ticks;
  for (double e = std::floor(first); e <= std::ceil(last); ++e)
    for (const double m : {1.0, 2.0, 5.0}) {
      const double value = m * std::pow(10.0, e);
      if (value >= lo_ * (1 - 1e-9) && value <= hi_ * (1 + 1e-9)) ticks.push_back(value);
    }
  // Less than half a decade: round linear steps, unevenly spaced on the axis but all labelled.
  if (ticks.size() < 3) return round_ticks(lo_, hi_, 5);
  return ticks;
}

std::pair<double, double> log_domain(const std::vector<double>& values, double margin) {
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const double value : values)
    if (value > 0 && std::isfinite(value)) lo = std::min(lo, value), hi = std::max(hi, value);
  if (hi == 0) return {1, 10};
  if (margin <= 1 && lo == hi) margin = 2;
  return {lo / margin, hi * margin};
}

Canvas::Canvas(double width, double height, std::string label)
    : width_(width), height_(height), label_(std::move(label)) {}

void Canvas::line(double x1, double y1, double x2, double y2, const Style& style) {
  body_ += fmt::format(R"(<line x1="{}" y1="{}" x2="{}" y2="{}"{}/>)", coord(x1), coord(y1),
                       coord(x2), coord(y2), style_attributes(style));
}

void Canvas::polyline(const std::vector<Point>& points, const Style& style) {
  if (points.size() < 2) return;
  std::string list;
  for (const Point& p : points) list += (list.empty() ? "" : " ") + coord(p.x) + "," + coord(p.y);
  body_ += fmt::format(R"(<polyline points="{}"{}/>)", list, style_attributes(style));
}

void Canvas::circle(double cx, double cy, double r, const Style& style, std::string_view title) {
  body_ +=
      element("circle",
              fmt::format(R"( cx="{}" cy="{}" r="{}"{})", coord(cx), coord(cy),
                          r < 1 ? fmt::format("{:.2g}", r) : coord(r), style_attributes(style)),
              title);
}

void Canvas::rect(double x, double y, double w, double h, const Style& style,
                  std::string_view title) {
  body_ += element(
      "rect",
      fmt::format(R"( x="{}" y="{}" width="{}" height="{}"{})", coord(x), coord(y),
                  coord(std::max(0.0, w)), coord(std::max(0.0, h)), style_attributes(style)),
      title);
}

void Canvas::cross(double cx, double cy, double r, const Style& style, std::string_view title) {
  const std::string d =
      fmt::format("M{},{}L{},{}M{},{}L{},{}", coord(cx - r), coord(cy - r), coord(cx + r),
                  coord(cy + r), coord(cx - r), coord(cy + r), coord(cx + r), coord(cy - r));
  body_ += element("path", fmt::format(R"( d="{}"{})", d, style_attributes(style)), title);
}

void Canvas::text(double x, double y, std::string_view text, const TextStyle& style) {
  std::string attributes = fmt::format(R"( x="{}" y="{}" font-size="{}" fill="{}")", coord(x),
                                       coord(y), coord(style.size), escape(style.fill));
  if (style.anchor != "start") attributes += fmt::format(R"( text-anchor="{}")", style.anchor);
  if (style.bold) attributes += R"( font-weight="600")";
  if (style.rotate != 0)
    attributes +=
        fmt::format(R"x( transform="rotate({} {} {})")x", coord(style.rotate), coord(x), coord(y));
  body_ += fmt::format("<text{}>{}</text>", attributes, escape(text));
}

void Canvas::error_bar_h(double lo, double hi, double y, double cap, const std::string& stroke) {
  body_ += fmt::format(R"(<path d="M{},{}H{}M{},{}V{}M{},{}V{}" stroke="{}" fill="none"/>)",
                       coord(lo), coord(y), coord(hi), coord(lo), coord(y - cap), coord(y + cap),
                       coord(hi), coord(y - cap), coord(y + cap), escape(stroke));
}

void Canvas::error_bar_v(double x, double lo, double hi, double cap, const std::string& stroke) {
  body_ += fmt::format(R"(<path d="M{},{}V{}M{},{}H{}M{},{}H{}" stroke="{}" fill="none"/>)",
                       coord(x), coord(lo), coord(hi), coord(x - cap), coord(lo), coord(x + cap),
                       coord(x - cap), coord(hi), coord(x + cap), escape(stroke));
}

std::string Canvas::finish() const {
  return fmt::format(
      R"(<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {} {}" width="100%" role="img" )"
      R"(aria-label="{}">{}</svg>)",
      coord(width_), coord(height_), escape(label_), body_);
}

namespace {

std::string axis_title(const Scale& scale, std::string_view title) {
  std::string text(title);
  if (scale.is_log() && text.find("log") == std::string::npos) text += " (log scale)";
  return text;
}

const Style kGrid = Style::stroked("#ececec");
const Style kAxis = Style::stroked("#888");

}  // namespace

void x_axis(Canvas& canvas, const Scale& scale, const Frame& frame, std::string_view title,
            const TickFormat& format) {
  for (const double tick : scale.ticks()) {
    const double x = scale(tick);
    if (x < frame.left - 0.5 || x > frame.right + 0.5) continue;
    canvas.line(x, frame.top, x, frame.bottom, kGrid);
    canvas.line(x, frame.bottom, x, frame.bottom + 4, kAxis);
    canvas.text(x, frame.bottom + 16, format(tick), TextStyle().middle());
  }
  canvas.line(frame.left, frame.bottom, frame.right, frame.bottom, kAxis);
  canvas.text((frame.left + frame.right) / 2, frame.bottom + 34, axis_title(scale, title),
              TextStyle().sized(12).middle().colored("#444"));
}

void y_axis(Canvas& canvas, const Scale& scale, const Frame& frame, std::string_view title,
            const TickFormat& format) {
  for (const double tick : scale.ticks()) {
    const double y = scale(tick);
    if (y < frame.top - 0.5 || y > frame.bottom + 0.5) continue;
    canvas.line(frame.left, y, frame.right, y, kGrid);
    canvas.line(frame.left - 4, y, frame.left, y, kAxis);
    canvas.text(frame.left - 7, y + 4, format(tick), TextStyle().end());
  }
  canvas.line(frame.left, frame.top, frame.left, frame.bottom, kAxis);
  const double x = std::max(12.0, frame.left - 46);
  canvas.text(x, (frame.top + frame.bottom) / 2, axis_title(scale, title),
              TextStyle().sized(12).middle().colored("#444").rotated(-90));
}

namespace {

constexpr double kLegendRow = 18;

/// An estimate: SVG has no text metrics before layout; 11 px system fonts average ~6.2 px a char.
double legend_entry_width(const LegendEntry& entry) {
  return 22 + 6.2 * static_cast<double>(entry.label.size()) + 14;
}

}  // namespace

double legend_height(const std::vector<LegendEntry>& entries, double width) {
  if (entries.empty()) return 0;
  double x = 0, rows = 1;
  for (const LegendEntry& entry : entries) {
    const double w = legend_entry_width(entry);
    if (x > 0 && x + w > width) ++rows, x = 0;
    x += w;
  }
  return rows * kLegendRow;
}

void legend(Canvas& canvas, double x, double y, double width,
            const std::vector<LegendEntry>& entries) {
  double dx = 0, dy = 0;
  for (const LegendEntry& entry : entries) {
    const double w = legend_entry_width(entry);
    if (dx > 0 && dx + w > width) dy += kLegendRow, dx = 0;
    const double cx = x + dx + 8, cy = y + dy + kLegendRow / 2;
    using Mark = LegendEntry::Mark;
    switch (entry.mark) {
      case Mark::Dot:
        canvas.circle(cx, cy, 4.5, Style::filled(entry.color));
        break;
      case Mark::Ring:
        canvas.circle(cx, cy, 5, Style::stroked(entry.color, 2));
        break;
      case Mark::Line:
        canvas.line(cx - 8, cy, cx + 8, cy, Style::stroked(entry.color, entry.stroke_width));
        break;
      case Mark::Cross:
        canvas.cross(cx, cy, 3.5, Style::stroked(entry.color, 1.6));
        break;
      case Mark::Square:
        canvas.rect(cx - 5, cy - 5, 10, 10, Style::filled(entry.color));
        break;
    }
    canvas.text(x + dx + 22, cy + 4, entry.label);
    dx += w;
  }
}

}  // namespace kernelarc::svg
