// The subscriber against a scripted publisher (ZeroMQ PUB and ROUTER on loopback, vLLM's frames):
// a late join caught up by replay, a gap filled by replay, a gap the replay cannot fill (resync),
// and a sequence that starts again (a restarted engine).
#include "router/fleet/kv_subscriber.hpp"

#include "common/kv_events/events.hpp"
#include "router/metrics.hpp"

#include <catch2/catch.hpp>
#include <zmq.hpp>

#include <atomic>
#include <map>
#include <mutex>
#include <thread>

using namespace lanes;
namespace ev = lanes::common::kv_events;
using namespace std::chrono_literals;

namespace {

constexpr std::size_t block_size = 2;

// A publisher the test drives: send() puts a batch on the PUB socket and in the replay buffer,
// keep() only in the buffer (as if the PUB had lost it); a thread answers replay requests.
class scripted_publisher {
public:
    scripted_publisher() {
        pub_.set(zmq::sockopt::linger, 0);
        router_.set(zmq::sockopt::linger, 0);
        pub_.bind("tcp://127.0.0.1:*");
        router_.bind("tcp://127.0.0.1:*");
        thread_ = std::thread([this] { serve(); });
    }
    ~scripted_publisher() {
        stop_ = true;
        thread_.join();
    }
    unsigned short port(zmq::socket_t& s) {
        const std::string e = s.get(zmq::sockopt::last_endpoint);
        return static_cast<unsigned short>(std::stoi(e.substr(e.rfind(':') + 1)));
    }
    unsigned short pub_port() { return port(pub_); }
    unsigned short replay_port() { return port(router_); }

    void keep(std::int64_t seq, const ev::batch& b) {
        std::lock_guard lock(mutex_);
        buffer_[seq] = ev::encode(b);
    }
    void send(std::int64_t seq, const ev::batch& b) {
        keep(seq, b);
        std::lock_guard lock(mutex_);
        const std::string s = ev::sequence_frame(seq);
        pub_.send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
        pub_.send(zmq::buffer(s), zmq::send_flags::sndmore);
        pub_.send(zmq::buffer(buffer_[seq]), zmq::send_flags::none);
    }
    void forget_all() {
        std::lock_guard lock(mutex_);
        buffer_.clear();
    }

private:
    void serve() {
        while (!stop_) {
            zmq::pollitem_t item{router_.handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, 20ms);
            if (!(item.revents & ZMQ_POLLIN))
                continue;
            std::vector<zmq::message_t> parts;
            for (;;) {
                zmq::message_t m;
                (void)router_.recv(m);
                const bool more = m.more();
                parts.push_back(std::move(m));
                if (!more)
                    break;
            }
            if (parts.size() != 3)
                continue;
            const auto from = ev::read_sequence(parts[2].to_string_view());
            std::lock_guard lock(mutex_);
            const auto reply = [&](std::int64_t seq, const std::string& payload) {
                router_.send(zmq::buffer(parts[0].to_string()), zmq::send_flags::sndmore);
                router_.send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
                router_.send(zmq::buffer(ev::sequence_frame(seq)), zmq::send_flags::sndmore);
                router_.send(zmq::buffer(payload), zmq::send_flags::none);
            };
            for (const auto& [seq, payload] : buffer_)
                if (from && seq >= *from)
                    reply(seq, payload);
            reply(-1, "");
        }
    }

    zmq::context_t ctx_{1};
    zmq::socket_t pub_{ctx_, zmq::socket_type::pub};
    zmq::socket_t router_{ctx_, zmq::socket_type::router};
    std::mutex mutex_; // the sockets are the serving thread's but for send(), under this
    std::map<std::int64_t, std::string> buffer_;
    std::atomic<bool> stop_{false};
    std::thread thread_;
};

ev::batch cleared() {
    ev::batch b;
    b.events.emplace_back(ev::all_blocks_cleared{});
    return b;
}

// A batch storing one block of `tokens` (two), chained from `parent` (an engine hash) or none.
ev::batch stored(std::uint64_t hash, std::vector<std::uint32_t> tokens,
                 std::optional<std::uint64_t> parent = std::nullopt) {
    ev::batch b;
    ev::block_stored s;
    s.block_hashes = {ev::int_hash(hash)};
    if (parent)
        s.parent = ev::int_hash(*parent);
    s.token_ids = std::move(tokens);
    s.block_size = block_size;
    b.events.emplace_back(s);
    return b;
}

std::vector<common::block_hash> router_blocks(std::vector<common::token_id> tokens) {
    return common::hash_blocks(tokens, block_size, 77);
}

template <typename F>
bool eventually(F f, std::chrono::milliseconds within = 3s) {
    const auto until = std::chrono::steady_clock::now() + within;
    while (std::chrono::steady_clock::now() < until) {
        if (f())
            return true;
        std::this_thread::sleep_for(10ms);
    }
    return f();
}

} // namespace

TEST_CASE("kv subscriber: late join, gap replayed, gap resynced, restart", "[kv_subscriber]") {
    scripted_publisher pub;
    router::replica_pool pool;
    REQUIRE(pool.add(*common::http::parse_url("http://127.0.0.1:1"), "flag"));
    const auto r = pool.all().front();
    router::scraped_stats st;
    st.kv_events_port = pub.pub_port();
    st.kv_replay_port = pub.replay_port();
    r->set_stats(st);
    router::model_list models; // (read from /v1/models: a replica is subscribed to once known)
    models.known = true;
    models.ids = {"m"};
    r->set_models(models);
    router::router_metrics metrics;
    router::precise_index index;
    router::kv_subscriber_config cfg;
    cfg.resubscribe_interval = 20ms;
    router::kv_subscriber sub(
        pool, index, metrics, cfg,
        [](const router::replica&, const std::string&, std::uint64_t) { return 77; });
    sub.start();
    const std::string id = r->id();

    // Joined late: batches 0 and 1 went out before the subscription; the replay it asks for on
    // joining brings them.
    pub.send(0, cleared());
    pub.send(1, stored(100, {1, 2}));
    std::this_thread::sleep_for(300ms);
    int seq = 2;
    REQUIRE(eventually([&] {
        pub.send(seq, stored(101 + static_cast<std::uint64_t>(seq),
                             {3, static_cast<std::uint32_t>(seq)}, 100));
        ++seq;
        // Batch 2 stored [3, 2] after [1, 2]: once it is in (received, or replayed when a later
        // one showed it missing), the index is caught up.
        return index.live(id) && index.match(id, router_blocks({1, 2, 3, 2})) == 2;
    }));
    CHECK(index.match(id, router_blocks({1, 2})) == 1);

    // A gap the replay fills: the next batch only in the buffer, the one after sent.
    pub.keep(seq, stored(500, {9, 9}));
    pub.send(seq + 1, stored(501, {8, 8}));
    seq += 2;
    REQUIRE(eventually([&] { return index.match(id, router_blocks({8, 8})) == 1; }));
    CHECK(index.match(id, router_blocks({9, 9})) == 1);
    CHECK(index.live(id));
    CHECK(metrics.kv_event_gaps.with({id, "replayed"}).value() == 1);

    // The router sees the replica's cache lost (its epoch moves): the entries are not trusted
    // until a batch in sequence shows the same stream going on.
    CHECK(index.live(id, r->epoch.load()));
    r->epoch.fetch_add(1);
    CHECK_FALSE(index.live(id, r->epoch.load()));
    pub.send(seq++, stored(502, {6, 6}));
    CHECK(eventually([&] { return index.live(id, r->epoch.load()); }));

    // A gap nothing can fill (the batches are gone): resynced, not live, entries dropped.
    pub.forget_all();
    pub.send(seq + 5, stored(600, {7, 7}));
    REQUIRE(eventually([&] { return metrics.kv_event_gaps.with({id, "resync"}).value() == 1; }));
    CHECK_FALSE(index.live(id));
    CHECK(index.match(id, router_blocks({1, 2})) == 0);

    // The engine restarts: its sequence starts again at 0 with an empty cache.
    pub.send(0, cleared());
    REQUIRE(eventually([&] { return index.live(id); }));
    CHECK(index.size(id) == 0);
    pub.send(1, stored(100, {1, 2}));
    CHECK(eventually([&] { return index.match(id, router_blocks({1, 2})) == 1; }));
    sub.stop();
}
