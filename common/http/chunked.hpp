// HTTP/1.1 chunked framing: scanned without decoding, so a relay can forward whole chunks exactly
// as they arrived (size line, data, CRLF) instead of decoding the body and encoding it again; or
// decoded, for a client that wants the body itself.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>

namespace lanes::common::http {

struct chunk_scan {
    std::size_t complete = 0; // bytes at the front that are whole data chunks
    bool last = false;        // the last chunk (size 0) and the trailer section end in the input
    std::size_t consumed = 0; // `complete`, plus the last chunk and trailers when `last`
    bool error = false;       // not chunked framing (or a size or line over the limits)
};

// The longest size line (with any chunk extensions) or trailer line accepted, bytes.
inline constexpr std::size_t chunk_line_limit = 4096;
// The longest trailer section scan_chunks accepts, bytes (its trailers are never relayed, and
// each call scans the section from its start: a longer one would cost time quadratic in it).
inline constexpr std::size_t chunk_trailer_limit = 16384;

// Scans `data`, which starts at a chunk boundary. A chunk cut off by the end of `data` is left
// for a later call with more bytes. Size lines and trailer lines longer than `max_line`, and a
// trailer section longer than chunk_trailer_limit, are errors.
chunk_scan scan_chunks(std::string_view data, std::size_t max_line = chunk_line_limit);

// Decodes a chunked body as its bytes arrive: the chunks' data out, the framing (size lines,
// CRLFs, the last chunk and trailers) dropped.
class chunk_decoder {
public:
    // Takes what it can from `in` and appends the data it holds to `out`; returns the bytes
    // taken (a size line, trailer line or CRLF cut off by the end of `in` is left for the next
    // call). Sets `error` on broken framing or a line over `max_line`.
    std::size_t decode(std::string_view in, std::string& out, bool& error,
                       std::size_t max_line = chunk_line_limit);
    // The last chunk and the trailer section have been read.
    bool done() const { return state_ == state::done; }

private:
    enum class state { size_line, data, data_end, trailers, done };
    state state_ = state::size_line;
    std::size_t left_ = 0; // data bytes of the current chunk still to come
};

} // namespace lanes::common::http
