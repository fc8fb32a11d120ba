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
    CHECK(router::session_key(with_fields({{"X-Session-Id", "s1"}}), user) == "s1");
    CHECK(router::session_key(with_fields({{"x-session-id", ""}}), user) == "alice");
    CHECK(router::session_key(with_fields({}), user) == "alice");
    CHECK(router::session_key(with_fields({}), std::string()) == std::nullopt);
    const auto cookie = with_fields({{"Cookie", "theme=dark; session_id=c42; lang=en"}});
    CHECK(router::session_key(cookie, std::nullopt) == "c42");
    CHECK(router::session_key(cookie, user) == "alice"); // the body's user comes first
    CHECK(router::session_key(with_fields({{"Cookie", "session_id="}}), std::nullopt) ==
          std::nullopt);
    CHECK(router::session_key(with_fields({{"Cookie", "my_session_id=x"}}), std::nullopt) ==
          std::nullopt);
    CHECK(router::session_key(with_fields({}), std::nullopt) == std::nullopt);
}
