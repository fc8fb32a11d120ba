// One-shot requests: fetch and fetch_on over a kept connection.
#include "common/http/fetch.hpp"

#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

using namespace lanes::common;
using namespace lanes::common::http::test;

TEST_CASE("fetch_on keeps its connection, and replaces one the server closed while idle",
          "[http]") {
    http::server_config cfg;
    cfg.idle_timeout = 200ms;
    test_server ts(cfg);
    const http::url target{"127.0.0.1", ts.port, ""};
    http::fetch_options keep;
    keep.keep_alive = true;
    http::fetch_options once; // Connection: close
    struct step {
        int status = 0;
        boost::system::error_code ec;
        const void* conn = nullptr;
        bool open = false;
    };
    std::array<step, 4> steps{};
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        std::unique_ptr<http::client_connection> conn;
        asio::steady_timer idle(ex);
        for (std::size_t i = 0; i < steps.size(); ++i) {
            if (i == 2) { // past the server's idle timeout: it closes the kept connection
                idle.expires_after(500ms);
                co_await idle.async_wait(asio::use_awaitable);
            }
            const auto& options = i == 3 ? once : keep;
            auto r = co_await http::fetch_on(conn, ex, target, bhttp::verb::get, "/", options);
            steps[i] = {r.status, r.ec, conn.get(), conn && conn->is_open()};
        }
    });
    for (const auto& s : steps) {
        CHECK(!s.ec);
        CHECK(s.status == 200);
    }
    CHECK(steps[0].open);
    CHECK(steps[1].conn == steps[0].conn); // kept and used again
    CHECK(steps[2].conn != steps[1].conn); // the closed one replaced, the request sent again
    CHECK(steps[2].open);
    CHECK(steps[3].conn == steps[2].conn);
    CHECK(!steps[3].open); // asked to close
}
