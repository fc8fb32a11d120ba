#include "common/http/url.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>
#include <vector>

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
    CHECK(!http::parse_url("localhost:80")->tls);
    u = http::parse_url("https://replica.internal/v1");
    REQUIRE(u);
    CHECK(u->tls);
    CHECK(u->port == 443);
    CHECK(u->str() == "https://replica.internal:443/v1");
    CHECK(http::parse_url("https://127.0.0.1:8443")->port == 8443);
    std::string why;
    CHECK(!http::parse_url("ftp://x", &why));
    CHECK(why.find("http://") != std::string::npos);
    CHECK(!http::parse_url("http://x:99999"));
    CHECK(!http::parse_url("http://:80"));
}

TEST_CASE("parse_url holds every source to RFC 3986 and quotes what it refuses safely", "[http]") {
    // Accepted: names, IPv4, IPv6, and paths of the characters a URL may hold.
    CHECK(http::parse_url("http://replica-0.replicas.svc.cluster.local:8000"));
    CHECK(http::parse_url("http://my_host:8000/v1"));
    CHECK(http::parse_url("http://[fe80::1:2]:8000/a%20b/c~d"));
    CHECK(http::parse_url("http://10.0.0.1:8000/models/m@1:x"));
    // Refused, each with a reason.
    const std::vector<std::string> bad = {
        "http://host:80/a b",                       // space
        "http://host:80/a\r\nX-Injected: 1",        // CR LF
        "http://ho\nst:80",                         // LF in the host
        "http://host:80/\xc3\xa9",                  // raw UTF-8 (must be %-encoded)
        "http://host:80/\xff\xfe",                  // not UTF-8 at all
        "http://host:80/a%2",                       // short escape
        "http://host:80/a%zz",                      // not hex
        "http://host:80/?q=1",                      // query
        "http://host:80/#f",                        // fragment
        "http://user:pw@host:80",                   // user info
        "http://ho st:80",                          // space in the host
        "http://-host:80",                          // a label starting with '-'
        "http://[::g]:80",                          // not hex in IPv6
        "http://host:80/a<b",                       // a character URLs exclude
        std::string("http://host:80/a\0b", 18),     // NUL
        "http://" + std::string(3000, 'a') + ":80", // too long
    };
    for (const auto& text : bad) {
        INFO(http::printable(text));
        std::string why;
        CHECK_FALSE(http::parse_url(text, &why));
        CHECK_FALSE(why.empty());
        // The message is one printable line, whatever the input held.
        CHECK(std::all_of(why.begin(), why.end(), [](char c) {
            return static_cast<unsigned char>(c) >= 0x20 && static_cast<unsigned char>(c) < 0x7f;
        }));
        CHECK(why.size() < 600);
    }
    CHECK(http::printable("a\r\n\\") == "a\\x0d\\x0a\\x5c");
    CHECK(http::valid_host("::1"));
    CHECK_FALSE(http::valid_host(""));
    CHECK_FALSE(http::valid_host("a/b"));
}

TEST_CASE("parse_url's length bound holds for the URL written out, not only the text given",
          "[http]") {
    // Found by the url fuzz target: without "http://" and a port the text fits, written out it
    // did not, and the printed URL was refused.
    const std::string path = "/" + std::string(http::max_url_length - 10, 'a');
    const std::string bare = "h" + path;
    REQUIRE(bare.size() <= http::max_url_length);
    std::string why;
    CHECK_FALSE(http::parse_url(bare, &why));
    CHECK(why.find("as a URL") != std::string::npos);
    const std::string fits = "h/" + std::string(http::max_url_length - 20, 'a');
    const auto u = http::parse_url(fits);
    REQUIRE(u);
    CHECK(http::parse_url(u->str()));
}
