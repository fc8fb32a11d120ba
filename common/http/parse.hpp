// HTTP/1.x parsing by hand where Beast's general parser cost more than everything else done with
// the message: the upstream client's response headers (response_head: the status, the fields as
// they came, kept in one string and located by offsets, and what frames the body), and the
// server's plain requests (parse_plain_request: a fast path; anything unusual goes to Beast).
#pragma once

#include "common/http/message.hpp"

#include <boost/system/error_code.hpp>

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common::http {

enum class body_framing {
    none,        // HEAD answers, 1xx, 204 and 304: no body
    length,      // Content-Length bytes
    chunked,     // chunked transfer coding
    until_close, // neither: the body runs until the server closes
};

class response_head {
public:
    int status() const { return status_; }
    unsigned version() const { return version_; } // 10 or 11
    bool keep_alive() const { return keep_alive_; }
    body_framing framing() const { return framing_; }
    std::uint64_t content_length() const { return content_length_; }

    std::size_t field_count() const { return fields_.size(); }
    std::string_view name(std::size_t i) const { return slice(fields_[i].name); }
    std::string_view value(std::size_t i) const { return slice(fields_[i].value); }
    // The first field called `name` (compared without case), or "" when there is none.
    std::string_view field(std::string_view name) const;
    // Whether a Connection field names anything but its own options (close, keep-alive): the
    // fields it names are hop-by-hop.
    bool connection_names_fields() const { return connection_names_fields_; }

    // Parses the header at the front of `data`. Returns the bytes it takes (status line to the
    // blank line) when the whole header is there; 0 when it is not yet (`ec` clear) or when it is
    // malformed or longer than `limit` (`ec` set, as Beast's parser would name it). A response to
    // a HEAD request (`head_request`) has no body whatever its fields say. A line that ends in a
    // bare LF is malformed at once (not waited on for a blank line that would never come).
    // `scanned`, when given, is how much of `data` earlier calls found to hold neither the end of
    // the header nor a bare LF: a header that arrives a byte at a time is scanned once, not once
    // per byte. It is brought up to date; start it at 0 for each answer.
    std::size_t parse(std::string_view data, bool head_request, std::size_t limit,
                      boost::system::error_code& ec, std::size_t* scanned = nullptr);

private:
    struct span {
        std::uint32_t offset = 0, size = 0;
    };
    struct field_spans {
        span name, value;
    };
    // What the fields say about the body's framing and the connection.
    struct framing_fields {
        bool close = false, keep = false;        // Connection options
        bool has_length = false, has_te = false; // Content-Length, Transfer-Encoding present
        bool chunked_last = false;               // chunked is the last transfer coding
        std::uint64_t length = 0;                // the Content-Length
    };
    void decide_framing(const framing_fields& f, bool head_request);
    std::string_view slice(span s) const {
        return std::string_view(bytes_).substr(s.offset, s.size);
    }

    std::string bytes_; // the header as received
    std::vector<field_spans> fields_;
    int status_ = 0;
    unsigned version_ = 11;
    bool keep_alive_ = false;
    bool connection_names_fields_ = false;
    body_framing framing_ = body_framing::none;
    std::uint64_t content_length_ = 0;
};

// A request whose header and whole body are in `data`, with at most a Content-Length to frame the
// body and nothing that needs more care (no Transfer-Encoding, no Expect, no obsolete line
// folding, one Content-Length, a known method, within `header_limit` and `body_limit`): fills
// `out` and returns the bytes it takes. Returns 0, leaving `out` in an unspecified state, for
// anything else, which Beast's parser then reads and judges (errors included).
std::size_t parse_plain_request(std::string_view data, std::size_t header_limit,
                                std::size_t body_limit, request& out);

// Field names and tokens compare ASCII case-insensitively.
bool iequals_ascii(std::string_view a, std::string_view b);
// `s` without the spaces and tabs around it (RFC 9110's optional whitespace).
std::string_view trim_ows(std::string_view s);
// The same, faster, for a field name that passed the tchar check (every parsed one has) and a
// `lower` of lower-case letters, digits and '-' only (a literal name such as "content-length").
bool field_name_is(std::string_view name, std::string_view lower);
// Whether a comma-separated field value (a Connection field's, say) holds `token`.
bool list_has(std::string_view list, std::string_view token);
// Whether a Connection field's value names anything but its own options, close and keep-alive
// (the fields it names are hop-by-hop, RFC 9110, 7.6.1).
bool names_other_fields(std::string_view connection);

} // namespace lanes::common::http
