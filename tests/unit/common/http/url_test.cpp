#include "common/http/url.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;

TEST_CASE("parse_url accepts base URLs and rejects others", "[http]") {
    auto u = http::parse_url("http://127.0.0.1:8001");
    REQUIRE(u);
    CHECK(u->host == "127.0.0.1");
    CHECK(u->port == 8001);
    CHECK(u->str() == "http://127.0.0.1:8001");
    u = http::parse_url("http://[::1]:9000/v1/");
    REQUIRE(u);
    CHECK(u->host == "::1");
    CHECK(u->base_path == "/v1");
    CHECK(u->authority() == "[::1]:9000");
    CHECK(http::parse_url("localhost:80")->port == 80);
    std::string why;
    CHECK(!http::parse_url("https://x", &why));
    CHECK(why.find("https") != std::string::npos);
    CHECK(!http::parse_url("http://x:99999"));
    CHECK(!http::parse_url("http://:80"));
}
