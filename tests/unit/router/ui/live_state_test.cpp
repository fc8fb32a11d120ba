// The live page's state: the latest decisions kept newest first and bounded, each replica's row
// with its requests by reason and its last error, and the page itself self-contained.
#include "router/ui/live_state.hpp"

#include <catch2/catch.hpp>
#include <chrono>
#include <nlohmann/json.hpp>

using namespace lanes;

TEST_CASE("live state: latest decisions bounded and newest first, rows per replica", "[ui]") {
    router::replica_pool pool;
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:8001"), "flag"));
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:8002"), "flag"));
    pool.find("http://127.0.0.1:8002")->note_error("a request failed: " + std::string(500, 'x'));
    router::live_state live(3);
    for (int i = 0; i < 5; ++i)
        live.record({"http://127.0.0.1:8001", "m", "prefix_match", 200, static_cast<std::size_t>(i),
                     8, 1.5});
    router::live_state::reason_counts reasons;
    reasons["http://127.0.0.1:8001"]["prefix_match"] = 5;
    const auto j = nlohmann::json::parse(live.json(pool, true, reasons, 5));
    CHECK(j["admin"] == true);
    CHECK(j["requests_total"] == 5);
    REQUIRE(j["decisions"].size() == 3);
    CHECK(j["decisions"][0]["matched_blocks"] == 4); // the newest first
    CHECK(j["decisions"][2]["matched_blocks"] == 2);
    CHECK(j["decisions"][0]["reason"] == "prefix_match");
    REQUIRE(j["replicas"].size() == 2);
    for (const auto& r : j["replicas"]) {
        if (r["url"] == "http://127.0.0.1:8001") {
            CHECK(r["requests"]["prefix_match"] == 5);
            CHECK(r["last_error"].is_null());
        } else {
            CHECK(r["requests"].empty());
            REQUIRE(r["last_error"].is_object());
            // A replica's error text is kept short.
            CHECK(r["last_error"]["what"].get<std::string>().size() == 200);
        }
    }
}

TEST_CASE("live state: a decision lists what the policy weighed for each candidate", "[ui]") {
    router::replica_pool pool;
    router::live_state live(2);
    live.record(
        {"http://127.0.0.1:8001",
         "m",
         "prefix_overload",
         200,
         0,
         8,
         1.0,
         {{"http://127.0.0.1:8001", 12.5, 0, 256}, {"http://127.0.0.1:8002", 30.0, 8, 4096}}});
    live.record({"http://127.0.0.1:8002", "m", "round_robin", 200, 0, 8, 1.0});
    const auto j = nlohmann::json::parse(live.json(pool, false, {}, 2));
    CHECK(j["decisions"][0]["estimates"].empty()); // a policy that does not estimate
    const auto& e = j["decisions"][1]["estimates"];
    REQUIRE(e.size() == 2);
    CHECK(e[0]["replica"] == "http://127.0.0.1:8001");
    CHECK(e[0]["estimate_ms"] == 12.5);
    CHECK(e[1]["cached_blocks"] == 8);
    CHECK(e[1]["queued_tokens"] == 4096.0);
}

TEST_CASE("live state: a decision's time is written as the wall-clock time it ended", "[ui]") {
    router::replica_pool pool;
    router::live_state live(4);
    const auto wall = [] {
        return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch())
            .count();
    };
    const double before = wall();
    live.record({"r", "m", "prefix_match", 200, 0, 1, 1.0}); // ended now
    live.record({"r", "m", "prefix_match", 200, 0, 1, 1.0},
                std::chrono::steady_clock::now() - std::chrono::seconds(30)); // 30 s ago
    const double after = wall();
    const auto j = nlohmann::json::parse(live.json(pool, false, {}, 2));
    REQUIRE(j["decisions"].size() == 2);
    const double newest = j["decisions"][1]["at"], older = j["decisions"][0]["at"];
    // (Newest first: the one recorded last, which ended 30 s ago, comes first.)
    CHECK(newest >= before - 0.05);
    CHECK(newest <= after + 0.05);
    CHECK(older == Approx(newest - 30).margin(0.1));
    CHECK(j["now"].get<double>() >= newest);
}

TEST_CASE("live page: one document that loads nothing from elsewhere", "[ui]") {
    const std::string_view html = router::live_page_html();
    CHECK(html.starts_with("<!doctype html>"));
    CHECK(html.find("/ui/state") != std::string_view::npos);
    CHECK(html.find("http://") == std::string_view::npos);
    CHECK(html.find("https://") == std::string_view::npos);
    CHECK(html.find("<script src") == std::string_view::npos);
    CHECK(html.find("<link") == std::string_view::npos);
}
