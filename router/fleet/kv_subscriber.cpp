#include "router/fleet/kv_subscriber.hpp"

#include "common/kv_events/events.hpp"
#include "common/log.hpp"
#include "router/fleet/kv_sources.hpp"
#include "router/metrics.hpp"

#include <zmq.hpp>

#include <algorithm>
#include <map>
#include <optional>
#include <vector>

namespace lanes::router {

namespace ev = common::kv_events;
using clock_type = std::chrono::steady_clock;

namespace {

constexpr std::int64_t max_message_bytes = static_cast<std::int64_t>(ev::decode_limits{}.max_bytes);

std::string tcp_endpoint(const common::http::url& u, unsigned short port) {
    const bool v6 = u.host.find(':') != std::string::npos;
    return "tcp://" + (v6 ? "[" + u.host + "]" : u.host) + ":" + std::to_string(port);
}

// One replica's subscription.
struct subscription {
    std::string id;
    std::string endpoint, replay_endpoint;
    zmq::socket_t sub;
    std::optional<zmq::socket_t> dealer;
    std::int64_t last_seq = -1;  // of the last batch applied; -1: none since subscribing
    std::int64_t skip_upto = -1; // batches up to this one came by replay or dump already
    std::optional<clock_type::time_point> bootstrapped_at; // the last dump asked for
};

} // namespace

struct kv_subscriber::impl {
    zmq::context_t ctx{1};
    std::map<std::string, subscription> subs; // by replica id
};

kv_subscriber::kv_subscriber(replica_pool& pool, precise_index& index, router_metrics& metrics,
                             kv_subscriber_config cfg, root_fn root_for)
    : pool_(pool)
    , index_(index)
    , metrics_(metrics)
    , cfg_(std::move(cfg))
    , root_for_(std::move(root_for)) {}

kv_subscriber::~kv_subscriber() {
    stop();
}

void kv_subscriber::start() {
    started_ = clock_type::now();
    thread_ = std::thread([this] { run(); });
}

bool kv_subscriber::warmed() const {
    if (warmed_.load(std::memory_order_acquire))
        return true;
    if (clock_type::now() - started_ >= cfg_.warmup_timeout) {
        warmed_.store(true, std::memory_order_release);
        return true;
    }
    bool any = false;
    for (const auto& r : pool_.all()) {
        if (!r->probe_answered.load()) // every replica's first probe back: none still unknown
            return false;
        if (!r->probe_ok.load(std::memory_order_relaxed))
            continue;
        any = true;
        if (!r->models()->known || !r->scrape_answered.load())
            return false;
        const bool has_events = r->stats().kv_events_port.has_value() || cfg_.port != 0;
        if (has_events && !r->kv_joined.load())
            return false;
    }
    if (any) // (none healthy yet: nothing is known)
        warmed_.store(true, std::memory_order_release);
    return any;
}

void kv_subscriber::stop() {
    stopping_.store(true);
    if (thread_.joinable())
        thread_.join();
}

void kv_subscriber::run() {
    impl z;
    auto last_sync = clock_type::time_point{};
    using replayed = replayed_batches;

    // What the replica's replay socket still has from `from` on (nullopt: no socket, no answer).
    const auto replay = [&](subscription& s, std::int64_t from) -> std::optional<replayed> {
        if (!s.dealer)
            return std::nullopt;
        return request_replay(*s.dealer, from, cfg_.replay_timeout, stopping_);
    };

    const auto apply_batch = [&](subscription& s, const ev::batch& b) {
        const auto r = pool_.find(s.id);
        if (!r)
            return;
        index_.apply(s.id, b, [&](const ev::block_stored& st) {
            return root_for_(*r, st.lora_name.value_or(""), st.cache_salt_hash.value_or(0));
        });
        index_.confirm(s.id, r->epoch.load());
    };

    const auto apply = [&](subscription& s, const std::string& payload) -> bool {
        ev::batch b;
        std::string error;
        if (!ev::decode(payload, b, error)) {
            metrics_.kv_event_errors.with({s.id}).inc();
            LANES_LOG_THROTTLED(warn, "kv-events",
                                s.id << ": a batch that does not decode: " << error);
            return false;
        }
        apply_batch(s, b);
        metrics_.kv_event_batches.with({s.id}).inc();
        return true;
    };

    // Applies the contiguous run of `got` that starts at `from` (below `upto`): the last
    // sequence number applied (from - 1 for none), or nullopt when a batch does not decode.
    const auto apply_run = [&](subscription& s, const replayed& got, std::int64_t from,
                               std::int64_t upto) -> std::optional<std::int64_t> {
        std::int64_t next = from;
        for (const auto& [seq, payload] : got) {
            if (seq != next || seq >= upto)
                break;
            if (!apply(s, payload))
                return std::nullopt;
            ++next;
        }
        return next - 1;
    };

    // The replica's block dump, then what its replay socket has from the dump on: the last
    // sequence number the index now reflects (the replica live), or -1 when there is no token,
    // the last try was too recent, or the dump cannot be had.
    const auto bootstrap = [&](subscription& s) -> std::int64_t {
        if (cfg_.bootstrap_token.empty())
            return -1;
        const auto now = clock_type::now();
        if (s.bootstrapped_at && now - *s.bootstrapped_at < cfg_.bootstrap_retry)
            return -1;
        s.bootstrapped_at = now;
        const auto r = pool_.find(s.id);
        if (!r)
            return -1;
        const auto read = read_block_dump(
            r->address(), {cfg_.bootstrap_token, cfg_.bootstrap_timeout, cfg_.bootstrap_max_bytes});
        const auto fail = [&](const char* outcome, const std::string& why) -> std::int64_t {
            metrics_.kv_bootstraps.with({s.id, outcome}).inc();
            LANES_LOG_THROTTLED(warn, "kv-events", s.id << ": no block dump: " << why);
            return -1;
        };
        if (!read.dump)
            return fail(read.outcome, read.why);
        const std::int64_t next = read.dump->next_seq;
        index_.reset(s.id, true);
        apply_batch(s, read.dump->blocks);
        std::int64_t known = next - 1;
        if (const auto got = replay(s, next)) {
            const auto last = apply_run(s, *got, next, INT64_MAX);
            if (!last) {
                index_.reset(s.id, false);
                return fail("undecodable", "a replayed batch that does not decode");
            }
            known = *last;
        }
        metrics_.kv_bootstraps.with({s.id, "ok"}).inc();
        LANES_LOG(info, "kv-events",
                  s.id << ": warmed from its block dump (" << index_.size(s.id)
                       << " blocks, the stream from batch " << next << " on)");
        return known;
    };

    // Fills batches from .. upto - 1 from the replay socket, else from the replica's block dump:
    // the last sequence number the index then reflects, or -1 when neither could (the replica's
    // entries dropped, not live until its cache clears or a later dump). from_start: the index
    // starts over from batch `from` = 0.
    const auto catch_up = [&](subscription& s, std::int64_t from, std::int64_t upto,
                              bool from_start) -> std::int64_t {
        const auto got = replay(s, from);
        const bool complete = got && !got->empty() && got->front().first == from &&
                              static_cast<std::int64_t>(got->size()) >= upto - from &&
                              (*got)[static_cast<std::size_t>(upto - from - 1)].first == upto - 1;
        if (!from_start)
            metrics_.kv_event_gaps.with({s.id, complete ? "replayed" : "resync"}).inc();
        if (complete) {
            if (from_start)
                index_.reset(s.id, true);
            if (const auto last = apply_run(s, *got, from, upto); last && *last == upto - 1)
                return upto - 1;
        }
        index_.reset(s.id, false);
        if (const auto known = bootstrap(s); known >= 0)
            return known;
        LANES_LOG_THROTTLED(
            info, "kv-events",
            s.id << ": batches " << from << ".." << upto - 1
                 << " could not be replayed: approximate until its cache is cleared"
                 << (cfg_.bootstrap_token.empty() ? "" : " or a block dump is read"));
        return -1;
    };

    // The replica's stream started again: its cache is new, so what the router guessed of the old
    // one goes too (the epoch moves; the approximate index forgets it).
    const auto cache_lost = [&](const std::string& id) {
        if (const auto r = pool_.find(id))
            r->epoch.fetch_add(1);
    };

    const auto on_batch = [&](subscription& s, std::int64_t seq, const std::string& payload) {
        // Batches a replay or a dump already covered, queued on the SUB socket meanwhile (a
        // batch 0 is never one: it is a stream starting again).
        if (s.skip_upto >= 0) {
            if (seq > 0 && seq <= s.skip_upto)
                return;
            s.skip_upto = -1;
        }
        std::int64_t known = -1;
        if (s.last_seq >= 0 && seq == s.last_seq + 1) {
            known = seq - 1;
        } else if (s.last_seq >= 0 && seq > s.last_seq + 1) {
            known = catch_up(s, s.last_seq + 1, seq, false);
        } else {
            // The first batch since subscribing, or a sequence that started again (the engine
            // restarted): from its first batch, the stream says everything.
            if (s.last_seq >= 0)
                cache_lost(s.id);
            if (seq == 0)
                index_.reset(s.id, true);
            else
                known = catch_up(s, 0, seq, true);
        }
        if (known >= seq) { // a dump reached past this batch
            s.last_seq = known;
            s.skip_upto = known;
        } else {
            if (!apply(s, payload))
                index_.reset(s.id, false);
            s.last_seq = seq;
        }
        metrics_.kv_event_live.with({s.id}).set(index_.live(s.id) ? 1.0 : 0.0);
    };

    const auto sync = [&] {
        std::map<std::string, std::pair<std::string, std::string>> want;
        for (const auto& r : pool_.all()) {
            // Not before its models are known: its blocks' root in the router's hashes is its
            // model's, and requests are hashed under that name from then on.
            if (!r->models()->known)
                continue;
            const auto st = r->stats();
            const unsigned short port = st.kv_events_port.value_or(cfg_.port);
            if (port == 0)
                continue;
            const unsigned short rport =
                st.kv_events_port ? st.kv_replay_port.value_or(0) : cfg_.replay_port;
            want[r->id()] = {tcp_endpoint(r->address(), port),
                             rport ? tcp_endpoint(r->address(), rport) : std::string()};
        }
        for (auto it = z.subs.begin(); it != z.subs.end();) {
            const auto w = want.find(it->first);
            if (w == want.end() || w->second.first != it->second.endpoint ||
                w->second.second != it->second.replay_endpoint) {
                if (w != want.end())
                    cache_lost(it->first); // a new endpoint: a new process
                index_.forget(it->first);
                it = z.subs.erase(it);
            } else {
                ++it;
            }
        }
        for (const auto& [id, eps] : want) {
            if (z.subs.contains(id))
                continue;
            subscription s{
                id,           eps.first, eps.second, zmq::socket_t(z.ctx, zmq::socket_type::sub),
                std::nullopt, -1,        -1,         std::nullopt};
            try {
                s.sub.set(zmq::sockopt::linger, 0);
                s.sub.set(zmq::sockopt::ipv6, 1);
                s.sub.set(zmq::sockopt::subscribe, cfg_.topic);
                // A frame past the decoder's bound is refused by ZeroMQ before it is stored.
                s.sub.set(zmq::sockopt::maxmsgsize, max_message_bytes);
                s.sub.connect(s.endpoint);
                if (!s.replay_endpoint.empty()) {
                    s.dealer.emplace(z.ctx, zmq::socket_type::dealer);
                    s.dealer->set(zmq::sockopt::linger, 0);
                    s.dealer->set(zmq::sockopt::ipv6, 1);
                    s.dealer->set(zmq::sockopt::maxmsgsize, max_message_bytes);
                    s.dealer->connect(s.replay_endpoint);
                }
            } catch (const zmq::error_t& e) {
                LANES_LOG_THROTTLED(warn, "kv-events",
                                    id << ": cannot subscribe to " << s.endpoint << ": "
                                       << e.what());
                continue;
            }
            LANES_LOG(info, "kv-events",
                      id << ": subscribed to " << s.endpoint
                         << (s.replay_endpoint.empty() ? "" : ", replay " + s.replay_endpoint));
            index_.reset(id, false);
            auto& placed = z.subs.emplace(id, std::move(s)).first->second;
            // What the replica still has from its first batch on (a replica that is idle right
            // now is then known at once, not at its next step), else its block dump.
            const auto got = replay(placed, 0);
            std::int64_t known = -1;
            if (got && !got->empty() && got->front().first == 0) {
                index_.reset(id, true);
                const auto last = apply_run(placed, *got, 0, INT64_MAX);
                if (last && *last == got->back().first)
                    known = *last;
                else
                    index_.reset(id, false);
            }
            if (known < 0 && (!got || !got->empty())) // (none at all: batch 0 is still to come)
                known = bootstrap(placed);
            if (known >= 0) {
                placed.last_seq = known;
                placed.skip_upto = known;
            }
            metrics_.kv_event_live.with({id}).set(index_.live(id) ? 1.0 : 0.0);
            if (const auto r = pool_.find(id))
                r->kv_joined.store(true);
        }
    };

    while (!stopping_.load()) {
        const auto now = clock_type::now();
        // Until warm (readiness waits for it), new replicas are looked for more often.
        const auto every = warmed() ? cfg_.resubscribe_interval
                                    : std::min<std::chrono::milliseconds>(
                                          cfg_.resubscribe_interval, std::chrono::milliseconds(20));
        if (now - last_sync >= every) {
            sync();
            last_sync = now;
        }
        std::vector<zmq::pollitem_t> items;
        std::vector<subscription*> order;
        for (auto& [id, s] : z.subs) {
            items.push_back({s.sub.handle(), 0, ZMQ_POLLIN, 0});
            order.push_back(&s);
        }
        if (items.empty()) {
            std::this_thread::sleep_for(std::chrono::milliseconds(warmed_.load() ? 50 : 10));
            continue;
        }
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(warmed_.load() ? 50 : 10));
        for (std::size_t i = 0; i < items.size(); ++i) {
            if (!(items[i].revents & ZMQ_POLLIN))
                continue;
            subscription& s = *order[i];
            for (int burst = 0; burst < 256; ++burst) { // then the others get their turn
                auto frames = recv_frames(s.sub, 3);
                if (frames.empty())
                    break;
                if (frames.size() != 3) {
                    metrics_.kv_event_errors.with({s.id}).inc();
                    continue;
                }
                const auto seq = ev::read_sequence(frames[1].to_string_view());
                if (!seq || *seq < 0) {
                    metrics_.kv_event_errors.with({s.id}).inc();
                    continue;
                }
                on_batch(s, *seq, frames[2].to_string());
            }
        }
    }
}

} // namespace lanes::router
