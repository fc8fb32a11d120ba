// The router out of file descriptors: it fits --max-connections to the limit it finds, closes
// the excess at once, logs a little, blames no replica and serves again once they go.
#include "battery.hpp"
#include "fake_engine.hpp"
#include "traffic.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cerrno>
#include <string>
#include <vector>

using namespace lanes;
using namespace lanes::test;
using namespace std::chrono_literals;
namespace asio = boost::asio;
namespace beast = boost::beast;

TEST_CASE(
    "battery: out of file descriptors, the router refuses the excess, logs a little, serves on",
    "[router][battery]") {
    fake_engine engine({"m"});
    // A hard limit of 96 descriptors: the router fits --max-connections to it.
    auto router = std::make_unique<process>(
        "/usr/bin/prlimit",
        std::vector<std::string>{"--nofile=96:96", LANES_ROUTER_BIN, "--host", "127.0.0.1",
                                 "--port", "0", "--replica", engine.url(), "--health-interval",
                                 "50ms", "--access-log", "false"});
    REQUIRE(wait_healthy(router->port(), 10s));
    const std::string log_before = router->log();
    REQUIRE(log_before.find("hard 96") != std::string::npos);
    // Its descriptor table was made whole at start, as far as the limit allows (96 slots, which
    // the kernel rounds up), so it never grows while connections arrive.
    const auto table_at = log_before.find("descriptor table: ");
    REQUIRE(table_at != std::string::npos);
    CHECK(std::atoi(log_before.c_str() + table_at + 18) >= 96);
    const auto cap_at = log_before.find("at most ");
    REQUIRE(cap_at != std::string::npos);
    const int cap = std::atoi(log_before.c_str() + cap_at + 8);
    CHECK(cap >= 8);
    CHECK(cap < 48);
    // 300 idle connections: more than the cap, and more than the descriptors.
    asio::io_context io;
    std::vector<std::unique_ptr<asio::ip::tcp::socket>> idle;
    for (int i = 0; i < 300; ++i) {
        auto s = std::make_unique<asio::ip::tcp::socket>(io);
        boost::system::error_code ec;
        s->connect({asio::ip::make_address("127.0.0.1"), router->port()}, ec);
        if (!ec)
            idle.push_back(std::move(s));
    }
    std::this_thread::sleep_for(scaled(1000ms));
    // Those past the cap were closed at once; at most the cap stay open.
    int open = 0;
    for (auto& s : idle) {
        char byte;
        const auto n = ::recv(s->native_handle(), &byte, 1, MSG_DONTWAIT);
        open += n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK); // still open, nothing said
    }
    INFO("open " << open << " of " << idle.size() << ", cap " << cap);
    CHECK(open <= cap);
    CHECK(open >= 1);
    // The log did not flood (one line per second per cause at most), and the replica was
    // never blamed for the router's own shortage.
    const std::string log_during = router->log();
    const auto lines = std::count(log_during.begin(), log_during.end(), '\n');
    CHECK(lines < 40);
    CHECK(log_during.find("ejected") == std::string::npos);
    // Once the idle ones go, requests are served again.
    const std::size_t connected = idle.size();
    idle.clear();
    CHECK(eventually(
        [&] { return post_json(router->port(), "/v1/completions", small).status == 200; }, 5s));
    // The refusals are counted where an operator sees them, and the open connections too (the
    // scrape's own at least).
    const std::string metrics = get(router->port(), "/metrics").body;
    const auto value_of = [&metrics](const std::string& name) {
        const auto at = metrics.find("\n" + name + " ");
        return at == std::string::npos ? -1.0 : std::stod(metrics.substr(at + name.size() + 2));
    };
    INFO(metrics);
    CHECK(value_of("lanes_router_client_connections_refused_total") >=
          static_cast<double>(connected) - static_cast<double>(cap));
    CHECK(value_of("lanes_router_client_connections") >= 1.0);
}
