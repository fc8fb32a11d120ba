// The salt a key's requests carry, finding a client's own, and adding ours to a body.
#include "router/access/cache_salt.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

using namespace lanes::router;

TEST_CASE("cache salts: one per key name, the same every time, never the name", "[access]") {
    CHECK(cache_salt_for("team-a") == cache_salt_for("team-a"));
    CHECK(cache_salt_for("team-a") != cache_salt_for("team-b"));
    CHECK(cache_salt_for("team-a").starts_with("lanes-"));
    CHECK(cache_salt_for("team-a").size() == 6 + 24);
    CHECK(cache_salt_for("team-a").find("team") == std::string::npos);
}

TEST_CASE("has_field finds a top-level field in any spelling", "[access]") {
    CHECK(has_field(R"({"model":"m","cache_salt":"x"})", "cache_salt"));
    CHECK(has_field(R"({"cache\u005fsalt":"x"})", "cache_salt"));
    CHECK_FALSE(has_field(R"({"nested":{"cache_salt":"x"}})", "cache_salt"));
    CHECK_FALSE(has_field(R"({"model":"m"})", "cache_salt"));
    CHECK_FALSE(has_field("[]", "cache_salt"));
    CHECK_FALSE(has_field("", "cache_salt"));
}

TEST_CASE("with_cache_salt adds the salt as the first member and changes nothing else",
          "[access]") {
    for (const std::string& body :
         {std::string(R"({"model":"m","prompt":"hi"})"), std::string("{}"), std::string(" {\n  }"),
          std::string(R"(  {"a":[1,{"b":2}]}  )")}) {
        INFO(body);
        const std::string salted = with_cache_salt(body, "lanes-abc");
        const auto doc = nlohmann::json::parse(salted);
        CHECK(doc["cache_salt"] == "lanes-abc");
        auto original = nlohmann::json::parse(body);
        original["cache_salt"] = "lanes-abc";
        CHECK(doc == original);
    }
}
