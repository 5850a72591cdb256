#include "app/report_html.h"

#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>

#include "app/report_page_model.h"
#include "app/report_page_text.h"
#include "app/report_sections.h"

namespace kernelarc {

// Named, so that these helpers stay apart from other files' in a unity batch.
namespace report_page {

namespace {

constexpr std::string_view kStyle = R"(
:root{color-scheme:light}
*{box-sizing:border-box}
body{margin:0;background:#f7f7f8;color:#1d1d1f;
font:15px/1.5 system-ui,-apple-system,"Segoe UI",Roboto,"Helvetica Neue",Arial,sans-serif}
main{max-width:1040px;margin:0 auto;padding:24px 20px 64px}
h1{font-size:1.45rem;margin:0 0 .3rem}
h2{font-size:1.15rem;margin:2.2rem 0 .7rem;padding-bottom:.3rem;border-bottom:1px solid #ddd}
h3{font-size:1rem;margin:1.2rem 0 .4rem}
a{color:#2f5f98}
nav{font-size:14px;margin:.4rem 0 0}
nav a{margin-right:.9rem;text-decoration:none}
.summary{margin:.2rem 0;color:#333}
.note{color:#666;font-size:13px;margin:.4rem 0}
.empty{color:#555;font-style:italic}
table{border-collapse:collapse;font-size:14px;background:#fff}
th,td{padding:4px 10px;text-align:left;border-bottom:1px solid #eee;vertical-align:top}
td:last-child{overflow-wrap:anywhere}
thead th{border-bottom:2px solid #ddd}
table.facts th{color:#555;font-weight:500;white-space:nowrap}
td.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.win td{background:#eef7ec}
.status{display:inline-block;padding:0 6px;border-radius:3px;color:#fff;font-size:12px}
svg{display:block;width:100%;height:auto;background:#fff;border:1px solid #e6e6e6;
border-radius:6px;margin:.6rem 0}
svg text{font-family:system-ui,-apple-system,"Segoe UI",Roboto,Arial,sans-serif}
.charts{display:grid;grid-template-columns:repeat(auto-fill,minmax(420px,1fr));gap:14px}
figure{margin:0}
figcaption{font-size:13px;font-weight:600;margin:0 0 4px}
details{margin:.6rem 0}
summary{cursor:pointer;color:#2f5f98}
table.cands{font-size:12.5px;margin-top:.4rem}
pre{background:#fff;border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px;overflow:auto;
font:12.5px/1.45 ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
code{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"Liberation Mono",monospace}
.diff span{display:block;padding:0 4px}
.diff .add{background:#e6ffec;color:#116329}
.diff .del{background:#ffebe9;color:#a40e26}
.diff .ctx{color:#444}
.diff .skip{color:#888;background:#f3f4f6;font-style:italic}
.plus{color:#116329;font-weight:600}
.minus{color:#a40e26;font-weight:600}
footer{margin-top:3rem;color:#888;font-size:12px}
)";

struct Section {
  std::string id, heading, body;
};

std::string page(const Model& m, const std::vector<Section>& sections) {
  std::string out = fmt::format(
      "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
      "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
      // The page is meant to be mailed and archived: it may not load anything, ever.
      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
      "style-src 'unsafe-inline'\">\n"
      "<title>{}</title>\n<style>{}</style>\n</head>\n<body>\n<main>\n<h1>{}</h1>\n{}<nav>",
      escape(m.title), kStyle, escape(m.title), summary_line(m));
  for (const Section& s : sections)
    out += fmt::format("<a href=\"#{}\">{}</a>", s.id, escape(s.heading));
  out += "</nav>\n";
  for (const Section& s : sections)
    out += fmt::format("<section>\n<h2 id=\"{}\">{}</h2>\n{}</section>\n", s.id, escape(s.heading),
                       s.body);
  return out +
         "<footer>Written by kernelarc report: one self-contained page, no scripts, nothing "
         "loaded from the network.</footer>\n</main>\n</body>\n</html>\n";
}

}  // namespace

std::string render(const nlohmann::json& json) {
  const Model m = parse_model(json);
  const AgentColors colors(m.candidates);
  std::vector<Section> sections;
  sections.push_back({"facts", "Facts", facts_section(m)});
  // A bench directory holds its problems' outcomes, not a search: the search's sections would
  // only say that there is nothing to show.
  if (m.kind == "bench") {
    if (m.problems) sections.push_back({"problems", "Problems", problems_section(*m.problems)});
    sections.push_back({"workloads", "Times per workload", workloads_section(m)});
    return page(m, sections);
  }
  sections.push_back({"progress", "Best speedup against candidates", progress_section(m, colors)});
  sections.push_back({"tree", "Search tree", tree_section(m)});
  sections.push_back({"roofline", "Roofline", roofline_section(m, colors)});
  sections.push_back({"workloads", "Times per workload", workloads_section(m)});
  sections.push_back({"conclusions", "Conclusions", list_section(m.conclusions, "None posted.")});
  sections.push_back({"winner", "Winner", winner_section(m)});
  sections.push_back({"diagnosis", "Diagnosis of the winner",
                      list_section(m.diagnosis, "No diagnosis in this report.")});

  return page(m, sections);
}

}  // namespace report_page

std::string render_report_html(const nlohmann::json& model) {
  return report_page::render(model);
}

}  // namespace kernelarc
