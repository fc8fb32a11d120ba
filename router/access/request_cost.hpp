// What the router's access control reads of a body beyond what it routes on, and only when a
// control needs it: the output a request asks for (its cost against a tokens-per-minute limit is
// its prompt tokens plus that), and its priority in the admission queue.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

namespace lanes::router {

// The largest of a JSON body's top-level max_tokens, max_completion_tokens and
// max_output_tokens (each spelling and each repeat counts, so no reading of the body asks for
// less than the engine will give); 0 when there is none or the body is not an object.
std::uint64_t requested_output_tokens(std::string_view body);

// A body's top-level integer `priority` (vLLM's: lower values first); nullopt when absent or not
// an integer. Repeated, the last one counts, as the engine reads it.
std::optional<std::int64_t> requested_priority(std::string_view body);

} // namespace lanes::router
