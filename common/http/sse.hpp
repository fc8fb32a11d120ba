// Server-sent events in both directions: the framing of an event a server sends, and an
// incremental parser for a body received (bytes go in as they arrive, split anywhere; complete
// events come out as the concatenated `data:` payloads).
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace lanes::common::http {

// "data: <payload>\n\n", and the terminator OpenAI-style streams end with.
std::string sse_event(std::string_view payload);
inline constexpr std::string_view sse_done = "data: [DONE]\n\n";

class sse_parser {
public:
    void feed(std::string_view bytes) { buffer_.append(bytes); }
    // The next complete event's data (lines joined with '\n'), or nullopt until more arrives.
    // Events without a data field (comments, keep-alives) are skipped.
    std::optional<std::string> next();
    // Bytes received but not yet part of a complete event.
    std::size_t pending() const { return buffer_.size() - pos_; }

private:
    std::string buffer_;
    std::size_t pos_ = 0;
};

} // namespace lanes::common::http
