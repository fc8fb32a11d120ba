// Differential: the server's plain-request fast path against Beast's request parser. Whatever the
// fast path takes, Beast must read the same way (method, target, version, fields, body), so the
// two paths never give one request two meanings. A chunked request body (Beast's) is bounded as
// the session bounds it.
#include "common/http/message.hpp"
#include "common/http/parse.hpp"

#include <boost/beast/http.hpp>

#include <cstdint>
#include <cstdlib>
#include <string_view>

namespace http = boost::beast::http;

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    lanes::common::http::request fast;
    const std::size_t used = lanes::common::http::parse_plain_request(text, 16384, 1 << 20, fast);
    if (used == 0)
        return 0;
    if (used > size)
        std::abort();
    http::request_parser<http::string_body> beast;
    beast.header_limit(16384);
    beast.body_limit(1 << 20);
    beast.eager(true);
    boost::system::error_code ec;
    const std::size_t taken = beast.put(boost::asio::buffer(data, used), ec);
    // Beast may need an end of input to finish a body-less message; it must not refuse it.
    if (ec && ec != http::error::need_more)
        std::abort();
    if (!beast.is_header_done() || taken != used || !beast.is_done())
        std::abort();
    const auto& m = beast.get();
    if (m.method() != fast.method() || m.version() != fast.version() ||
        std::string_view(m.target().data(), m.target().size()) != fast.target() ||
        m.body() != fast.body())
        std::abort();
    std::size_t fields = 0;
    for (const auto& f : m) {
        if (fields >= fast.field_count() ||
            !boost::beast::iequals(f.name_string(), fast.name(fields)) ||
            std::string_view(f.value().data(), f.value().size()) != fast.value(fields))
            std::abort();
        ++fields;
    }
    if (fields != fast.field_count())
        std::abort();
    return 0;
}
