#include <gtest/gtest.h>

#include <limits>
#include <set>

#include "../core/test_support.h"
#include "synth/constrained_space.h"

namespace kernelarc {
namespace {

using testing::input_error_of;

std::vector<KnobValue> domain(const Knob& knob) {
  std::vector<KnobValue> values;
  for (uint64_t i = 0; i < knob.size(); ++i) values.push_back(knob.value_at(i));
  return values;
}

std::vector<KnobValue> ints(std::initializer_list<int64_t> values) {
  return {values.begin(), values.end()};
}

// a in 1..4, b in 1..5, c bool: 40 points. a*b <= 6 leaves 11 (a, b) pairs; c = 1 further needs
// a + b <= 4, which 6 of them meet: 17 valid points.
KnobSpace small_space() {
  return KnobSpace({Knob::int_range("a", 1, 4), Knob::int_range("b", 1, 5), Knob::boolean("c")},
                   {"a * b <= 6", "c == 0 or a + b <= 4"});
}

KnobPoint point(int64_t a, int64_t b, int64_t c) {
  return {{"a", a}, {"b", b}, {"c", c}};
}

std::set<std::string> all_valid(const ConstrainedSpace& space) {
  std::set<std::string> texts;
  space.for_each_valid([&](const KnobPoint& p) {
    texts.insert(format_knob_point(p));
    return true;
  });
  return texts;
}

TEST(KnobPointJson, RoundTripsIntegersAndLabels) {
  const KnobPoint point = parse_knob_point("BM=128,LAYOUT=row,UNROLL=-2");
  const auto json = knob_point_to_json(point);
  EXPECT_EQ(json.dump(), R"({"BM":128,"LAYOUT":"row","UNROLL":-2})");
  EXPECT_EQ(knob_point_from_json(json), point);
  EXPECT_THROW(knob_point_from_json(nlohmann::json{{"BM", 1.5}}), InputError);
}

TEST(KnobDomain, ValuesOfEachType) {
  EXPECT_EQ(domain(Knob::int_range("k", 1, 10, 3)), ints({1, 4, 7, 10}));
  EXPECT_EQ(domain(Knob::int_range("k", 1, 9, 3)), ints({1, 4, 7}));
  EXPECT_EQ(domain(Knob::pow2("k", 32, 256)), ints({32, 64, 128, 256}));
  EXPECT_EQ(domain(Knob::int_set("k", {8, 2, 4})), ints({2, 4, 8}));
  EXPECT_EQ(domain(Knob::enumeration("k", {"row", "col"})), (std::vector<KnobValue>{"row", "col"}));
  EXPECT_EQ(domain(Knob::boolean("k")), ints({0, 1}));
  EXPECT_EQ(Knob::enumeration("k", {"row", "col"}).expr_value_at(1), 1);
  EXPECT_EQ(Knob::int_range("k", std::numeric_limits<int64_t>::min(),
                            std::numeric_limits<int64_t>::max(), 2)
                .size(),
            uint64_t{1} << 63);
  // 2^64 values would not fit in a uint64_t size.
  EXPECT_THROW(Knob::int_range("k", std::numeric_limits<int64_t>::min(),
                               std::numeric_limits<int64_t>::max()),
               KnobDomainError);
}

TEST(KnobDomain, IndexOfAndDefaults) {
  const Knob pow2 = Knob::pow2("k", 32, 256, 128);
  EXPECT_EQ(pow2.default_index(), 2u);
  EXPECT_EQ(pow2.index_of(KnobValue{int64_t{64}}), 1u);
  EXPECT_FALSE(pow2.index_of(KnobValue{int64_t{48}}));
  EXPECT_FALSE(pow2.index_of(KnobValue{std::string("x")}));
  EXPECT_FALSE(Knob::int_range("k", 1, 10, 3).index_of(KnobValue{int64_t{5}}));
  EXPECT_EQ(Knob::enumeration("k", {"row", "col"}, "col").default_index(), 1u);
  EXPECT_EQ(Knob::boolean("k", true).default_index(), 1u);
  EXPECT_EQ(Knob::int_set("k", {8, 2, 4}).default_index(), 0u);
}

TEST(KnobDomain, FactoryErrorsNameTheField) {
  try {
    Knob::int_range("k", 5, 1);
    FAIL();
  } catch (const KnobDomainError& error) {
    EXPECT_EQ(error.field(), "max");
  }
  EXPECT_THROW(Knob::int_range("k", 1, 5, 0), KnobDomainError);
  EXPECT_THROW(Knob::pow2("k", 3, 8), KnobDomainError);
  EXPECT_THROW(Knob::int_set("k", {1, 1}), KnobDomainError);
  EXPECT_THROW(Knob::enumeration("k", {"a b"}), KnobDomainError);
  EXPECT_THROW(Knob::int_set("k", {1, 2}, 3), KnobDomainError);
}

TEST(KnobPointText, RoundTrip) {
  const KnobPoint p{{"VEC", int64_t{4}}, {"LAYOUT", std::string("row")}, {"NEG", int64_t{-3}}};
  const std::string text = format_knob_point(p);
  EXPECT_EQ(text, "LAYOUT=row,NEG=-3,VEC=4");
  EXPECT_EQ(parse_knob_point(text), p);
  EXPECT_EQ(parse_knob_point(""), KnobPoint{});
  for (const char* bad : {"a", "a=1,", "a=1,a=2", "a=1.5", "1a=2", "a="}) {
    EXPECT_NE(
        input_error_of([&] { parse_knob_point(bad); }).find(std::string("knob point \"") + bad),
        std::string::npos)
        << bad;
  }
}

TEST(KnobPointText, ParsePointChecksTheDomain) {
  const KnobSpace space({Knob::pow2("BLOCK", 32, 256), Knob::enumeration("LAYOUT", {"row", "col"})},
                        {});
  EXPECT_EQ(space.parse_point("BLOCK=64,LAYOUT=col"),
            (KnobPoint{{"BLOCK", int64_t{64}}, {"LAYOUT", std::string("col")}}));
  EXPECT_EQ(input_error_of([&] { space.parse_point("BLOCK=48,LAYOUT=col"); }),
            "knob point \"BLOCK=48,LAYOUT=col\": knob 'BLOCK': expected a power of two in [32, "
            "256], got 48");
  EXPECT_EQ(
      input_error_of([&] { space.parse_point("BLOCK=64,LAYOUT=diag"); }),
      "knob point \"BLOCK=64,LAYOUT=diag\": knob 'LAYOUT': expected one of row, col, got diag");
  EXPECT_NE(input_error_of([&] { space.parse_point("BLOCK=64"); }).find("knob 'LAYOUT': missing"),
            std::string::npos);
  EXPECT_NE(input_error_of([&] {
              space.parse_point("BLOCK=64,LAYOUT=row,X=1");
            }).find("knob 'X': not a knob"),
            std::string::npos);
}

TEST(KnobSpaceSize, ProductAndSaturation) {
  EXPECT_EQ(small_space().product_size(), 40u);
  std::vector<Knob> huge;
  for (const char* name : {"a", "b", "c", "d", "e", "f", "g", "h"})
    huge.push_back(Knob::int_range(name, 0, 1LL << 40));
  EXPECT_EQ(KnobSpace(huge, {}).product_size(), std::numeric_limits<uint64_t>::max());
}

TEST(ConstrainedSpaceEnumeration, FiltersToTheKnownCount) {
  const ConstrainedSpace space(small_space(), {});
  EXPECT_EQ(all_valid(space).size(), 17u);
  EXPECT_TRUE(space.is_valid(point(2, 3, 0)));
  EXPECT_FALSE(space.is_valid(point(2, 3, 1)));
  EXPECT_FALSE(space.is_valid(point(4, 2, 0)));
  EXPECT_FALSE(space.is_valid(point(9, 1, 0)));  // outside a's domain
}

TEST(ConstrainedSpaceEnumeration, OrderIsLexicographicInDeclarationOrder) {
  const ConstrainedSpace space(small_space(), {});
  std::vector<std::string> texts;
  for (const KnobPoint& p : space.first_valid(7)) texts.push_back(format_knob_point(p));
  EXPECT_EQ(texts,
            (std::vector<std::string>{"a=1,b=1,c=0", "a=1,b=1,c=1", "a=1,b=2,c=0", "a=1,b=2,c=1",
                                      "a=1,b=3,c=0", "a=1,b=3,c=1", "a=1,b=4,c=0"}));
  EXPECT_FALSE(space.for_each_valid([](const KnobPoint&) { return false; }));
  EXPECT_TRUE(space.for_each_valid([](const KnobPoint&) { return true; }));
}

TEST(ConstrainedSpaceEnumeration, IsLazyOnAHugeSpace) {
  // 10^12 points; the constraint on `a` prunes 990 subtrees of 10^9 points each at the top.
  const KnobSpace knobs({Knob::int_range("a", 0, 999), Knob::int_range("b", 0, 999),
                         Knob::int_range("c", 0, 999), Knob::int_range("d", 0, 999)},
                        {"a >= 990", "d % 2 == 1", "b + c < M"});
  EXPECT_EQ(knobs.product_size(), 1000000000000u);
  const ConstrainedSpace space(knobs, {{"M", 5}});
  std::vector<std::string> texts;
  for (const KnobPoint& p : space.first_valid(5)) texts.push_back(format_knob_point(p));
  EXPECT_EQ(texts,
            (std::vector<std::string>{"a=990,b=0,c=0,d=1", "a=990,b=0,c=0,d=3", "a=990,b=0,c=0,d=5",
                                      "a=990,b=0,c=0,d=7", "a=990,b=0,c=0,d=9"}));
}

TEST(ConstrainedSpaceEnumeration, AxesDriveConstraints) {
  const KnobSpace knobs({Knob::pow2("BLOCK", 32, 1024)}, {"N % BLOCK == 0", "N >= 64"});
  EXPECT_EQ(all_valid(ConstrainedSpace(knobs, {{"N", 96}})), (std::set<std::string>{"BLOCK=32"}));
  EXPECT_TRUE(all_valid(ConstrainedSpace(knobs, {{"N", 32}})).empty());
  EXPECT_EQ(input_error_of([&] { ConstrainedSpace(knobs, {}); }),
            "constraints[0]: \"N % BLOCK == 0\" names 'N', which is neither a knob nor an axis");
  // A constraint that cannot be evaluated at a point rejects that point.
  const KnobSpace divides({Knob::int_range("D", 0, 2)}, {"8 // D >= 4"});
  EXPECT_EQ(all_valid(ConstrainedSpace(divides, {})), (std::set<std::string>{"D=1", "D=2"}));
}

TEST(ConstrainedSpaceSampling, DeterministicValidAndCovering) {
  const ConstrainedSpace space(small_space(), {});
  Rng first(42), second(42);
  std::set<std::string> seen;
  for (int i = 0; i < 500; ++i) {
    const auto a = space.sample(first);
    const auto b = space.sample(second);
    ASSERT_TRUE(a && b);
    EXPECT_EQ(*a, *b);
    EXPECT_TRUE(space.is_valid(*a));
    seen.insert(format_knob_point(*a));
  }
  EXPECT_EQ(seen, all_valid(space));
}

TEST(ConstrainedSpaceSampling, FallsBackToEnumerationAndReportsEmpty) {
  const KnobSpace knobs({Knob::int_range("a", 1, 4), Knob::int_range("b", 1, 5)},
                        {"a == 4 and b == 5"});
  Rng rng(7);
  EXPECT_EQ(ConstrainedSpace(knobs, {}).sample(rng, 0),
            (KnobPoint{{"a", int64_t{4}}, {"b", int64_t{5}}}));
  EXPECT_FALSE(ConstrainedSpace(knobs, {}).sample(rng, 0, 10));  // too big to enumerate
  const KnobSpace none({Knob::int_range("a", 1, 4)}, {"a > 4"});
  EXPECT_FALSE(ConstrainedSpace(none, {}).sample(rng));
}

TEST(ConstrainedSpaceFailures, SkippedEverywhere) {
  ConstrainedSpace space(small_space(), {});
  space.mark_failed(point(1, 1, 1));
  space.mark_failed(point(2, 1, 0));
  EXPECT_TRUE(space.is_failed(point(1, 1, 1)));
  EXPECT_FALSE(space.is_valid(point(1, 1, 1)));
  EXPECT_TRUE(space.satisfies(point(1, 1, 1)));
  const std::set<std::string> valid = all_valid(space);
  EXPECT_EQ(valid.size(), 15u);
  EXPECT_FALSE(valid.contains("a=1,b=1,c=1"));
  Rng rng(3);
  for (int i = 0; i < 300; ++i) EXPECT_FALSE(space.is_failed(*space.sample(rng)));
  const auto near = space.neighbours(point(1, 1, 0));
  for (const KnobPoint& p : near) EXPECT_FALSE(space.is_failed(p));
  EXPECT_EQ(near, (std::vector<KnobPoint>{point(1, 2, 0)}));
}

TEST(ConstrainedSpaceNeighbours, ExactSets) {
  const ConstrainedSpace space(small_space(), {});
  // a=3 makes a*b = 9, b=4 makes 8, c=1 makes a+b = 5: all rejected.
  EXPECT_EQ(space.neighbours(point(2, 3, 0)),
            (std::vector<KnobPoint>{point(1, 3, 0), point(2, 2, 0)}));
  EXPECT_EQ(space.neighbours(point(2, 2, 0)),
            (std::vector<KnobPoint>{point(1, 2, 0), point(3, 2, 0), point(2, 1, 0), point(2, 3, 0),
                                    point(2, 2, 1)}));
  const ConstrainedSpace enums(
      KnobSpace({Knob::enumeration("L", {"p", "q", "r", "s"}), Knob::pow2("B", 32, 128)},
                {"L != 2 or B == 32"}),
      {});
  const KnobPoint start{{"L", std::string("q")}, {"B", int64_t{64}}};
  EXPECT_EQ(enums.neighbours(start),
            (std::vector<KnobPoint>{{{"L", std::string("p")}, {"B", int64_t{64}}},
                                    {{"L", std::string("s")}, {"B", int64_t{64}}},
                                    {{"L", std::string("q")}, {"B", int64_t{32}}},
                                    {{"L", std::string("q")}, {"B", int64_t{128}}}}));
}

TEST(ConstrainedSpaceMutation, DeterministicValidAndDifferent) {
  const ConstrainedSpace space(small_space(), {});
  Rng first(11), second(11);
  KnobPoint current = point(1, 1, 0);
  for (int i = 0; i < 200; ++i) {
    const auto next = space.mutate(current, first);
    ASSERT_TRUE(next);
    EXPECT_EQ(next, space.mutate(current, second));
    EXPECT_TRUE(space.is_valid(*next));
    EXPECT_NE(*next, current);
    current = *next;
  }
  const ConstrainedSpace single(KnobSpace({Knob::int_set("a", {1, 2})}, {"a == 1"}), {});
  Rng rng(1);
  EXPECT_FALSE(single.mutate({{"a", int64_t{1}}}, rng));
}

TEST(KnobSpec, LoadsTheFixture) {
  const auto path = testing::fixture("synth/reduce_knobs.json");
  const KnobSpace space = load_knob_space(path, std::set<std::string>{"N"});
  ASSERT_EQ(space.knobs().size(), 5u);
  EXPECT_EQ(space.knobs()[0].name(), "BLOCK_THREADS");
  EXPECT_EQ(space.knobs()[2].type(), KnobType::IntRange);
  EXPECT_EQ(space.product_size(), 6u * 3 * 8 * 2 * 2);
  EXPECT_EQ(format_knob_point(space.default_point()),
            "BLOCK_THREADS=256,LAYOUT=col,TILE_K=8,UNROLL=1,VEC=4");
  const ConstrainedSpace bound(space, {{"N", 128}});
  // BLOCK_THREADS * VEC must divide 128: (32,1) (32,2) (32,4) (64,1) (64,2) (128,1), times 8 * 2
  // * 2.
  EXPECT_EQ(all_valid(bound).size(), 6u * 32);
}

TEST(KnobSpec, MalformedFilesNameTheFileAndField) {
  testing::TempDir dir;
  const auto error_of = [&](const std::string& text,
                            std::optional<std::set<std::string>> axes = std::nullopt) {
    const auto path = dir.write("knobs.json", text);
    return input_error_of([&] { load_knob_space(path, axes); });
  };
  const std::string where = (dir / "knobs.json").string() + ": ";
  EXPECT_EQ(
      error_of(R"({"knobs": {"B": {"type": "float"}}})"),
      where + "knobs.B.type: expected one of int_range, pow2, int_set, enum, bool, got \"float\"");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "int_range", "min": 8, "max": 4}}})"),
            where + "knobs.B.max: expected max >= min (8), got 4");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "pow2", "min": 32, "max": 256, "default": 48}}})"),
            where + "knobs.B.default: expected a power of two in [32, 256], got 48");
  EXPECT_EQ(
      error_of(
          R"({"knobs": {"B": {"type": "pow2", "min": 32, "max": 256}}, "constraints": ["B <= M"]})",
          std::set<std::string>{"N"}),
      where + "constraints[0]: \"B <= M\" names 'M', which is neither a knob nor a problem axis");
  EXPECT_EQ(error_of(R"({"knobs": {"L": {"type": "enum", "values": ["row", "row"]}}})"),
            where + "knobs.L.values[1]: duplicate label \"row\"");
  EXPECT_EQ(error_of(R"({"knobs": {"L": {"type": "enum", "values": ["row"], "default": 3}}})"),
            where + "knobs.L.default: expected string, got integer 3");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"type": "int_set", "values": [1, "2"]}}})"),
            where + "knobs.B.values[1]: expected integer, got string \"2\"");
  EXPECT_EQ(error_of(R"({"knobs": {"B": {"min": 1}}})"),
            where + "knobs.B.type: missing required field");
  EXPECT_EQ(error_of(R"({"knobs": {"N": {"type": "bool"}}})", std::set<std::string>{"N"}),
            where + "knobs.N: a knob cannot be named like the problem axis 'N'");
  EXPECT_EQ(
      error_of(R"({"knobs": {"B": {"type": "bool", "step": 2}}})"),
      where +
          "knobs.B.step: unknown field (expected one of type, default, roles, trades_accuracy)");
  EXPECT_NE(error_of(R"({"knobs": {}, "constraints": ["1 +"]})").find(where + "constraints[0]: "),
            std::string::npos);
  EXPECT_NE(error_of(R"({"knobs": )").find(where + "invalid JSON"), std::string::npos);
}

}  // namespace
}  // namespace kernelarc
