#include "router/config.hpp"

#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>

using namespace lanes::router;

TEST_CASE("router config: file values, command line wins, all problems listed", "[config]") {
    char path[] = "/tmp/lanes-config-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    std::ofstream(path) << R"({"policy": "round_robin", "replicas": ["http://127.0.0.1:9001"],
                              "connect_timeout": "3s", "max-retries": 4, "access-log": false})";
    {
        const char* argv[] = {
            "lanes-router",         "--config", path, "--policy", "session", "--replica",
            "http://127.0.0.1:9002"};
        router_config cfg;
        bool help = false;
        std::string usage;
        const auto errors = load_config(7, argv, cfg, help, usage);
        CHECK(errors.empty());
        CHECK(cfg.policy == "session"); // the command line wins
        CHECK(cfg.replicas ==
              std::vector<std::string>{"http://127.0.0.1:9001", "http://127.0.0.1:9002"});
        CHECK(cfg.connect_timeout == std::chrono::milliseconds(3000));
        CHECK(cfg.max_retries == 4);
        CHECK(!cfg.access_log);
        CHECK(validate(cfg).empty());
    }
    {
        std::ofstream(path) << R"({"policy": "nope", "replica": "https://x", "bogus": 1})";
        const char* argv[] = {"lanes-router", "--config", path, "--threads", "-1"};
        router_config cfg;
        bool help = false;
        std::string usage;
        auto errors = load_config(5, argv, cfg, help, usage);
        const auto more = validate(cfg);
        errors.insert(errors.end(), more.begin(), more.end());
        // unknown key, unknown policy, https replica, negative threads: all at once
        CHECK(errors.size() == 4);
    }
    std::remove(path);
}
