// What a request costs against a tokens-per-minute limit: its prompt tokens plus the most output
// it asks for. The output bound is read only when a token limit applies.
#pragma once

#include <cstdint>
#include <string_view>

namespace lanes::router {

// The largest of a JSON body's top-level max_tokens, max_completion_tokens and
// max_output_tokens (each spelling and each repeat counts, so no reading of the body asks for
// less than the engine will give); 0 when there is none or the body is not an object.
std::uint64_t requested_output_tokens(std::string_view body);

} // namespace lanes::router
