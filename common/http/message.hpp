// HTTP/1.x messages as the server and client pass them around: the request the server read (its
// header kept as one string with the fields as offsets), the Beast response and outgoing request,
// header views and lists, and the duration every timeout is given in.
#pragma once

#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::common::http {

namespace beast_http = boost::beast::http;
// A request this process sends (the client side), as Beast's message.
using outgoing_request = beast_http::request<beast_http::string_body>;
using response = beast_http::response<beast_http::string_body>;
using header_list = std::vector<std::pair<std::string, std::string>>;
using header_view = std::pair<std::string_view, std::string_view>;
using duration = std::chrono::milliseconds;

// The Server field of every answer.
inline constexpr std::string_view server_header = "lanes";

// Sets Retry-After for a wait: whole seconds (RFC 9110 has no fractions), rounded up, at least 1.
inline void set_retry_after(response& res, duration wait) {
    const std::int64_t seconds = std::max<std::int64_t>(1, (wait.count() + 999) / 1000);
    res.set(beast_http::field::retry_after, std::to_string(seconds));
}

// "HTTP/1.1" or "HTTP/1.0" for a Beast version number.
std::string_view version_text(unsigned version);

// The start line and header fields of a message, ending with the blank line: what goes on the
// wire before the body, as one string. Sent with the body as one gathered write, this replaces
// Beast's serializer, which walks a buffer sequence with a piece per field.
std::string serialize_header(const outgoing_request& req);
std::string serialize_header(const response& res);

// A request as the server read it: the start line, the fields and the body. The header's text is
// one string and the fields are offsets into it, so a request costs three allocations at most
// (text, field table, body) where Beast's message takes one per field and looks each name up
// in its table of known fields. Field names compare ASCII case-insensitively.
class request {
public:
    beast_http::verb method() const { return verb_; }
    std::string_view method_string() const { return slice(method_); }
    std::string_view target() const { return slice(target_); }
    unsigned version() const { return version_; } // 10 or 11
    // HTTP/1.1 keeps the connection unless a Connection field says close; HTTP/1.0 only when one
    // says keep-alive.
    bool keep_alive() const;
    // The first field of this name, if any.
    std::optional<std::string_view> find(std::string_view name) const;
    // Every field of this name as one list, their values joined by ", " in order (RFC 9110,
    // 5.3: what a list-valued field such as X-Forwarded-For means when it comes as several).
    std::string joined(std::string_view name) const;
    std::string_view operator[](std::string_view name) const { return find(name).value_or(""); }
    std::string_view operator[](beast_http::field name) const;
    std::size_t field_count() const { return fields_.size(); }
    std::string_view name(std::size_t i) const { return slice(fields_[i].first); }
    std::string_view value(std::size_t i) const { return slice(fields_[i].second); }
    std::string& body() { return body_; }
    const std::string& body() const { return body_; }

    // Building one (the server's parsers; tests): the start line, then each field in order.
    // `text_bytes` is a hint for the header's size.
    void start(beast_http::verb verb, std::string_view method, std::string_view target,
               unsigned version, std::size_t text_bytes = 0);
    // The same for a parser holding the whole header as text: `header` is copied once, and the
    // method, target and the views later given to add() that lie in it are kept as offsets.
    void start_in(std::string_view header, beast_http::verb verb, std::string_view method,
                  std::string_view target, unsigned version);
    void add(std::string_view name, std::string_view value);
    // Drops every field named `name` (any case).
    void remove(std::string_view name);
    // Lets go of buffers grown past `bytes` (a big body), between requests; returns the size of
    // the largest let go (0: none).
    std::size_t release_large(std::size_t bytes);

private:
    struct span {
        std::uint32_t offset = 0;
        std::uint32_t size = 0;
    };
    std::string_view slice(span s) const { return {text_.data() + s.offset, s.size}; }
    span keep(std::string_view s);
    void reset(std::string_view text, const char* source, beast_http::verb verb,
               std::string_view method, std::string_view target, unsigned version);

    std::string text_;
    const char* source_ = nullptr; // start_in's header: views into it map to offsets in text_
    span method_, target_;
    std::vector<std::pair<span, span>> fields_;
    beast_http::verb verb_ = beast_http::verb::unknown;
    unsigned version_ = 11;
    std::string body_;
};

// A response with a JSON body and the usual headers; `keep_alive` copied from the request.
response make_response(const request& req, beast_http::status status, std::string body,
                       std::string_view content_type = "application/json");

} // namespace lanes::common::http
