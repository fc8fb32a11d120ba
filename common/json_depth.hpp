// How deep a JSON text nests, found without parsing it: brackets and braces are counted outside
// strings (escapes inside strings are honoured), so a body can be refused for its nesting before
// any parser spends time or memory on it. Says nothing of whether the text is valid JSON.
#pragma once

#include <cstddef>
#include <string_view>

namespace lanes::common {

// True when some value in `json` lies more than `max_depth` arrays or objects deep.
bool nests_deeper_than(std::string_view json, std::size_t max_depth);

} // namespace lanes::common
