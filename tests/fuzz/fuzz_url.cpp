// Replica URLs from flags, the config file, the admin API: whatever parse_url takes prints back
// (str()) to a text it takes again as the same URL, holds no byte a URL cannot, and a refusal's
// message is one printable line.
#include "common/http/url.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    std::string why;
    const auto u = lanes::common::http::parse_url(text, &why);
    if (!u) {
        for (const char c : why)
            if (static_cast<unsigned char>(c) < 0x20 || static_cast<unsigned char>(c) >= 0x7f)
                std::abort();
        return 0;
    }
    const std::string printed = u->str();
    for (const char c : printed)
        if (static_cast<unsigned char>(c) <= 0x20 || static_cast<unsigned char>(c) >= 0x7f)
            std::abort();
    const auto again = lanes::common::http::parse_url(printed);
    if (!again || again->host != u->host || again->port != u->port ||
        again->base_path != u->base_path)
        std::abort();
    return 0;
}
