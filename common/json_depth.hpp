// How deep a JSON text nests, found without parsing it: brackets and braces are counted outside
// strings (escapes inside strings are honoured), so a body can be refused for its nesting before
// any parser spends time or memory on it. Says nothing of whether the text is valid JSON.
#pragma once

#include <cstddef>
#include <string_view>

namespace lanes::common {

// True when some value in `json` lies more than `max_depth` arrays or objects deep.
bool nests_deeper_than(std::string_view json, std::size_t max_depth);

// What a DOM parser would build from `json`, bounded before it builds it: the deepest nesting,
// and the values it would hold (arrays, objects and their elements; each one costs a DOM node).
// Counting stops at the first bound passed (then `within` is false).
struct json_shape {
    bool within = true;
    std::size_t depth = 0;  // the deepest nesting seen
    std::size_t values = 0; // arrays + objects + their elements (an upper bound)
};
json_shape measure_json(std::string_view json, std::size_t max_depth, std::size_t max_values);

} // namespace lanes::common
