// The SSE parser the router relays streams through: the bytes fed in two pieces split where the
// first byte says must give the same events as fed whole, and nothing is lost or invented.
#include "common/http/sse.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

namespace {

std::vector<std::string> events(std::string_view a, std::string_view b) {
    lanes::common::http::sse_parser p;
    std::vector<std::string> out;
    p.feed(a);
    while (auto e = p.next())
        out.push_back(std::move(*e));
    p.feed(b);
    while (auto e = p.next())
        out.push_back(std::move(*e));
    return out;
}

} // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0)
        return 0;
    const std::string_view text(reinterpret_cast<const char*>(data + 1), size - 1);
    const std::size_t cut = text.empty() ? 0 : data[0] % (text.size() + 1);
    if (events(text, {}) != events(text.substr(0, cut), text.substr(cut)))
        std::abort();
    return 0;
}
