// The session's slow path for requests (private to common/http, as session.cpp): Beast's parser
// for what parse_plain_request leaves, with the framing checks Beast does not make.
#include "common/http/session.hpp"

#include "common/http/field_syntax.hpp"
#include "common/log.hpp"

#include <boost/asio.hpp>
#include <boost/asio/as_tuple.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <array>
#include <stdexcept>

namespace lanes::common::http {

namespace asio = boost::asio;
namespace beast = boost::beast;

namespace {

// The longest method taken (the registered ones have at most 17 bytes): a request line whose
// first this many bytes hold no space starts with no method.
constexpr std::size_t max_method_bytes = 32;

// Obsolete line folding (a field line that starts with a space or tab) in a header's raw bytes.
bool has_obs_fold(std::string_view header) {
    for (auto at = header.find("\r\n"); at != std::string_view::npos && at + 2 < header.size();
         at = header.find("\r\n", at + 2))
        if (header[at + 2] == ' ' || header[at + 2] == '\t')
            return true;
    return false;
}

// What makes a parsed header's framing or Host ambiguous (RFC 9112, 3.2 and 6.1-6.3); "" when
// nothing does. `chunked`: Beast's reading that chunked is the last transfer coding.
std::string framing_problem(const beast_http::request_header<>& h, bool chunked) {
    const bool te = h.count(beast_http::field::transfer_encoding) > 0;
    if (te && h.version() < 11)
        return "Transfer-Encoding in an HTTP/1.0 request";
    if (te && !chunked)
        return "Transfer-Encoding must end with chunked";
    if (te && h.count(beast_http::field::content_length) > 0)
        return "both Transfer-Encoding and Content-Length";
    const std::string_view target(h.target().data(), h.target().size());
    const bool origin_form = target.starts_with('/');
    const bool absolute_form = target.starts_with("http://") || target.starts_with("https://");
    const bool asterisk_form = target == "*" && h.method() == beast_http::verb::options;
    if (!origin_form && !absolute_form && !asterisk_form)
        return "the request target is neither a path nor an absolute URL";
    const auto hosts = h.count(beast_http::field::host);
    if (hosts > 1)
        return "more than one Host field";
    if (hosts == 0 && h.version() >= 11)
        return "no Host field";
    return {};
}

} // namespace

// Beast's parser for everything parse_plain_request leaves: a request still arriving, chunked,
// with Expect, over a limit, or malformed. Stricter than Beast alone (RFC 9112, as HAProxy is):
// obsolete line folding, a Transfer-Encoding that does not end in chunked, one next to a
// Content-Length or in an HTTP/1.0 request, and a missing or repeated Host are refused; the
// body limit counts the bytes on the wire (chunk framing included); chunk extensions and the
// bytes buffered at once are bounded; trailers are read and dropped, never taken as fields. A
// coroutine of its own, so that the parser's space is not part of every request's frame.
asio::awaitable<bool> session::read_with_parser() {
    const auto& cfg = ctx_->cfg;
    io_.tcp().expires_after(cfg.header_read_timeout);
    const header_read got = co_await read_header_bytes();
    if (got == header_read::too_large) {
        co_await refuse(431, "request header fields too large");
        co_return false;
    }
    if (got == header_read::bare_lf) {
        co_await refuse(400, "malformed HTTP request: a line ends in LF without CR");
        co_return false;
    }
    if (got == header_read::bad_method) {
        co_await refuse(400, "malformed HTTP request: the request line does not start with a "
                             "method (TLS to a plain HTTP port?)");
        co_return false;
    }
    if (got != header_read::complete)
        co_return false; // timed out or closed before the header was all there
    const std::string_view raw(static_cast<const char*>(buffer_.data().data()), header_bytes_);
    if (has_obs_fold(raw)) {
        co_await refuse(400, "malformed HTTP request: obsolete line folding");
        co_return false;
    }
    beast_http::request_parser<beast_http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.header_limit));
    parser.body_limit(cfg.body_limit);
    parser.eager(true);
    bool long_extension = false;
    auto on_chunk = [&long_extension, limit = cfg.chunk_extension_limit](
                        std::uint64_t, std::string_view extensions, boost::system::error_code& ec) {
        if (extensions.size() > limit) {
            long_extension = true;
            ec = beast_http::error::bad_chunk_extension;
        }
    };
    parser.on_chunk_header(on_chunk);
    // Beast throws (std::length_error) for a field over 65535 bytes, which a trailer can be:
    // that is a malformed request like any other, not the end of the session.
    const auto put = [&parser](asio::const_buffer bytes, boost::system::error_code& ec) {
        try {
            return parser.put(bytes, ec);
        } catch (const std::length_error&) {
            ec = beast_http::error::header_limit;
            return std::size_t{0};
        }
    };
    boost::system::error_code hec;
    const std::size_t used = put(asio::buffer(raw.data(), raw.size()), hec);
    if (!hec && (used != raw.size() || !parser.is_header_done()))
        hec = beast_http::error::bad_version;   // (the header is all there: Beast takes it whole)
    if (hec == beast_http::error::body_limit) { // a Content-Length over the limit
        co_await refuse(413,
                        "request body larger than " + std::to_string(cfg.body_limit) + " bytes");
        co_return false;
    }
    if (hec) {
        co_await refuse(400, "malformed HTTP request: " + hec.message());
        co_return false;
    }
    buffer_.consume(used);
    const auto& msg = parser.get();
    version_ = msg.version();
    if (const auto problem = framing_problem(msg, parser.chunked()); !problem.empty()) {
        co_await refuse(400, "malformed HTTP request: " + problem);
        co_return false;
    }
    // The header's fields, taken now: fields that come later (trailers) are never merged in.
    const auto sv = [](auto s) { return std::string_view(s.data(), s.size()); };
    req_.start(msg.method(), sv(msg.method_string()), sv(msg.target()), msg.version(), 256);
    for (const auto& f : msg)
        req_.add(sv(f.name_string()), sv(f.value()));
    // A body still to come: the user's screen may refuse the request on its header alone (a
    // missing key, a client over its rate), before the body is read or 100 Continue invites it.
    if (ctx_->screen && !parser.is_done()) {
        if (auto refusal = ctx_->screen(req_, remote_.address())) {
            co_await refuse_with(std::move(*refusal));
            co_return false;
        }
    }
    if (version_ >= 11 && beast::iequals(msg[beast_http::field::expect], "100-continue") &&
        !parser.is_done()) {
        static constexpr std::string_view cont = "HTTP/1.1 100 Continue\r\n\r\n";
        const std::array<asio::const_buffer, 1> wire{asio::buffer(cont)};
        auto [cec, cn] = co_await io_.write(wire, cfg.write_timeout);
        if (cec)
            co_return false;
    }
    io_.tcp().expires_after(cfg.body_read_timeout);
    std::size_t wire = 0; // body bytes read, framing included
    while (!parser.is_done()) {
        boost::system::error_code bec;
        if (buffer_.size() > 0) {
            const std::size_t n = put(buffer_.data(), bec);
            buffer_.consume(n);
            wire += n;
            if (bec == beast_http::error::need_more)
                bec = {};
        }
        if (!bec && wire > cfg.body_limit)
            bec = beast_http::error::body_limit;
        if (bec == beast_http::error::body_limit) {
            co_await refuse(413, "request body larger than " + std::to_string(cfg.body_limit) +
                                     " bytes");
            co_return false;
        }
        if (bec) {
            // Worded before the co_await: GCC 12 destroys the temporaries of a ?: inside a
            // co_await expression twice.
            const std::string why = long_extension
                                        ? "chunk extensions longer than " +
                                              std::to_string(cfg.chunk_extension_limit) + " bytes"
                                        : "malformed HTTP request body: " + bec.message();
            co_await refuse(400, why);
            co_return false;
        }
        if (parser.is_done())
            break;
        if (buffer_.size() >= buffer_.max_size()) { // a chunk line or trailers past the bound
            co_await refuse(400, "chunk header or trailer section longer than " +
                                     std::to_string(buffer_.max_size()) + " bytes");
            co_return false;
        }
        const std::size_t room = std::min<std::size_t>(buffer_.max_size() - buffer_.size(), 65536);
        auto [ec, n] = co_await io_.read_some(buffer_.prepare(room));
        if (ec) {
            LANES_LOG(debug, "http", "body from " << remote_ << " not read: " << ec.message());
            co_return false; // timed out, or the client went away mid-body
        }
        buffer_.commit(n);
    }
    req_.body() = std::move(parser.get().body());
    co_return true;
}

// Reads until buffer_ holds the whole header (its end found within the header limit), leading
// empty lines dropped; header_bytes_ is then its length.
asio::awaitable<session::header_read> session::read_header_bytes() {
    const std::size_t limit = ctx_->cfg.header_limit;
    std::size_t searched = 0;
    std::size_t checked = 0; // bytes looked at for a bare LF
    for (;;) {
        std::string_view data(static_cast<const char*>(buffer_.data().data()), buffer_.size());
        std::size_t skip = 0; // empty lines before the request line (RFC 9112, 2.2)
        while (data.substr(skip).starts_with("\r\n"))
            skip += 2;
        if (skip > 0) {
            buffer_.consume(skip);
            data.remove_prefix(skip);
            searched = checked = 0;
        }
        // The method is known bad as soon as its bytes are (a TLS ClientHello starts with 0x16):
        // refused at once, not after the header's timeout or limit.
        const auto sp = data.find(' ');
        const std::string_view method = data.substr(0, sp);
        if (sp == 0 || !syntax::all_tchar(method) || method.size() > max_method_bytes)
            co_return header_read::bad_method;
        const auto end = data.find("\r\n\r\n", searched);
        // A bare LF ends no line here (RFC 9112 lets a server refuse it): a peer that took it
        // for one would read a different header from the same bytes.
        const std::size_t scanned = end == std::string_view::npos ? data.size() : end + 4;
        for (auto lf = data.find('\n', checked); lf < scanned; lf = data.find('\n', lf + 1))
            if (lf == 0 || data[lf - 1] != '\r')
                co_return header_read::bare_lf;
        checked = scanned;
        if (end != std::string_view::npos) {
            header_bytes_ = end + 4;
            co_return header_bytes_ > limit ? header_read::too_large : header_read::complete;
        }
        if (data.size() > limit)
            co_return header_read::too_large;
        searched = data.size() > 3 ? data.size() - 3 : 0;
        const std::size_t room = std::min<std::size_t>(limit + 4 - data.size(), 16384);
        auto [ec, n] = co_await io_.read_some(buffer_.prepare(room));
        if (ec) {
            LANES_LOG(debug, "http", "header from " << remote_ << " not read: " << ec.message());
            co_return header_read::closed;
        }
        buffer_.commit(n);
    }
}

} // namespace lanes::common::http
