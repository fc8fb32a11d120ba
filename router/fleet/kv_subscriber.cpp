#include "router/fleet/kv_subscriber.hpp"

#include "common/kv_events/events.hpp"
#include "common/log.hpp"
#include "router/metrics.hpp"

#include <zmq.hpp>

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
    std::int64_t last_seq = -1; // of the last batch applied; -1: none since subscribing
};

// The frames of one message: up to `max` kept, the rest read and dropped.
std::vector<zmq::message_t> recv_frames(zmq::socket_t& s, std::size_t max) {
    std::vector<zmq::message_t> frames;
    for (;;) {
        zmq::message_t m;
        if (!s.recv(m, zmq::recv_flags::dontwait))
            break;
        const bool more = m.more();
        if (frames.size() < max)
            frames.push_back(std::move(m));
        if (!more)
            break;
    }
    return frames;
}

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
    thread_ = std::thread([this] { run(); });
}

void kv_subscriber::stop() {
    stopping_.store(true);
    if (thread_.joinable())
        thread_.join();
}

void kv_subscriber::run() {
    impl z;
    auto last_sync = clock_type::time_point{};

    // Batches from `from` on, from the replica's replay socket, in order, until the end marker
    // or the timeout; empty when it has no replay socket or does not answer.
    const auto replay = [&](subscription& s, std::int64_t from) {
        std::vector<std::pair<std::int64_t, std::string>> got;
        if (!s.dealer)
            return got;
        const std::string seq = ev::sequence_frame(from);
        try {
            s.dealer->send(zmq::const_buffer("", 0), zmq::send_flags::sndmore);
            s.dealer->send(zmq::buffer(seq), zmq::send_flags::none);
        } catch (const zmq::error_t&) {
            return got;
        }
        const auto deadline = clock_type::now() + cfg_.replay_timeout;
        while (!stopping_.load()) {
            const auto left =
                std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock_type::now());
            if (left.count() <= 0)
                break;
            zmq::pollitem_t item{s.dealer->handle(), 0, ZMQ_POLLIN, 0};
            zmq::poll(&item, 1, left);
            if (!(item.revents & ZMQ_POLLIN))
                continue;
            auto frames = recv_frames(*s.dealer, 3); // "", seq, payload
            if (frames.size() != 3)
                continue;
            const auto n = ev::read_sequence(frames[1].to_string_view());
            if (!n)
                continue;
            if (*n == -1)
                return got; // the end marker
            got.emplace_back(*n, frames[2].to_string());
        }
        got.clear(); // cut short: not to be trusted as complete
        return got;
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
        const auto r = pool_.find(s.id);
        if (!r)
            return true;
        // Stores of one batch share the replica's root unless a LoRA adapter names its own.
        std::string lora;
        for (const auto& e : b.events)
            if (const auto* st = std::get_if<ev::block_stored>(&e); st && st->lora_name)
                lora = *st->lora_name;
        index_.apply(s.id, b, root_for_(*r, lora));
        index_.confirm(s.id, r->epoch.load());
        metrics_.kv_event_batches.with({s.id}).inc();
        return true;
    };

    // Starts `s` over from what its replay socket still has: complete (live) when that reaches
    // back to the first batch and up to `upto` - 1; otherwise not live until AllBlocksCleared.
    const auto catch_up = [&](subscription& s, std::int64_t from, std::int64_t upto,
                              bool from_start) {
        auto got = replay(s, from);
        bool complete = !got.empty() && got.front().first == from;
        std::int64_t next = from;
        for (const auto& [seq, payload] : got) {
            if (seq >= upto)
                break;
            complete = complete && seq == next;
            ++next;
        }
        complete = complete && next == upto;
        if (from_start || !complete)
            index_.reset(s.id, complete && from_start);
        if (!from_start)
            metrics_.kv_event_gaps.with({s.id, complete ? "replayed" : "resync"}).inc();
        if (!complete) {
            LANES_LOG_THROTTLED(info, "kv-events",
                                s.id << ": batches " << from << ".." << upto - 1
                                     << " could not be replayed: approximate until its cache is "
                                        "cleared");
            return;
        }
        for (const auto& [seq, payload] : got) {
            if (seq >= upto)
                break;
            if (!apply(s, payload)) {
                index_.reset(s.id, false);
                return;
            }
        }
    };

    // The replica's stream started again: its cache is new, so what the router guessed of the old
    // one goes too (the epoch moves; the approximate index forgets it).
    const auto cache_lost = [&](const std::string& id) {
        if (const auto r = pool_.find(id))
            r->epoch.fetch_add(1);
    };

    const auto on_batch = [&](subscription& s, std::int64_t seq, const std::string& payload) {
        if (s.last_seq >= 0 && seq == s.last_seq + 1) {
            if (!apply(s, payload))
                index_.reset(s.id, false);
        } else if (s.last_seq >= 0 && seq > s.last_seq + 1) {
            catch_up(s, s.last_seq + 1, seq, false);
            if (!apply(s, payload))
                index_.reset(s.id, false);
        } else {
            // The first batch since subscribing, or a sequence that started again (the engine
            // restarted): from its first batch, the stream says everything.
            if (s.last_seq >= 0)
                cache_lost(s.id);
            if (seq == 0)
                index_.reset(s.id, true);
            else
                catch_up(s, 0, seq, true);
            if (!apply(s, payload))
                index_.reset(s.id, false);
        }
        s.last_seq = seq;
        metrics_.kv_event_live.with({s.id}).set(index_.live(s.id) ? 1.0 : 0.0);
    };

    const auto sync = [&] {
        std::map<std::string, std::pair<std::string, std::string>> want;
        for (const auto& r : pool_.all()) {
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
            subscription s{id,           eps.first,
                           eps.second,   zmq::socket_t(z.ctx, zmq::socket_type::sub),
                           std::nullopt, -1};
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
            // What the replica still has from its first batch on: a replica that is idle right
            // now is then known at once, not at its next step.
            auto got = replay(placed, 0);
            bool complete = !got.empty() && got.front().first == 0;
            for (std::size_t k = 0; complete && k < got.size(); ++k)
                complete = got[k].first == static_cast<std::int64_t>(k);
            if (complete) {
                index_.reset(id, true);
                for (const auto& [seq, payload] : got)
                    if (!apply(placed, payload)) {
                        index_.reset(id, false);
                        break;
                    }
                placed.last_seq = got.back().first;
                metrics_.kv_event_live.with({id}).set(index_.live(id) ? 1.0 : 0.0);
            }
        }
    };

    while (!stopping_.load()) {
        const auto now = clock_type::now();
        if (now - last_sync >= cfg_.resubscribe_interval) {
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
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
            continue;
        }
        zmq::poll(items.data(), items.size(), std::chrono::milliseconds(50));
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
