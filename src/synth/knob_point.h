// A point of a knob space: one value per knob, and its canonical text "a=1,b=row" (knobs sorted
// by name, integers in decimal, enum labels bare), which keys caches and result stores.
#pragma once

#include <map>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "synth/knob.h"

namespace kernelarc {

using KnobPoint = std::map<std::string, KnobValue, std::less<>>;

/// "a=1,b=row"; the empty point is "".
std::string format_knob_point(const KnobPoint& point);
/// The inverse of format_knob_point: a value that reads as a decimal integer is an int64,
/// otherwise an identifier label. InputError "knob point \"<text>\": <problem>" on a malformed
/// entry, a duplicate knob, or a name/label that is not an identifier. Does not check a domain
/// (KnobSpace::parse_point does).
KnobPoint parse_knob_point(std::string_view text);

/// An integer as a number, a label as a string.
nlohmann::json knob_value_to_json(const KnobValue& value);
/// {"BM": 128, "LAYOUT": "row"}: integers as numbers, labels as strings (as the store keeps it).
nlohmann::json knob_point_to_json(const KnobPoint& point);
/// The inverse of knob_point_to_json; InputError for a value that is neither an integer nor a
/// string.
KnobPoint knob_point_from_json(const nlohmann::json& json);

}  // namespace kernelarc
