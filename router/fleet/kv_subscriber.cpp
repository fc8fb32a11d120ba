#include "router/fleet/kv_subscriber.hpp"

#include "common/kv_events/events.hpp"
#include "common/log.hpp"
#include "router/fleet/kv_sources.hpp"
#include "router/fleet/sequence_tracker.hpp"
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

// The options every socket of the subscriber takes: no linger at close, IPv6 allowed, and a
// frame past the decoder's bound refused by ZeroMQ before it is stored.
void set_common_options(zmq::socket_t& s) {
    s.set(zmq::sockopt::linger, 0);
    s.set(zmq::sockopt::ipv6, 1);
    s.set(zmq::sockopt::maxmsgsize, max_message_bytes);
}

} // namespace

struct kv_subscriber::subscription {
    std::string id;
    std::string endpoint, replay_endpoint;
    zmq::socket_t sub;
    std::optional<zmq::socket_t> dealer;
    sequence_tracker sequence;
    std::optional<clock_type::time_point> bootstrapped_at; // the last dump asked for
};

struct kv_subscriber::sockets {
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
        if (!r->monitor.probe_answered
                 .load()) // every replica's first probe back: none still unknown
            return false;
        if (!r->monitor.probe_ok.load(std::memory_order_relaxed))
            continue;
        any = true;
        if (!r->models()->known || !r->monitor.scrape_answered.load())
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

std::optional<replayed_batches> kv_subscriber::replay(subscription& s, std::int64_t from) {
    if (!s.dealer)
        return std::nullopt;
    return request_replay(*s.dealer, from, cfg_.replay_timeout, stopping_);
}

void kv_subscriber::apply_batch(const subscription& s, const ev::batch& b) {
    const auto r = pool_.find(s.id);
    if (!r)
        return;
    index_.apply(s.id, b, [&](const ev::block_stored& st) {
        return root_for_(*r, st.lora_name.value_or(""), st.cache_salt_hash.value_or(0));
    });
    index_.confirm(s.id, r->epoch.load());
}

bool kv_subscriber::apply(const subscription& s, const std::string& payload) {
    ev::batch b;
    std::string error;
    if (!ev::decode(payload, b, error)) {
        metrics_.kv_event_errors.with({s.id}).inc();
        LANES_LOG_THROTTLED_BY(warn, "kv-events", s.id, 1000,
                               s.id << ": a batch that does not decode: " << error);
        return false;
    }
    apply_batch(s, b);
    metrics_.kv_event_batches.with({s.id}).inc();
    return true;
}

std::optional<std::int64_t> kv_subscriber::apply_run(const subscription& s,
                                                     const replayed_batches& got, std::int64_t from,
                                                     std::int64_t upto) {
    std::int64_t next = from;
    for (const auto& [seq, payload] : got) {
        if (seq != next || seq >= upto)
            break;
        if (!apply(s, payload))
            return std::nullopt;
        ++next;
    }
    return next - 1;
}

std::optional<std::int64_t> kv_subscriber::bootstrap(subscription& s) {
    if (cfg_.bootstrap_token.empty())
        return std::nullopt;
    const auto now = clock_type::now();
    if (s.bootstrapped_at && now - *s.bootstrapped_at < cfg_.bootstrap_retry)
        return std::nullopt;
    s.bootstrapped_at = now;
    const auto r = pool_.find(s.id);
    if (!r)
        return std::nullopt;
    const auto read = read_block_dump(
        r->address(), {cfg_.bootstrap_token, cfg_.bootstrap_timeout, cfg_.bootstrap_max_bytes});
    const auto fail = [&](dump_outcome outcome, const std::string& why) {
        metrics_.kv_bootstraps.with({s.id, std::string(to_string(outcome))}).inc();
        LANES_LOG_THROTTLED_BY(warn, "kv-events", s.id, 1000, s.id << ": no block dump: " << why);
        return std::nullopt;
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
            return fail(dump_outcome::undecodable, "a replayed batch that does not decode");
        }
        known = *last;
    }
    metrics_.kv_bootstraps.with({s.id, std::string(to_string(dump_outcome::ok))}).inc();
    LANES_LOG(info, "kv-events",
              s.id << ": warmed from its block dump (" << index_.size(s.id)
                   << " blocks, the stream from batch " << next << " on)");
    return known;
}

std::optional<std::int64_t> kv_subscriber::catch_up(subscription& s, std::int64_t from,
                                                    std::int64_t upto, bool from_start) {
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
    if (const auto known = bootstrap(s))
        return known;
    LANES_LOG_THROTTLED_BY(
        info, "kv-events", s.id, 1000,
        s.id << ": batches " << from << ".." << upto - 1
             << " could not be replayed: approximate until its cache is cleared"
             << (cfg_.bootstrap_token.empty() ? "" : " or a block dump is read"));
    return std::nullopt;
}

void kv_subscriber::cache_lost(const std::string& id) {
    if (const auto r = pool_.find(id))
        r->epoch.fetch_add(1);
}

void kv_subscriber::publish_live(const std::string& id) {
    metrics_.kv_event_live.with({id}).set(index_.live(id) ? 1.0 : 0.0);
}

void kv_subscriber::on_batch(subscription& s, std::int64_t seq, const std::string& payload) {
    const sequence_tracker::step step = s.sequence.next(seq);
    if (step.what == sequence_tracker::action::skip)
        return;
    if (step.cache_lost)
        cache_lost(s.id);
    std::optional<std::int64_t> known;
    if (step.what == sequence_tracker::action::restart)
        index_.reset(s.id, true);
    else if (step.what == sequence_tracker::action::catch_up)
        known = catch_up(s, step.from, step.upto, step.from_start);
    if (!known || *known < seq) {
        if (!apply(s, payload))
            index_.reset(s.id, false);
    }
    s.sequence.done(seq, known);
    publish_live(s.id);
}

void kv_subscriber::sync() {
    std::map<std::string, std::pair<std::string, std::string>> want; // id: live, replay
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
    for (auto it = z_->subs.begin(); it != z_->subs.end();) {
        const auto w = want.find(it->first);
        if (w == want.end() || w->second.first != it->second.endpoint ||
            w->second.second != it->second.replay_endpoint) {
            if (w != want.end())
                cache_lost(it->first); // a new endpoint: a new process
            index_.forget(it->first);
            it = z_->subs.erase(it);
        } else {
            ++it;
        }
    }
    for (const auto& [id, eps] : want)
        if (!z_->subs.contains(id))
            join(id, eps.first, eps.second);
}

void kv_subscriber::join(const std::string& id, const std::string& endpoint,
                         const std::string& replay_endpoint) {
    subscription s{
        id,           endpoint, replay_endpoint, zmq::socket_t(z_->ctx, zmq::socket_type::sub),
        std::nullopt, {},       std::nullopt};
    try {
        set_common_options(s.sub);
        s.sub.set(zmq::sockopt::subscribe, cfg_.topic);
        s.sub.connect(s.endpoint);
        if (!s.replay_endpoint.empty()) {
            s.dealer.emplace(z_->ctx, zmq::socket_type::dealer);
            set_common_options(*s.dealer);
            s.dealer->connect(s.replay_endpoint);
        }
    } catch (const zmq::error_t& e) {
        LANES_LOG_THROTTLED_BY(warn, "kv-events", id, 1000,
                               id << ": cannot subscribe to " << s.endpoint << ": " << e.what());
        return;
    }
    LANES_LOG(info, "kv-events",
              id << ": subscribed to " << s.endpoint
                 << (s.replay_endpoint.empty() ? "" : ", replay " + s.replay_endpoint));
    index_.reset(id, false);
    auto& placed = z_->subs.emplace(id, std::move(s)).first->second;
    // What the replica still has from its first batch on (a replica that is idle right now is
    // then known at once, not at its next step), else its block dump.
    const auto got = replay(placed, 0);
    std::optional<std::int64_t> known;
    if (got && !got->empty() && got->front().first == 0) {
        index_.reset(id, true);
        const auto last = apply_run(placed, *got, 0, INT64_MAX);
        if (last && *last == got->back().first)
            known = *last;
        else
            index_.reset(id, false);
    }
    if (!known && (!got || !got->empty())) // (none at all: batch 0 is still to come)
        known = bootstrap(placed);
    placed.sequence.joined(known);
    publish_live(id);
    if (const auto r = pool_.find(id))
        r->kv_joined.store(true);
}

void kv_subscriber::poll(std::chrono::milliseconds wait) {
    std::vector<zmq::pollitem_t> items;
    std::vector<subscription*> order;
    for (auto& [id, s] : z_->subs) {
        items.push_back({s.sub.handle(), 0, ZMQ_POLLIN, 0});
        order.push_back(&s);
    }
    if (items.empty()) {
        std::this_thread::sleep_for(wait);
        return;
    }
    zmq::poll(items.data(), items.size(), wait);
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (!(items[i].revents & ZMQ_POLLIN))
            continue;
        subscription& s = *order[i];
        for (int burst = 0; burst < cfg_.max_batches_per_turn; ++burst) {
            auto frames = recv_frames(s.sub, 3);
            if (frames.empty())
                break;
            const auto seq =
                frames.size() == 3 ? ev::read_sequence(frames[1].to_string_view()) : std::nullopt;
            if (!seq || *seq < 0) {
                metrics_.kv_event_errors.with({s.id}).inc();
                continue;
            }
            on_batch(s, *seq, frames[2].to_string());
        }
    }
}

void kv_subscriber::run() {
    z_ = std::make_unique<sockets>();
    auto last_sync = clock_type::time_point{};
    while (!stopping_.load()) {
        const auto now = clock_type::now();
        // Until warm (readiness waits for it), new replicas are looked for more often.
        const bool warm = warmed();
        const auto every = warm ? cfg_.resubscribe_interval
                                : std::min(cfg_.resubscribe_interval, cfg_.warming_resubscribe);
        if (now - last_sync >= every) {
            sync();
            last_sync = now;
        }
        poll(warm ? cfg_.poll_interval : cfg_.warming_poll_interval);
    }
    z_.reset(); // the sockets close on this thread, before the context
}

} // namespace lanes::router
