// `kernelarc report`'s page from a report model: every section in order, one SVG mark per
// candidate, bar and problem, everything escaped, InputError naming a missing field, and a
// sentence instead of a chart where there is nothing to draw.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "app/report_html.h"
#include "app/svg_chart.h"
#include "core/error.h"

namespace kernelarc {
namespace {

using report_json = nlohmann::json;

report_json report_candidate(int seq, int id, const std::string& agent, bool passed,
                             report_json speedup, report_json parent) {
  return {{"seq", seq},
          {"id", id},
          {"agent", agent},
          {"label", fmt::format("rownorm_cuda VEC={}", seq)},
          {"status", passed ? "PASSED" : "COMPILE_ERROR"},
          {"passed", passed},
          {"ms", passed ? report_json(0.0771) : report_json()},
          {"ci", passed ? report_json({0.0765, 0.0779}) : report_json()},
          {"speedup", speedup},
          {"parent", parent},
          {"lineage", false},
          {"winner", false},
          {"gflops", report_json()},
          {"intensity", report_json()}};
}

/// Two agents, four candidates (one failed), a roofline, a workload, a winner with a diff.
report_json report_full_model() {
  report_json candidates = report_json::array();
  candidates.push_back(report_candidate(0, 10, "baseline", true, 1.0, nullptr));
  candidates.push_back(report_candidate(1, 11, "memory", true, 1.2, 10));
  candidates.push_back(report_candidate(2, 12, "memory", false, nullptr, 11));
  candidates.push_back(report_candidate(3, 13, "compute", true, 1.04, 11));
  for (int i : {0, 1, 3}) {
    candidates[i]["gflops"] = 3.6 * (i + 1);
    candidates[i]["intensity"] = 1.0;
  }
  candidates[0]["lineage"] = candidates[1]["lineage"] = candidates[3]["lineage"] = true;
  candidates[3]["winner"] = true;
  return {
      {"title", "kernelarc run 3: rmsnorm_bf16_h4096 on cuda:0"},
      {"kind", "run"},
      {"facts", report_json::array({report_json::array({"problem", "rmsnorm_bf16_h4096"}),
                                    report_json::array({"device", "NVIDIA H200"})})},
      {"candidates", candidates},
      {"roofline",
       {{"peak_gflops", 800000.0}, {"bandwidth_gbs", 4300.0}, {"peak_label", "bf16 tensor cores"}}},
      {"workloads",
       {{{"name", "batch_size=16384"},
         {"bars",
          {{{"label", "eager"}, {"ms", 0.8999}, {"lo", 0.8992}, {"hi", 0.9}},
           {{"label", "torch.compile"}, {"ms", 0.0744}, {"lo", 0.074}, {"hi", 0.0748}},
           {{"label", "kernelarc"}, {"ms", 0.073}, {"lo", nullptr}, {"hi", nullptr}}}}}}},
      {"conclusions", {"in rownorm_cuda changing VEC from 8 to 4 made it faster by 1.15x"}},
      {"winner",
       {{"label", "rownorm_cuda VEC=3"},
        {"parent_label", "rownorm_cuda VEC=1"},
        {"files",
         {{{"path", "main.cu"},
           {"content", "int a;\nint b2;\n"},
           {"diff",
            {{{"op", " "}, {"text", "int a;"}},
             {{"op", "-"}, {"text", "int b1;"}},
             {{"op", "+"}, {"text", "int b2;"}}}}}}}}},
      {"diagnosis", {"memory-bound: 268.4 MB in 73.06 us", "hint: vectorize"}}};
}

std::size_t report_count(const std::string& text, const std::string& needle) {
  std::size_t count = 0;
  for (std::size_t at = text.find(needle); at != std::string::npos;
       at = text.find(needle, at + needle.size()))
    ++count;
  return count;
}

/// From the section's <h2> to the next one's (or the end).
std::string report_section(const std::string& html, const std::string& id) {
  const std::size_t start = html.find("<h2 id=\"" + id + "\"");
  if (start == std::string::npos) return "";
  const std::size_t end = html.find("<h2 ", start + 1);
  return html.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

/// The InputError's message; "" when rendering succeeded.
std::string report_error_of(const report_json& model) {
  try {
    render_report_html(model);
  } catch (const InputError& error) {
    return error.what();
  }
  return "";
}

TEST(ReportHtml, FullModelHasEverySectionInOrderAndLoadsNothing) {
  const std::string html = render_report_html(report_full_model());
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  std::size_t previous = 0;
  for (const char* id : {"facts", "progress", "tree", "roofline", "workloads", "conclusions",
                         "winner", "diagnosis"}) {
    const std::size_t at = html.find(fmt::format("<h2 id=\"{}\"", id));
    ASSERT_NE(at, std::string::npos) << id;
    EXPECT_GT(at, previous) << id;
    previous = at;
  }
  EXPECT_EQ(html.find("<h2 id=\"problems\""), std::string::npos);  // a run has none
  EXPECT_EQ(report_count(html, "<svg"), 4u);  // progress, tree, roofline, one workload
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("<link"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("https:"), std::string::npos);
  EXPECT_NE(report_section(html, "facts").find("<td>NVIDIA H200</td>"), std::string::npos);
  EXPECT_NE(report_section(html, "conclusions").find("<li>in rownorm_cuda changing VEC"),
            std::string::npos);
  EXPECT_EQ(report_count(report_section(html, "diagnosis"), "<li>"), 2u);
}

TEST(ReportHtml, ProgressHasOneMarkPerCandidateWithATooltip) {
  const std::string progress = report_section(render_report_html(report_full_model()), "progress");
  EXPECT_EQ(report_count(progress, "class=\"cand-dot\""), 3u);
  EXPECT_EQ(report_count(progress, "class=\"cand-fail\""), 1u);
  EXPECT_EQ(report_count(progress, "class=\"winner\""), 1u);
  EXPECT_NE(progress.find("<title>id 13 (seq 3, agent compute)\nrownorm_cuda VEC=3\nPASSED, "
                          "0.07710 ms (0.07650\u20130.07790), 1.04x"),
            std::string::npos);
  EXPECT_NE(progress.find("(log scale)"), std::string::npos);
  // The legend names each agent once, in order of first appearance.
  EXPECT_LT(progress.find(">baseline</text>"), progress.find(">memory</text>"));
  EXPECT_LT(progress.find(">memory</text>"), progress.find(">compute</text>"));
}

TEST(ReportHtml, TreeHasOneNodePerCandidateAndTheLineageThick) {
  const std::string tree = report_section(render_report_html(report_full_model()), "tree");
  EXPECT_EQ(report_count(tree, "class=\"tree-node\""), 4u);
  EXPECT_EQ(report_count(tree, "class=\"tree-edge\""), 1u);          // 11 -> 12
  EXPECT_EQ(report_count(tree, "class=\"tree-edge lineage\""), 2u);  // 10 -> 11 -> 13
  EXPECT_NE(tree.find("fill=\"#d62728\" stroke=\"#fff\" stroke-width=\"0.8\" "
                      "class=\"tree-node\"><title>id 12"),
            std::string::npos);  // the failed one is red
  EXPECT_NE(tree.find("All 4 candidates"), std::string::npos);
}

TEST(ReportHtml, HundredsOfTreeNodesFitOnOnePage) {
  report_json model = report_full_model();
  model["candidates"] = report_json::array();
  for (int i = 0; i < 600; ++i)  // a bushy tree: every node's parent is i / 3
    model["candidates"].push_back(report_candidate(i, i, i % 2 ? "a" : "b", i % 5 != 0,
                                                   1.0 + i * 0.001,
                                                   i == 0 ? report_json() : report_json(i / 3)));
  const std::string tree = report_section(render_report_html(model), "tree");
  EXPECT_EQ(report_count(tree, "class=\"tree-node\""), 600u);
  const std::size_t view = tree.find("viewBox=\"0 0 960 ");
  ASSERT_NE(view, std::string::npos);
  EXPECT_LE(std::stod(tree.substr(view + 17)), 1100.0);
}

TEST(ReportHtml, ParentCyclesAndUnknownParentsStillDrawEveryNode) {
  report_json model = report_full_model();
  model["candidates"][0]["parent"] = 13;  // 10 -> 13 -> 11 -> 10
  model["candidates"][2]["parent"] = 99;
  const std::string tree = report_section(render_report_html(model), "tree");
  EXPECT_EQ(report_count(tree, "class=\"tree-node\""), 4u);
  EXPECT_NE(tree.find("parent id 99 is not in this report"), std::string::npos);
}

TEST(ReportHtml, RooflinePlacesCandidatesWithBothValuesUnderTheRoof) {
  const std::string roofline = report_section(render_report_html(report_full_model()), "roofline");
  EXPECT_EQ(report_count(roofline, "class=\"roof-pt\""), 3u);
  EXPECT_EQ(report_count(roofline, "class=\"roof\""), 1u);
  EXPECT_NE(roofline.find("FLOP/byte, log scale"), std::string::npos);
  EXPECT_NE(roofline.find("peak 800 TFLOP/s (bf16 tensor cores)"), std::string::npos);
  EXPECT_NE(roofline.find(">winner</text>"), std::string::npos);
}

TEST(ReportHtml, WorkloadBarsCarryTheirValuesAndErrorBars) {
  const std::string workloads =
      report_section(render_report_html(report_full_model()), "workloads");
  EXPECT_EQ(report_count(workloads, "class=\"wl-bar\""), 3u);
  EXPECT_NE(workloads.find("<figcaption>batch_size=16384</figcaption>"), std::string::npos);
  for (const char* value : {">0.8999 ms<", ">0.07440 ms<", ">0.07300 ms<"})
    EXPECT_NE(workloads.find(value), std::string::npos) << value;
  EXPECT_NE(workloads.find("<title>torch.compile: 0.07440 ms (0.07400\u20130.07480)</title>"),
            std::string::npos);
  // Whiskers for the two bars with an interval, none for the one without.
  EXPECT_EQ(report_count(workloads, "<path d=\"M"), 2u);
}

TEST(ReportHtml, BenchProblemsGetATableAndABarPerSpeedup) {
  report_json model = report_full_model();
  model["kind"] = "bench";
  model["problems"] = {
      {{"name", "softmax_f32_rows"},
       {"status", "won"},
       {"speedup", 1.31},
       {"lo", 1.29},
       {"hi", 1.33},
       {"sol_score", 0.92},
       {"kernelarc", "baseline softmax_f32_rows_basic"}},
      {{"name", "gelu"}, {"status", "lost"}, {"speedup", 0.98}, {"lo", 0.0}, {"hi", 0.0}},
      {{"name", "broken"}, {"status", "failed"}, {"speedup", nullptr}}};
  const std::string html = render_report_html(model);
  // A bench is its problems and their workloads: no search sections.
  EXPECT_LT(html.find("<h2 id=\"problems\""), html.find("<h2 id=\"workloads\""));
  for (const char* search : {"progress", "tree", "roofline", "conclusions", "winner", "diagnosis"})
    EXPECT_EQ(html.find(std::string("<h2 id=\"") + search + "\""), std::string::npos) << search;
  const std::string problems = report_section(html, "problems");
  EXPECT_EQ(report_count(problems, "<tr><td>"), 3u);
  EXPECT_EQ(report_count(problems, "class=\"prob-bar\""), 2u);
  EXPECT_NE(problems.find("1.31x (1.29\u20131.33)"), std::string::npos);
  EXPECT_NE(problems.find(">0.98x<"), std::string::npos);  // 0-0 is no interval
  EXPECT_NE(problems.find(">1.0x</text>"), std::string::npos);
  EXPECT_NE(problems.find(">n/a</text>"), std::string::npos);

  model["kind"] = "run";  // problems are a bench's only
  EXPECT_EQ(render_report_html(model).find("<h2 id=\"problems\""), std::string::npos);
}

TEST(ReportHtml, EscapesEveryTextItShows) {
  const std::string evil = "<script>alert(1)</script>";
  report_json model = report_full_model();
  model["title"] = evil;
  model["facts"].push_back(report_json::array({evil, evil}));
  model["candidates"][1]["label"] = evil;
  model["candidates"][1]["agent"] = evil;
  model["candidates"][2]["status"] = evil;
  model["workloads"][0]["name"] = evil;
  model["workloads"][0]["bars"][0]["label"] = evil;
  model["conclusions"].push_back(evil);
  model["diagnosis"].push_back(evil);
  model["winner"]["label"] = evil;
  model["winner"]["parent_label"] = evil;
  model["winner"]["changes"] = evil;
  model["winner"]["files"][0]["path"] = evil;
  model["winner"]["files"][0]["content"] = "if (a < b && c > d) { s = \"" + evil + "\"; }";
  model["winner"]["files"][0]["diff"][2]["text"] = evil;
  const std::string html = render_report_html(model);
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_GE(report_count(html, "&lt;script&gt;alert(1)&lt;/script&gt;"), 15u);
  EXPECT_NE(html.find("if (a &lt; b &amp;&amp; c &gt; d) { s = &quot;&lt;script&gt;"),
            std::string::npos);
}

TEST(ReportHtml, MissingOrMistypedRequiredFieldsThrowNamingTheField) {
  report_json model = report_full_model();
  model["candidates"][3].erase("agent");
  EXPECT_EQ(report_error_of(model),
            "report model: candidates[3].agent: expected a string, but it is missing");

  model = report_full_model();
  model["candidates"][1]["passed"] = "yes";
  EXPECT_EQ(report_error_of(model),
            "report model: candidates[1].passed: expected a boolean, got a string");

  const std::vector<std::pair<std::string, std::function<void(report_json&)>>> cases = {
      {"title", [](report_json& m) { m.erase("title"); }},
      {"kind", [](report_json& m) { m["kind"] = "both"; }},
      {"facts[1]", [](report_json& m) { m["facts"][1] = {"device"}; }},
      {"candidates", [](report_json& m) { m["candidates"] = nullptr; }},
      {"candidates[0].ci", [](report_json& m) { m["candidates"][0]["ci"] = {1}; }},
      {"candidates[2].parent", [](report_json& m) { m["candidates"][2]["parent"] = "11"; }},
      {"roofline.bandwidth_gbs", [](report_json& m) { m["roofline"].erase("bandwidth_gbs"); }},
      {"workloads[0].bars[1].ms", [](report_json& m) { m["workloads"][0]["bars"][1]["ms"] = "x"; }},
      {"conclusions[0]", [](report_json& m) { m["conclusions"][0] = 3; }},
      {"winner.files[0].diff[1].op",
       [](report_json& m) { m["winner"]["files"][0]["diff"][1]["op"] = "?"; }},
      {"problems[0].name",
       [](report_json& m) {
         m["problems"] = {{{"status", "won"}}};
       }},
  };
  for (const auto& [field, mutate] : cases) {
    model = report_full_model();
    mutate(model);
    EXPECT_NE(report_error_of(model).find("report model: " + field + ": expected"),
              std::string::npos)
        << field << ": " << report_error_of(model);
  }
}

TEST(ReportHtml, OptionalFieldsMayBeAbsentOrNull) {
  const report_json minimal = {{"title", "t"},
                               {"kind", "run"},
                               {"facts", report_json::array()},
                               {"candidates", report_json::array()}};
  const std::string html = render_report_html(minimal);
  for (const char* id :
       {"facts", "progress", "tree", "roofline", "workloads", "conclusions", "winner", "diagnosis"})
    EXPECT_NE(html.find(fmt::format("<h2 id=\"{}\"", id)), std::string::npos) << id;
  EXPECT_EQ(html.find("<svg"), std::string::npos);
  EXPECT_NE(report_section(html, "conclusions").find("None posted."), std::string::npos);

  report_json model = report_full_model();
  for (const char* key : {"roofline", "workloads", "conclusions", "winner", "diagnosis"})
    model[key] = nullptr;
  for (report_json& c : model["candidates"])
    for (const char* key : {"ms", "ci", "speedup", "parent", "lineage", "winner", "gflops"})
      c.erase(key);
  EXPECT_NO_THROW(render_report_html(model));
}

TEST(ReportHtml, NothingToDrawGivesASentenceInsteadOfAChart) {
  report_json model = report_full_model();
  for (report_json& c : model["candidates"]) {
    c["passed"] = false;
    c["status"] = "INCORRECT_NUMERICAL";
    c["speedup"] = nullptr;
  }
  model["roofline"] = nullptr;
  model["winner"] = nullptr;
  model["workloads"] = report_json::array();
  const std::string html = render_report_html(model);
  const std::string progress = report_section(html, "progress");
  EXPECT_EQ(progress.find("<svg"), std::string::npos);
  EXPECT_NE(progress.find("No candidate passed (4 proposed)"), std::string::npos);
  const std::string roofline = report_section(html, "roofline");
  EXPECT_EQ(roofline.find("<svg"), std::string::npos);
  EXPECT_NE(roofline.find("No roofline"), std::string::npos);
  EXPECT_NE(report_section(html, "winner").find("No candidate passed, so there is no winner."),
            std::string::npos);
  EXPECT_EQ(report_section(html, "workloads").find("<svg"), std::string::npos);
  // The tree still shows what was tried: four red nodes.
  EXPECT_EQ(report_count(report_section(html, "tree"), "class=\"tree-node\""), 4u);

  model = report_full_model();  // a roof, but no candidate with both numbers
  for (report_json& c : model["candidates"]) c["intensity"] = nullptr;
  EXPECT_NE(report_section(render_report_html(model), "roofline")
                .find("No candidate has both an achieved GFLOP/s and an arithmetic intensity"),
            std::string::npos);
}

TEST(ReportHtml, WinnerShowsItsCodeAndADiffWithPlusAndMinusLines) {
  report_json model = report_full_model();
  report_json& diff = model["winner"]["files"][0]["diff"];
  for (int i = 0; i < 20; ++i) diff.push_back({{"op", " "}, {"text", fmt::format("line {}", i)}});
  const std::string winner = report_section(render_report_html(model), "winner");
  EXPECT_NE(winner.find("<strong>rownorm_cuda VEC=3</strong>"), std::string::npos);
  EXPECT_NE(winner.find("Parent: rownorm_cuda VEC=1"), std::string::npos);
  EXPECT_EQ(winner.find("Changed from the parent"), std::string::npos);  // none given
  EXPECT_NE(winner.find("<pre class=\"code\"><code>int a;\nint b2;\n</code></pre>"),
            std::string::npos);
  EXPECT_NE(winner.find("<span class=\"del\">-int b1;\n</span>"), std::string::npos);
  EXPECT_NE(winner.find("<span class=\"add\">+int b2;\n</span>"), std::string::npos);
  EXPECT_NE(winner.find("<span class=\"ctx\"> int a;\n</span>"), std::string::npos);
  // Three lines of context after the change; the other 17 fold into one marker.
  EXPECT_NE(winner.find("<span class=\"ctx\"> line 2\n</span>"), std::string::npos);
  EXPECT_EQ(winner.find("line 3\n"), std::string::npos);
  EXPECT_NE(winner.find("17 unchanged lines"), std::string::npos);

  // A template winner's sources equal its parent's: the knobs it changed say what differs.
  model["winner"]["changes"] = "VEC 1->3";
  EXPECT_NE(report_section(render_report_html(model), "winner")
                .find("Changed from the parent: <code>VEC 1-&gt;3</code>"),
            std::string::npos);

  model["winner"]["files"][0]["diff"] = nullptr;  // no parent: the code alone
  const std::string alone = report_section(render_report_html(model), "winner");
  EXPECT_EQ(alone.find("class=\"diff\""), std::string::npos);
  EXPECT_NE(alone.find("<pre class=\"code\"><code>int a;"), std::string::npos);
}

TEST(ReportHtmlSvg, ScalesTicksAndText) {
  const svg::Scale log = svg::Scale::log10(1, 1000, 0, 300);
  EXPECT_DOUBLE_EQ(log(10), 100);
  EXPECT_EQ(log.ticks(), (std::vector<double>{1, 10, 100, 1000}));
  // Less than half a decade still gets at least three labelled ticks.
  EXPECT_GE(svg::Scale::log10(0.9, 1.3, 0, 100).ticks().size(), 3u);
  svg::Scale counts = svg::Scale::linear(-0.5, 2.5, 0, 100);
  counts.set_min_tick_step(1);
  EXPECT_EQ(counts.ticks(), (std::vector<double>{0, 1, 2}));
  EXPECT_EQ(svg::tick_text(800000), "8e5");
  EXPECT_EQ(svg::tick_text(2000), "2000");
  EXPECT_EQ(svg::tick_text(0.5), "0.5");
  EXPECT_EQ(svg::escape("a<b>&\"'\x01"), "a&lt;b&gt;&amp;&quot;&#39;\xEF\xBF\xBD");
  EXPECT_EQ(svg::mix_color("#000000", "#ffffff", 0.5), "#808080");
}

}  // namespace
}  // namespace kernelarc
