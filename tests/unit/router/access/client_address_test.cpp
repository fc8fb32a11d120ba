// Whose address a request counts as: the peer, or behind trusted proxies the first untrusted hop
// of X-Forwarded-For read from the right.
#include "router/access/client_address.hpp"

#include <catch2/catch.hpp>

using lanes::router::trusted_proxies;
namespace ip = boost::asio::ip;

TEST_CASE("trusted proxies: addresses and networks, v4 and v6, bad entries named", "[access]") {
    trusted_proxies t;
    std::string why;
    REQUIRE(t.parse("10.0.0.0/8, 192.168.1.7 ,::1/128,fd00::/8", why));
    CHECK(t.contains(ip::make_address("10.200.3.4")));
    CHECK_FALSE(t.contains(ip::make_address("11.0.0.1")));
    CHECK(t.contains(ip::make_address("192.168.1.7")));
    CHECK_FALSE(t.contains(ip::make_address("192.168.1.8")));
    CHECK(t.contains(ip::make_address("::1")));
    CHECK(t.contains(ip::make_address("fd12::3")));
    CHECK(t.contains(ip::make_address("::ffff:10.1.1.1"))); // v4-mapped, as dual-stack reports
    CHECK_FALSE(t.parse("10.0.0.0/33", why));
    CHECK(why.find("prefix") != std::string::npos);
    CHECK_FALSE(t.parse("not-an-address", why));
    CHECK(why.find("not-an-address") != std::string::npos);
    CHECK(t.parse("", why));
    CHECK(t.empty());
}

TEST_CASE("client address: X-Forwarded-For only from a trusted peer, read from the right",
          "[access]") {
    trusted_proxies t;
    std::string why;
    REQUIRE(t.parse("10.0.0.0/8", why));
    const auto proxy = ip::make_address("10.0.0.5");
    const auto stranger = ip::make_address("203.0.113.9");
    // From an untrusted peer the header is ignored (anyone can write it).
    CHECK(t.client_address(stranger, "1.2.3.4") == "203.0.113.9");
    CHECK(t.client_address(proxy, "") == "10.0.0.5");
    CHECK(t.client_address(proxy, "198.51.100.1") == "198.51.100.1");
    // A client that forges a first hop does not get to choose: the rightmost untrusted one wins.
    CHECK(t.client_address(proxy, "6.6.6.6, 198.51.100.1, 10.0.0.9") == "198.51.100.1");
    CHECK(t.client_address(proxy, "10.0.0.1,10.0.0.2") == "10.0.0.1");
    CHECK(t.client_address(proxy, "garbage, 198.51.100.2") == "198.51.100.2");
    CHECK(t.client_address(proxy, "198.51.100.2, garbage") == "10.0.0.5");
    trusted_proxies none;
    CHECK(none.client_address(proxy, "198.51.100.1") == "10.0.0.5");
}

TEST_CASE("client address: written as Asio writes it, v4 edge octets, v4-mapped and v6",
          "[access]") {
    trusted_proxies none;
    for (const char* a : {"0.0.0.0", "255.255.255.255", "1.10.100.200", "127.0.0.1", "9.99.0.255"})
        CHECK(none.client_address(ip::make_address(a), "") == a);
    CHECK(none.client_address(ip::make_address("::ffff:192.0.2.33"), "") == "192.0.2.33");
    none.set_ipv6_prefix(128);
    for (const char* a : {"::1", "2001:db8::7", "fe80::1:2"})
        CHECK(none.client_address(ip::make_address(a), "") == ip::make_address(a).to_string());
}

TEST_CASE("client address: an IPv6 client is its /64, or the prefix configured", "[access]") {
    trusted_proxies t;
    std::string why;
    REQUIRE(t.parse("127.0.0.1/32", why));
    const auto lb = ip::make_address("127.0.0.1");
    // Rotating within one /64 (directly or behind a trusted proxy) is one client.
    CHECK(t.client_address(ip::make_address("2001:db8:1:2::1"), "") == "2001:db8:1:2::/64");
    CHECK(t.client_address(ip::make_address("2001:db8:1:2:ffff:1:2:3"), "") == "2001:db8:1:2::/64");
    CHECK(t.client_address(lb, "2001:db8:1:2::99") == "2001:db8:1:2::/64");
    CHECK(t.client_address(lb, "2001:db8:1:3::99") == "2001:db8:1:3::/64");
    CHECK(t.client_address(lb, "198.51.100.7") == "198.51.100.7"); // IPv4 as it is
    t.set_ipv6_prefix(48);
    CHECK(t.client_address(lb, "2001:db8:1:3::99") == "2001:db8:1::/48");
    t.set_ipv6_prefix(56);
    CHECK(t.client_address(lb, "2001:db8:1:3ff::1") == "2001:db8:1:300::/56");
}
