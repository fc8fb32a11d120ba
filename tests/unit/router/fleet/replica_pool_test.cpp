// The replica set: membership by URL with a version that moves on every change, each replica's
// scraped stats with their own version, and its pool of idle keep-alive connections.
#include "router/fleet/replica_pool.hpp"

#include "tests/unit/common/http/test_servers.hpp"

#include <catch2/catch.hpp>

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <memory>
#include <string>
#include <vector>

using namespace lanes;
using namespace lanes::common::http::test;
using namespace std::chrono_literals;
using tcp = asio::ip::tcp;

namespace {

std::vector<std::string> ids(const router::replica_pool& pool) {
    std::vector<std::string> out;
    for (const auto& r : pool.all())
        out.push_back(r->id());
    return out;
}

// Whether the peer of `s` closed the connection: waits up to 2 s for the end of the stream.
bool peer_closed(tcp::socket& s) {
    struct timeval tv {
        2, 0
    };
    setsockopt(s.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    char byte = 0;
    boost::system::error_code ec;
    s.read_some(asio::buffer(&byte, 1), ec);
    return ec == asio::error::eof;
}

// Whether the peer of `s` is still connected with nothing sent (a read would block).
bool peer_idle(tcp::socket& s) {
    s.non_blocking(true);
    char byte = 0;
    boost::system::error_code ec;
    s.read_some(asio::buffer(&byte, 1), ec);
    s.non_blocking(false);
    return ec == asio::error::would_block;
}

// `n` connections to `acceptor` from `ex`, each with its accepted end (connected in order,
// accepted in order).
struct connected {
    std::vector<std::unique_ptr<http::client_connection>> conns;
    std::vector<http::client_connection*> raw; // stays valid once conns[i] is handed over
    std::vector<tcp::socket> peers;
};

asio::awaitable<connected> connect_n(asio::any_io_executor ex, tcp::acceptor& acceptor,
                                     asio::io_context& accept_io, int n) {
    const http::url target{"127.0.0.1", acceptor.local_endpoint().port(), ""};
    connected c;
    c.peers.reserve(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        c.conns.push_back(std::make_unique<http::client_connection>(ex));
        c.raw.push_back(c.conns.back().get());
        const auto ec = co_await c.conns.back()->connect(target, 2s);
        REQUIRE_FALSE(ec);
        c.peers.emplace_back(accept_io);
        acceptor.accept(c.peers.back());
    }
    co_return c;
}

} // namespace

TEST_CASE("pool: add, find, all and remove by URL, the version moving with each change", "[pool]") {
    router::replica_pool pool;
    CHECK(pool.version() == 0);
    CHECK(pool.all().empty());
    const http::url a{"10.0.0.1", 8001, ""}, b{"10.0.0.2", 8001, "/v1"}, v6{"fd00::1", 80, ""};
    CHECK(pool.add(a));
    CHECK(pool.add(b, "admin"));
    CHECK(pool.add(v6, "svc.local:80"));
    CHECK(pool.version() == 3);
    CHECK(ids(pool) == std::vector<std::string>{"http://10.0.0.1:8001", "http://10.0.0.2:8001/v1",
                                                "http://[fd00::1]:80"});
    // The same URL again is refused and changes nothing; another base path is another replica.
    CHECK_FALSE(pool.add(a, "admin"));
    CHECK_FALSE(pool.add(http::url{"10.0.0.2", 8001, "/v1"}));
    CHECK(pool.add(http::url{"10.0.0.1", 8001, "/other"}));
    CHECK(pool.version() == 4);
    CHECK(pool.all().size() == 4);

    const auto ra = pool.find("http://10.0.0.1:8001");
    REQUIRE(ra);
    CHECK(ra->source == "flag"); // the first add's
    CHECK(ra->authority() == "10.0.0.1:8001");
    CHECK(ra->address().port == 8001);
    CHECK(pool.find("http://10.0.0.2:8001/v1")->source == "admin");
    CHECK(pool.find("http://[fd00::1]:80")->authority() == "[fd00::1]:80");
    CHECK(pool.find("http://10.0.0.9:8001") == nullptr);
    CHECK(pool.find("10.0.0.1:8001") == nullptr); // ids are whole URLs

    CHECK(pool.remove("http://10.0.0.1:8001"));
    CHECK(pool.version() == 5);
    CHECK_FALSE(pool.remove("http://10.0.0.1:8001"));
    CHECK(pool.version() == 5);
    CHECK(pool.find("http://10.0.0.1:8001") == nullptr);
    CHECK(ids(pool) == std::vector<std::string>{"http://10.0.0.2:8001/v1", "http://[fd00::1]:80",
                                                "http://10.0.0.1:8001/other"});
    // A holder keeps a removed replica alive; added again, the URL is a fresh replica.
    ra->traffic.inflight = 3;
    CHECK(pool.add(a));
    const auto again = pool.find("http://10.0.0.1:8001");
    CHECK(again != ra);
    CHECK(again->traffic.inflight == 0);
    CHECK(ra->traffic.inflight == 3);
}

TEST_CASE("pool: replicas get the pool's breaker settings", "[pool]") {
    router::replica_pool pool({.failure_threshold = 1, .success_threshold = 1, .open_time = 1s});
    REQUIRE(pool.add(http::url{"127.0.0.1", 9000, ""}));
    const auto r = pool.find("http://127.0.0.1:9000");
    const auto now = std::chrono::steady_clock::now();
    CHECK(r->healthy());
    CHECK(r->health.on_failure(now)); // one failure ejects
    CHECK_FALSE(r->healthy());
    // The default pool takes three.
    router::replica_pool plain;
    REQUIRE(plain.add(http::url{"127.0.0.1", 9000, ""}));
    const auto p = plain.find("http://127.0.0.1:9000");
    CHECK_FALSE(p->health.on_failure(now));
    CHECK_FALSE(p->health.on_failure(now));
    CHECK(p->health.on_failure(now));
}

TEST_CASE("replica stats: set_stats replaces them and counts a version", "[pool]") {
    router::replica r(http::url{"127.0.0.1", 9001, ""});
    CHECK(r.stats_version() == 0);
    const auto empty = r.stats();
    CHECK_FALSE(empty.kv_usage);
    CHECK_FALSE(empty.waiting);
    CHECK(empty.at == std::chrono::steady_clock::time_point{});

    router::scraped_stats s;
    s.kv_usage = 0.25;
    s.waiting = 3;
    s.num_blocks = 1024;
    s.at = std::chrono::steady_clock::time_point{} + 5s;
    r.set_stats(s);
    CHECK(r.stats_version() == 1);
    auto got = r.stats();
    CHECK(got.kv_usage == 0.25);
    CHECK(got.waiting == 3);
    CHECK(got.num_blocks == 1024);
    CHECK_FALSE(got.running);
    CHECK(got.at == s.at);

    // A later scrape replaces the whole set, fields it lacks included; the same stats again
    // still count.
    router::scraped_stats later;
    later.running = 7;
    r.set_stats(later);
    r.set_stats(later);
    CHECK(r.stats_version() == 3);
    got = r.stats();
    CHECK_FALSE(got.kv_usage);
    CHECK_FALSE(got.waiting);
    CHECK(got.running == 7);
}

TEST_CASE("replica idle connections: up to max_idle kept, last first, closed ones dropped",
          "[pool]") {
    asio::io_context accept_io;
    tcp::acceptor acceptor(accept_io, {asio::ip::make_address("127.0.0.1"), 0});
    const http::url target{"127.0.0.1", acceptor.local_endpoint().port(), ""};
    router::replica r(target);
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto [conns, raw, peers] = co_await connect_n(ex, acceptor, accept_io, 3);
        CHECK(r.take_idle(ex) == nullptr);
        r.give_back(std::move(conns[0]), 2);
        r.give_back(std::move(conns[1]), 2);
        r.give_back(std::move(conns[2]), 2); // two are kept already: this one goes, closed
        CHECK(peer_closed(peers[2]));
        CHECK(peer_idle(peers[0]));
        CHECK(peer_idle(peers[1]));
        // A connection that is not open is not kept.
        r.give_back(std::make_unique<http::client_connection>(ex), 5);

        auto last = r.take_idle(ex);
        CHECK(last.get() == raw[1]);     // the last given back comes first
        r.give_back(std::move(last), 0); // nor any when max_idle is 0
        CHECK(peer_closed(peers[1]));
        auto first = r.take_idle(ex);
        CHECK(first.get() == raw[0]);
        CHECK(r.take_idle(ex) == nullptr);

        // Closed while it sat idle: skipped, and dropped.
        r.give_back(std::move(first), 2);
        raw[0]->close();
        CHECK(r.take_idle(ex) == nullptr);
        CHECK(peer_closed(peers[0]));
    });
}

TEST_CASE("replica idle connections: the user's io_context's own first, then another's", "[pool]") {
    // Each I/O thread runs an io_context of its own; a connection that moves between them is
    // registered with the other one's epoll anew (rebind), so a thread gets its own back first.
    asio::io_context accept_io, other;
    tcp::acceptor acceptor(accept_io, {asio::ip::make_address("127.0.0.1"), 0});
    const http::url target{"127.0.0.1", acceptor.local_endpoint().port(), ""};
    router::replica r(target);
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        auto [conns, raw, peers] = co_await connect_n(ex, acceptor, accept_io, 4);
        conns[1]->rebind(other.get_executor());
        REQUIRE(conns[1]->is_open());
        CHECK(&conns[1]->context() == &other);
        CHECK(&conns[0]->context() != &other);
        r.give_back(std::move(conns[0]), 3);
        r.give_back(std::move(conns[1]), 3);
        r.give_back(std::move(conns[2]), 3);
        r.give_back(std::move(conns[3]), 3); // three kept over both io_contexts: this one goes
        CHECK(peer_closed(peers[3]));

        auto mine = r.take_idle(ex);
        CHECK(mine.get() == raw[2]); // the last of this io_context's, not the other's
        auto theirs = r.take_idle(other.get_executor());
        CHECK(theirs.get() == raw[1]);
        // None of its own left: another io_context's, which the caller rebinds.
        auto borrowed = r.take_idle(other.get_executor());
        CHECK(borrowed.get() == raw[0]);
        CHECK(r.take_idle(ex) == nullptr);
        borrowed->rebind(other.get_executor());
        CHECK(borrowed->is_open());
        CHECK(&borrowed->context() == &other);
        for (auto* c : {mine.get(), theirs.get(), borrowed.get()})
            c->close();
    });
}

TEST_CASE("replica drop_idle lets every idle connection go", "[pool]") {
    asio::io_context accept_io;
    tcp::acceptor acceptor(accept_io, {asio::ip::make_address("127.0.0.1"), 0});
    const http::url target{"127.0.0.1", acceptor.local_endpoint().port(), ""};
    router::replica r(target);
    run_coroutine([&](asio::any_io_executor ex) -> asio::awaitable<void> {
        std::vector<tcp::socket> peers;
        peers.reserve(2);
        for (int i = 0; i < 2; ++i) {
            auto conn = std::make_unique<http::client_connection>(ex);
            const auto ec = co_await conn->connect(target, 2s);
            REQUIRE_FALSE(ec);
            peers.emplace_back(accept_io);
            acceptor.accept(peers.back());
            r.give_back(std::move(conn), 8);
        }
        r.drop_idle();
        CHECK(r.take_idle(ex) == nullptr);
        CHECK(peer_closed(peers[0]));
        CHECK(peer_closed(peers[1]));
    });
}

namespace {

router::model_list served(std::vector<std::string> ids, bool lanes = false) {
    router::model_list m;
    m.known = true;
    m.lanes = lanes;
    m.ids = std::move(ids);
    return m;
}

void set_block_size(router::replica& r, std::int64_t block) {
    router::scraped_stats s;
    s.block_size = block;
    r.set_stats(s);
}

} // namespace

TEST_CASE("model lists: an unread or empty list serves any model, a read one its own", "[pool]") {
    router::model_list unread;
    CHECK(unread.serves("anything"));
    CHECK(served({}).serves("anything"));
    const auto two = served({"llama", "qwen"});
    CHECK(two.serves("llama"));
    CHECK(two.serves("qwen"));
    CHECK_FALSE(two.serves("mistral"));
    CHECK_FALSE(two.serves(""));
}

TEST_CASE("pool: the only model is the one every read list names, none when two", "[pool]") {
    router::replica_pool pool;
    CHECK(pool.only_model().empty());
    pool.add(http::url{"10.0.0.1", 8001, ""});
    pool.add(http::url{"10.0.0.2", 8001, ""});
    pool.add(http::url{"10.0.0.3", 8001, ""});
    pool.update_fleet(16, 4);
    CHECK(pool.only_model().empty()); // nothing read yet
    auto replicas = pool.all();
    replicas[0]->set_models(served({"llama"}));
    CHECK(pool.only_model().empty()); // as last worked out
    pool.update_fleet(16, 4);
    CHECK(pool.only_model() == "llama"); // the unread ones do not count against it
    replicas[1]->set_models(served({"llama"}));
    pool.update_fleet(16, 4);
    CHECK(pool.only_model() == "llama");
    replicas[2]->set_models(served({"qwen"}));
    pool.update_fleet(16, 4);
    CHECK(pool.only_model().empty());
    // The replica with the other model leaves: one model again, at once.
    pool.remove(replicas[2]->id());
    CHECK(pool.only_model() == "llama");
}

TEST_CASE("pool: hashing units are lanes' byte tokens, or an engine's tokens when one serves",
          "[pool]") {
    router::replica_pool pool;
    pool.add(http::url{"10.0.0.1", 8001, ""});
    pool.add(http::url{"10.0.0.2", 8001, ""});
    auto replicas = pool.all();
    pool.update_fleet(16, 4);
    CHECK(pool.units().text_block_bytes == 16); // nothing read: the default, in bytes
    CHECK_FALSE(pool.units().engine);

    replicas[0]->set_models(served({"tiny"}, true));
    set_block_size(*replicas[0], 32);
    pool.update_fleet(16, 4);
    CHECK(pool.units().text_block_bytes == 32); // a lanes replica's block is 32 bytes
    CHECK(pool.units().id_block_tokens == 32);
    CHECK_FALSE(pool.units().engine);

    replicas[1]->set_models(served({"llama"}));
    pool.update_fleet(16, 4);
    CHECK(pool.units().engine); // an engine without a scraped block size: the default
    CHECK(pool.units().id_block_tokens == 16);
    CHECK(pool.units().text_block_bytes == 64);

    set_block_size(*replicas[1], 128);
    pool.update_fleet(16, 3);
    CHECK(pool.units().id_block_tokens == 128);
    CHECK(pool.units().text_block_bytes == 384); // 128 tokens of 3 bytes
}
