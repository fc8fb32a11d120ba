// A body read on demand with this thread's simdjson parser and padded copy, shared by the router's
// readers of request bodies (one reading at a time on a thread: each ends before the next
// begins). simdjson reads up to SIMDJSON_PADDING bytes past its input, so it parses a padded copy
// of the body; what a reader keeps must be views of the body itself or copies, never views of that
// copy. When a reading ends, a copy or parser grown past kept_read_buffer_bytes is given back, so
// an I/O thread does not keep the largest body it ever saw.
#pragma once

#include <simdjson.h>

#include <cstddef>
#include <string_view>

namespace lanes::router {

class body_reading {
public:
    explicit body_reading(std::string_view body);
    ~body_reading();
    body_reading(const body_reading&) = delete;
    body_reading& operator=(const body_reading&) = delete;

    // The document over the padded copy (once per reading).
    simdjson::simdjson_result<simdjson::ondemand::document> iterate();
    // The padded copy's text, the body's bytes first.
    std::string_view padded() const;
    // What this thread's copy and parser hold between readings, bytes.
    static std::size_t kept_bytes();

private:
    std::string_view body_;
};

} // namespace lanes::router
