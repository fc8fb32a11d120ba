#include "router/config.hpp"

#include "common/log.hpp"
#include "router/policies/factory.hpp"
#include "router/proxy/retry_policy.hpp"
#include "tests/unit/common/help_text.hpp"

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
        CHECK(cfg.upstream.connect_timeout == std::chrono::milliseconds(3000));
        CHECK(cfg.max_retries == 4);
        CHECK(!cfg.access_log);
        CHECK(validate(cfg).empty());
    }
    {
        std::ofstream(path) << R"({"policy": "nope", "replica": "ftp://x", "bogus": 1})";
        const char* argv[] = {"lanes-router", "--config", path, "--threads", "-1"};
        router_config cfg;
        bool help = false;
        std::string usage;
        auto errors = load_config(5, argv, cfg, help, usage);
        const auto more = validate(cfg);
        errors.insert(errors.end(), more.begin(), more.end());
        // unknown key, unknown policy, ftp replica, negative threads: all at once
        CHECK(errors.size() == 4);
    }
    {
        // A command line that does not parse: the file's problems are still reported with it.
        std::ofstream(path) << R"({"bogus": 1})";
        const char* argv[] = {"lanes-router", "--config", path, "--threads", "x", "--nope"};
        router_config cfg;
        bool help = false;
        std::string usage;
        const auto errors = load_config(6, argv, cfg, help, usage);
        REQUIRE(errors.size() == 3);
        CHECK(errors[0].find("bogus") != std::string::npos);
        CHECK(errors[1].find("threads") != std::string::npos);
        CHECK(errors[2].find("nope") != std::string::npos);
    }
    {
        // Durations that cannot be milliseconds, timeouts of zero, a DNS name with no port.
        const char* argv[] = {"lanes-router", "--eject-time",     "inf",        "--retry-after",
                              "nan",          "--scrape-timeout", "0",          "--health-timeout",
                              "0ms",          "--dns-interval",   "0s",         "--replica-dns",
                              "svc:http",     "--replica-dns",    "[::1]:8000", "--connect-timeout",
                              "1e300s"};
        router_config cfg;
        bool help = false;
        std::string usage;
        const auto errors = load_config(17, argv, cfg, help, usage);
        CHECK(errors.size() == 3); // inf, nan, 1e300s
        const auto more = validate(cfg);
        CHECK(more.size() == 5); // three zeros, two DNS names
        const char* good[] = {"lanes-router",
                              "--replica-dns",
                              "replicas.ns.svc:8000",
                              "--replica-dns",
                              "https://replicas.ns.svc:8443",
                              "--eject-time",
                              "2.5s"};
        router_config ok;
        CHECK(load_config(7, good, ok, help, usage).empty());
        CHECK(validate(ok).empty());
        CHECK(ok.health.open_time == std::chrono::milliseconds(2500));
    }
    std::remove(path);
}

namespace {

std::vector<std::string> problems(std::vector<const char*> args, router_config& cfg) {
    args.insert(args.begin(), "lanes-router");
    bool help = false;
    std::string usage;
    auto errors = load_config(static_cast<int>(args.size()), args.data(), cfg, help, usage);
    const auto more = validate(cfg);
    errors.insert(errors.end(), more.begin(), more.end());
    return errors;
}

} // namespace

TEST_CASE("router config: the drop-in settings, their defaults and their bounds", "[config]") {
    {
        router_config cfg;
        CHECK(problems({}, cfg).empty());
        CHECK(cfg.default_model.empty());
        CHECK(cfg.backpressure_backoff == std::chrono::milliseconds(1000));
        CHECK(cfg.max_backoff == std::chrono::milliseconds(60000));
        CHECK(cfg.json_max_depth == 64);
        CHECK(cfg.shutdown_delay == std::chrono::milliseconds(0));
        CHECK(cfg.monitor.models_interval == std::chrono::milliseconds(5000));
        CHECK(cfg.monitor.bytes_per_token == 4);
        CHECK(cfg.health.max_ejection_percent == 50);
        CHECK(cfg.upstream.replica_authorization.empty());
        CHECK_FALSE(cfg.upstream.replace_client_auth);
    }
    {
        router_config cfg;
        CHECK(problems({"--default-model", "llama", "--shutdown-delay", "5s", "--replica-api-key",
                        "k1", "--replace-client-auth", "true", "--bytes-per-token", "3"},
                       cfg)
                  .empty());
        CHECK(cfg.default_model == "llama");
        CHECK(cfg.shutdown_delay == std::chrono::milliseconds(5000));
        CHECK(cfg.upstream.replica_authorization == "Bearer k1");
        CHECK(cfg.upstream.replace_client_auth);
        CHECK(cfg.monitor.bytes_per_token == 3);
    }
    {
        router_config cfg;
        const auto errors = problems({"--json-max-depth", "1", "--bytes-per-token", "0",
                                      "--max-ejection-percent", "101", "--shutdown-delay", "-1s",
                                      "--models-interval", "0", "--replace-client-auth", "true"},
                                     cfg);
        CHECK(errors.size() == 6);
    }
    char path[] = "/tmp/lanes-key-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    {
        std::ofstream(path) << "secret-key \r\nsecond line\n";
        router_config cfg;
        CHECK(problems({"--replica-api-key-file", path}, cfg).empty());
        CHECK(cfg.monitor.replica_api_key == "secret-key"); // first line, trailing space cut
        CHECK(cfg.upstream.replica_authorization == "Bearer secret-key");
    }
    {
        std::ofstream(path) << "\n";
        router_config cfg;
        CHECK(problems({"--replica-api-key-file", path}, cfg).size() == 1);
        router_config both;
        CHECK(problems({"--replica-api-key-file", path, "--replica-api-key", "k"}, both).size() ==
              1);
        router_config missing;
        CHECK(problems({"--replica-api-key-file", "/nonexistent/lanes-key"}, missing).size() == 1);
    }
    std::remove(path);
}

TEST_CASE("replica URLs and DNS names from flags are held to what a URL may contain", "[config]") {
    router_config cfg;
    const auto errors = problems({"--replica", "http://127.0.0.1:8001/v1\r\nHost: evil",
                                  "--replica-dns", "bad name.svc:8000", "--replica-dns",
                                  "ok-name.svc:8000", "--replica", "http://10.0.0.1:8000/a%2F"},
                                 cfg);
    REQUIRE(errors.size() == 2);
    CHECK(errors[0].find("\\x0d\\x0a") != std::string::npos);
    CHECK(errors[1].find("bad name.svc") != std::string::npos);
}

TEST_CASE("router config: the admin listener's settings", "[config][admin]") {
    {
        router_config cfg;
        CHECK(problems({}, cfg).empty());
        CHECK(cfg.admin_host == "127.0.0.1");
        CHECK(cfg.admin_port == 8090);
        CHECK(cfg.admin_max_connections == 16);
        CHECK(cfg.admin_token.empty());
        CHECK_FALSE(cfg.admin_insecure_loopback);
    }
    {
        router_config cfg;
        CHECK(problems({"--admin-host", "0.0.0.0", "--admin-port", "0", "--admin-token", "t",
                        "--admin-insecure-loopback"},
                       cfg)
                  .empty());
        CHECK(cfg.admin_port == 0);
        CHECK(cfg.admin_insecure_loopback);
    }
    router_config cfg;
    const auto errors = problems({"--admin-token", "a", "--admin-token-file", "f"}, cfg);
    REQUIRE(errors.size() == 1);
    CHECK(errors[0].find("not both") != std::string::npos);
}

using lanes::test::unwrapped;

TEST_CASE("router --help: its sections in order, 100 columns, choices from the factory",
          "[config]") {
    router_config cfg;
    const std::string usage = make_flags(cfg).usage();
    INFO(usage);
    for (const auto& line : lanes::test::lines_of(usage)) {
        INFO(line);
        CHECK(line.size() <= 100);
    }
    const char* sections[] = {"Listening",          "Replicas and discovery", "Routing",
                              "Health and retries", "Limits and admission",   "Access and TLS",
                              "KV events",          "Observability",          "General"};
    std::size_t last = 0;
    for (const char* s : sections) {
        INFO(s);
        const auto at = usage.find("\n\n" + std::string(s) + ":\n");
        REQUIRE(at != std::string::npos);
        CHECK(at > last);
        last = at;
    }
    // Every flag is in one of them: none is left in a section of no name.
    CHECK(usage.find("Other options") == std::string::npos);
    for (const auto& line : lanes::test::lines_of(usage))
        CHECK(!(line.starts_with("  --") && line.find(" VALUE") != std::string::npos));
    const std::string flat = unwrapped(usage);
    // The policies, from the list the config's check uses.
    std::string known;
    for (const auto& name : policy_names())
        known += (known.empty() ? "" : ", ") + name;
    CHECK(flat.find("(one of: " + known + "; default: prefix)") != std::string::npos);
    CHECK(flat.find("(one of: debug, info, warn, error; default: info)") != std::string::npos);
    CHECK(flat.find("--session-ttl DURATION") != std::string::npos);
    CHECK(flat.find("(default: 30m)") != std::string::npos);
    CHECK(flat.find("--replica URL") != std::string::npos);
    CHECK(flat.find("--api-key-file PATH") != std::string::npos);
    CHECK(flat.find("--upstream-body-limit BYTES") != std::string::npos);
    CHECK(flat.find("--route-headers[=BOOL]") != std::string::npos);
}

TEST_CASE("router --help lists values its checks accept", "[config]") {
    for (const char* level : {"debug", "info", "warn", "error"}) {
        lanes::common::log::level parsed{};
        CHECK(lanes::common::log::parse_level(level, parsed));
    }
    // --retry-on's help names each failure class by the name its parser reads.
    for (const char* name :
         {"connect-failure", "reset", "backpressure", "5xx", "timeout", "broken-answer", "none"}) {
        INFO(name);
        CHECK(retry_policy::parse(name).has_value());
        router_config cfg;
        CHECK(unwrapped(make_flags(cfg).usage()).find(name) != std::string::npos);
    }
}

TEST_CASE("router config: booleans in every spelling, a misspelt flag named, --version",
          "[config]") {
    router_config cfg;
    CHECK(
        problems({"--route-headers", "yes", "--kv-events", "0", "--access-log=off"}, cfg).empty());
    CHECK(cfg.upstream.route_headers);
    CHECK(!cfg.kv_events);
    CHECK(!cfg.access_log);
    router_config bad;
    auto errors = problems({"--route-headers=maybe", "--polcy", "prefix"}, bad);
    REQUIRE(errors.size() == 2);
    CHECK(errors[0] ==
          "--route-headers expects true/false/yes/no/on/off/1/0 (or no value), not 'maybe'");
    CHECK(errors[1] == "unknown option --polcy (did you mean --policy?)");

    const char* argv[] = {"lanes-router", "--version"};
    bool help = false;
    std::string text;
    router_config v;
    CHECK(load_config(2, argv, v, help, text).empty());
    CHECK(help);
    CHECK(text.starts_with("lanes-router "));
}

TEST_CASE("router config: a JSON syntax error says where and what", "[config]") {
    char path[] = "/tmp/lanes-config-XXXXXX";
    const int fd = mkstemp(path);
    REQUIRE(fd >= 0);
    // The third line lacks a comma before "max-retries".
    std::ofstream(path)
        << "{\n  \"policy\": \"prefix\",\n  \"port\": 8000\n  \"max-retries\": 2\n}\n";
    const char* argv[] = {"lanes-router", "--config", path};
    router_config cfg;
    bool help = false;
    std::string usage;
    const auto errors = load_config(3, argv, cfg, help, usage);
    REQUIRE(errors.size() == 1);
    INFO(errors[0]);
    CHECK(errors[0].starts_with("--config: '" + std::string(path) +
                                "' is not valid JSON: line 4, column 15 (byte 54): "));
    CHECK(errors[0].find("syntax error") != std::string::npos);
    CHECK(errors[0].find("[json.exception") == std::string::npos);

    // Cut short: the position is the end of the file.
    std::ofstream(path) << "{\"policy\": ";
    const auto cut = load_config(3, argv, cfg, help, usage);
    REQUIRE(cut.size() == 1);
    INFO(cut[0]);
    CHECK(cut[0].find("line 1, column 12 (byte 12)") != std::string::npos);

    // Valid JSON that is not an object.
    std::ofstream(path) << "[1, 2]";
    const auto array = load_config(3, argv, cfg, help, usage);
    REQUIRE(array.size() == 1);
    CHECK(array[0] ==
          "--config: '" + std::string(path) + "' holds a JSON array, not an object of flags");
    std::remove(path);
}
