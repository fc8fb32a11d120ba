// Differential: the server's plain-request fast path against Beast's request parser. Whatever the
// fast path takes, Beast must read the same way (method, target, version, fields, body), so the
// two paths never give one request two meanings. A chunked request body (Beast's) is bounded as
// the session bounds it.
#include "common/http/message.hpp"
#include "common/http/parse.hpp"

#include <boost/beast/http.hpp>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

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
    // Beast keeps the fields of one name together (a repeat goes after the last of its name), so
    // the two agree on each name's values in order, not on the order of different names.
    using field_list = std::vector<std::pair<std::string, std::string>>;
    const auto lower = [](std::string_view name) {
        std::string out(name);
        for (auto& c : out)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    field_list from_beast, from_fast;
    for (const auto& f : m)
        from_beast.emplace_back(lower({f.name_string().data(), f.name_string().size()}),
                                std::string(f.value().data(), f.value().size()));
    for (std::size_t i = 0; i < fast.field_count(); ++i)
        from_fast.emplace_back(lower(fast.name(i)), std::string(fast.value(i)));
    const auto by_name = [](const auto& a, const auto& b) { return a.first < b.first; };
    std::stable_sort(from_beast.begin(), from_beast.end(), by_name);
    std::stable_sort(from_fast.begin(), from_fast.end(), by_name);
    if (from_beast != from_fast) {
        for (std::size_t i = 0; i < std::max(from_beast.size(), from_fast.size()); ++i)
            std::fprintf(stderr, "field %zu: Beast [%s: %s], fast path [%s: %s]\n", i,
                         i < from_beast.size() ? from_beast[i].first.c_str() : "",
                         i < from_beast.size() ? from_beast[i].second.c_str() : "",
                         i < from_fast.size() ? from_fast[i].first.c_str() : "",
                         i < from_fast.size() ? from_fast[i].second.c_str() : "");
        std::abort();
    }
    return 0;
}
