#include "router/request/session_key.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
namespace http = lanes::common::http;

namespace {

http::request with_fields(std::initializer_list<std::pair<std::string_view, std::string_view>> f) {
    http::request req;
    req.start(http::beast_http::verb::post, "POST", "/v1/completions", 11);
    for (const auto& [name, value] : f)
        req.add(name, value);
    return req;
}

} // namespace

TEST_CASE("the session key: header, else the body's user, else the session_id cookie",
          "[session_key]") {
    const std::optional<std::string> user = "alice";
    CHECK(router::session_key_text(with_fields({{"X-Session-Id", "s1"}}), user) == "s1");
    CHECK(router::session_key_text(with_fields({{"x-session-id", ""}}), user) == "alice");
    CHECK(router::session_key_text(with_fields({}), user) == "alice");
    CHECK(router::session_key_text(with_fields({}), std::string()) == std::nullopt);
    const auto cookie = with_fields({{"Cookie", "theme=dark; session_id=c42; lang=en"}});
    CHECK(router::session_key_text(cookie, std::nullopt) == "c42");
    CHECK(router::session_key_text(cookie, user) == "alice"); // the body's user comes first
    CHECK(router::session_key_text(with_fields({{"Cookie", "session_id="}}), std::nullopt) ==
          std::nullopt);
    CHECK(router::session_key_text(with_fields({{"Cookie", "my_session_id=x"}}), std::nullopt) ==
          std::nullopt);
    CHECK(router::session_key_text(with_fields({}), std::nullopt) == std::nullopt);
}

TEST_CASE("a session is two hashes of its key: one keyed in this process, one shared",
          "[session_key]") {
    const auto a = router::session_of("alice");
    const auto b = router::session_of("bob");
    CHECK(a.key == router::session_of("alice").key);
    CHECK(a.place == router::session_of("alice").place);
    CHECK(a.key != b.key);
    CHECK(a.place != b.place);
    // The shared hash is XXH3 of the key alone, as another router computes it; the table's key
    // is not (it carries this process's secret).
    CHECK(a.key != a.place);
    const std::optional<std::string> user = "alice";
    const auto got = router::request_session(with_fields({}), user, 1024);
    REQUIRE(got);
    CHECK(got->key == a.key);
    // A key over the limit names no session (8 MB `user` fields are not remembered).
    const std::optional<std::string> huge = std::string(2000, 'u');
    CHECK_FALSE(router::request_session(with_fields({}), huge, 1024));
    CHECK(router::request_session(with_fields({}), huge, 4096));
}
