#include "router/fleet/replica_monitor.hpp"
#include "router/fleet/replica_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace std::chrono_literals;

TEST_CASE("a DNS name gives one replica per host, IPv4 first", "[pool]") {
    namespace ip = boost::asio::ip;
    const auto a = ip::make_address("10.0.0.1"), b = ip::make_address("10.0.0.2");
    const auto a6 = ip::make_address("fd00::1"), b6 = ip::make_address("fd00::2");
    // Dual stack: the IPv6 records of the same pods are left out.
    CHECK(router::one_per_host({a6, a, b6, b}) == std::vector<ip::address>{a, b});
    // IPv6 only: kept. Repeats: once.
    CHECK(router::one_per_host({a6, b6, a6}) == std::vector<ip::address>{a6, b6});
    CHECK(router::one_per_host({}).empty());
}
