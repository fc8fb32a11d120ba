// The Prometheus text parser the router reads replicas' /metrics with: any bytes, no crash, no
// undefined behaviour, bounded memory (run with -rss_limit_mb).
#include "common/metrics/prom_parser.hpp"

#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const auto r =
        lanes::common::prom::parse(std::string_view(reinterpret_cast<const char*>(data), size));
    (void)r.ok();
    return 0;
}
