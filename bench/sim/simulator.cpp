#include "bench/sim/simulator.hpp"

#include "bench/sim/decision_log.hpp"
#include "bench/sim/request_figures.hpp"
#include "common/prompt/block_hash.hpp"
#include "common/prompt/tokenizer.hpp"
#include "router/fleet/prefill_fit.hpp"
#include "router/index/block_lru.hpp"
#include "router/index/ideal_cache.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <deque>
#include <queue>
#include <random>

namespace lanes::bench::sim {

namespace {

enum class event_kind { arrival, request_arrival, deliver, step_end, scrape, kv_sample, kv_batch };

struct event {
    double t = 0;
    std::uint64_t order = 0; // ties keep insertion order
    event_kind kind = event_kind::arrival;
    std::size_t index = 0; // stream (arrival), request (deliver) or replica (step_end, kv_batch)
    bool operator>(const event& o) const { return t != o.t ? t > o.t : order > o.order; }
};

struct scraped {
    double at = -1;
    replica_load load;
    std::optional<router::prefill_cost> prefill;
};

class run {
public:
    run(const sim_config& cfg, const std::vector<stream>& workload, sim_policy& policy)
        : cfg_(cfg)
        , workload_(workload)
        , policy_(policy)
        , scrape_every_(policy.scrape_interval_s().value_or(cfg.scrape_interval_s)) {
        for (std::size_t i = 0; i < cfg.replicas; ++i) {
            replicas_.push_back(std::make_unique<sim_replica>(cfg.replica));
            router::replica_view v;
            v.id = "replica-" + std::to_string(i);
            if (cfg.report_num_blocks) { // as a lanes replica's scrape says
                v.num_blocks = static_cast<std::int64_t>(cfg.replica.num_blocks);
                v.max_num_seqs = static_cast<std::int64_t>(cfg.replica.max_num_seqs);
            }
            pool_.replicas.push_back(v);
        }
        scrapes_.resize(cfg.replicas);
        fits_.resize(cfg.replicas);
        if (cfg.kv_events) {
            // As a replica's publisher starts: its cache is empty, and the stream says so.
            common::kv_events::batch cleared;
            cleared.events.emplace_back(common::kv_events::all_blocks_cleared{});
            for (std::size_t i = 0; i < cfg.replicas; ++i) {
                replicas_[i]->record_events();
                cfg.kv_events->apply(pool_.replicas[i].id, cleared, common::root_block_hash);
                cfg.kv_events->confirm(pool_.replicas[i].id, pool_.replicas[i].epoch);
            }
            in_transit_.resize(cfg.replicas);
        }
        next_turn_.assign(workload.size(), 0);
        first_request_.reserve(workload.size());
        std::size_t n = 0;
        for (const auto& s : workload) {
            first_request_.push_back(n);
            n += s.size();
        }
        requests_.resize(n);
        decisions_ = std::make_unique<decision_log>(n, cfg.per_request);
        served_.assign(cfg.replicas, 0);
    }

    nlohmann::json go();

private:
    void push(double t, event_kind kind, std::size_t index = 0) {
        queue_.push({t, order_++, kind, index});
    }
    void send(std::size_t stream, double now);
    void deliver(std::size_t request, double now);
    void stream_done(double now);
    bool session_arrivals() const { return cfg_.session_arrivals && cfg_.rate > 0; }
    // One Poisson arrival (session_arrivals): a ready session's next turn, else a new session.
    void request_arrival(double now);
    void kick(std::size_t replica, double now) {
        if (const auto end = replicas_[replica]->start_step(now))
            push(*end, event_kind::step_end, replica);
    }
    void step_end(std::size_t replica, double now);
    void publish(std::size_t replica, double now);
    void receive(std::size_t replica); // its oldest batch in transit reaches the index
    void sample_kv(double now);
    void refresh_pool(double now);
    nlohmann::json report(double wall_s) const;

    const sim_config& cfg_;
    const std::vector<stream>& workload_;
    sim_policy& policy_;
    double scrape_every_;
    std::vector<std::unique_ptr<sim_replica>> replicas_;
    router::pool_snapshot pool_;
    std::vector<scraped> scrapes_;
    std::vector<router::prefill_fit> fits_;
    std::vector<std::size_t> next_turn_;
    std::vector<std::size_t> first_request_;
    std::vector<request_state> requests_;
    std::vector<std::int64_t> served_;
    std::priority_queue<event, std::vector<event>, std::greater<>> queue_;
    std::uint64_t order_ = 0;
    std::size_t next_stream_ = 0; // closed loop, and the next session to start
    // session_arrivals: sessions between turns, by when their think time ends.
    using ready_at = std::pair<double, std::size_t>;
    std::priority_queue<ready_at, std::vector<ready_at>, std::greater<>> ready_;
    std::mt19937_64 arrivals_{cfg_.seed};
    std::size_t sent_ = 0;
    std::size_t finished_ = 0;
    double last_end_ = 0;
    std::unique_ptr<decision_log> decisions_;
    router::ideal_cache ideal_;
    double ideal_hits_ = 0, ideal_queries_ = 0;
    std::vector<token_event> tokens_;
    // KV event batches published and not yet applied, per replica, oldest first.
    std::vector<std::deque<common::kv_events::batch>> in_transit_;
    std::int64_t kv_batches_ = 0;
    nlohmann::json kv_timeline_ = nlohmann::json::array();
};

void run::refresh_pool(double now) {
    for (std::size_t i = 0; i < pool_.replicas.size(); ++i) {
        auto& v = pool_.replicas[i];
        const auto& s = scrapes_[i];
        if (s.at >= 0 && now - s.at <= cfg_.stale_after_s) {
            v.kv_usage = s.load.kv_usage;
            v.waiting = s.load.waiting;
            v.running = s.load.running;
            v.prefill = s.prefill;
        } else {
            v.kv_usage.reset();
            v.waiting.reset();
            v.running.reset();
            v.prefill.reset();
        }
    }
}

void run::send(std::size_t s, double now) {
    const std::size_t turn = next_turn_[s]++;
    const request_spec& spec = workload_[s][turn];
    const std::size_t id = first_request_[s] + turn;
    ++sent_;
    request_state& st = requests_[id];
    st.stream = s;
    st.sent = now;
    st.blocks = common::hash_prompt_blocks(spec.prompt, cfg_.text_block_bytes);
    st.prompt_tokens = spec.prompt.size() + 1;
    sim_request req{id, spec.prompt, st.blocks, st.prompt_tokens, std::nullopt};
    if (spec.session) {
        const auto h = common::hash_block(0, common::encode_prompt(*spec.session));
        req.session = router::session_ref{h, h};
    }
    // The ideal: one cache the size of the fleet's, over every request in the order sent.
    const std::size_t capacity = cfg_.replicas * cfg_.replica.num_blocks;
    const std::size_t cap = (st.prompt_tokens - 1) / cfg_.text_block_bytes;
    ideal_hits_ += static_cast<double>(std::min(ideal_.hit_blocks(st.blocks, capacity), cap) *
                                       cfg_.text_block_bytes);
    ideal_queries_ += static_cast<double>(st.prompt_tokens);

    refresh_pool(now);
    const std::size_t r = std::min(policy_.pick(req, pool_, now), cfg_.replicas - 1);
    st.replica = r;
    decisions_->record(id, spec.prompt, r, replicas_, cfg_.replica.block_size,
                       pool_.replicas[r].inflight, policy_.last_reason());
    ++pool_.replicas[r].inflight;
    ++served_[r];
    policy_.on_routed(req, r, now);
    if (cfg_.path_latency_s > 0)
        push(now + cfg_.path_latency_s, event_kind::deliver, id);
    else
        deliver(id, now);
}

void run::request_arrival(double now) {
    // A ready session's next turn with probability continue_share (always once every session
    // has started), else a new session (a ready one once none is left).
    const bool ready = !ready_.empty() && ready_.top().first <= now;
    const bool fresh = next_stream_ < workload_.size();
    if (ready && (!fresh || std::bernoulli_distribution(cfg_.continue_share)(arrivals_))) {
        const std::size_t s = ready_.top().second;
        ready_.pop();
        send(s, now);
    } else if (fresh) {
        send(next_stream_++, now);
    } // else every session is in flight or thinking: this arrival finds no one
    if (sent_ < requests_.size())
        push(now + std::exponential_distribution<double>(cfg_.rate)(arrivals_),
             event_kind::request_arrival);
}

void run::deliver(std::size_t id, double now) {
    const request_state& st = requests_[id];
    const request_spec& spec = workload_[st.stream][next_turn_[st.stream] - 1];
    replicas_[st.replica]->submit(
        id, common::encode_prompt(spec.prompt),
        static_cast<std::size_t>(std::max<std::int64_t>(spec.max_tokens, 1)), now);
    kick(st.replica, now);
}

void run::stream_done(double now) {
    if (cfg_.rate > 0 || cfg_.trace_times)
        return;
    if (next_stream_ < workload_.size())
        send(next_stream_++, now);
}

void run::publish(std::size_t r, double now) {
    auto events = replicas_[r]->take_events();
    if (events.empty())
        return;
    common::kv_events::batch b;
    b.ts = now;
    b.events = std::move(events);
    ++kv_batches_;
    if (cfg_.kv_event_delay_s <= 0) {
        cfg_.kv_events->apply(pool_.replicas[r].id, b, common::root_block_hash);
        return;
    }
    in_transit_[r].push_back(std::move(b));
    push(now + cfg_.kv_event_delay_s, event_kind::kv_batch, r);
}

void run::receive(std::size_t r) {
    // Batches of one replica arrive in order: each took the same delay.
    auto& q = in_transit_[r];
    cfg_.kv_events->apply(pool_.replicas[r].id, q.front(), common::root_block_hash);
    q.pop_front();
}

void run::sample_kv(double now) {
    double sum = 0, top = 0;
    for (const auto& r : replicas_) {
        sum += r->load().kv_usage;
        top = std::max(top, r->load().kv_usage);
    }
    kv_timeline_.push_back({now, sum / static_cast<double>(replicas_.size()), top});
    push(now + cfg_.kv_sample_interval_s, event_kind::kv_sample);
}

void run::step_end(std::size_t r, double now) {
    tokens_.clear();
    replicas_[r]->finish_step(tokens_);
    if (cfg_.kv_events)
        publish(r, now); // as the engine publishes: once per step, when it ends
    for (const auto& ev : tokens_) {
        request_state& st = requests_[ev.request];
        const auto& spec = workload_[st.stream][next_turn_[st.stream] - 1];
        sim_request req{ev.request, spec.prompt, st.blocks, st.prompt_tokens, std::nullopt};
        ++st.output_tokens;
        if (ev.first) {
            st.first = now;
            policy_.on_first_token(req, r, now);
        }
        if (!ev.finished)
            continue;
        st.end = now;
        last_end_ = std::max(last_end_, now);
        --pool_.replicas[r].inflight;
        policy_.on_done(req, r, now);
        st.blocks.clear();
        st.blocks.shrink_to_fit();
        ++finished_;
        if (next_turn_[st.stream] < workload_[st.stream].size()) {
            // Session arrivals: ready after its think time; otherwise at once.
            if (session_arrivals())
                ready_.emplace(now + workload_[st.stream][next_turn_[st.stream]].think_s,
                               st.stream);
            else
                send(st.stream, now);
        } else
            stream_done(now);
    }
    kick(r, now);
}

nlohmann::json run::go() {
    const auto wall_start = std::chrono::steady_clock::now();
    if (session_arrivals()) {
        push(std::exponential_distribution<double>(cfg_.rate)(arrivals_),
             event_kind::request_arrival);
    } else if (cfg_.rate > 0 || cfg_.trace_times) {
        std::mt19937_64 rng(cfg_.seed);
        std::exponential_distribution<double> gap(cfg_.rate > 0 ? cfg_.rate : 1.0);
        double at = 0;
        for (std::size_t s = 0; s < workload_.size(); ++s) {
            at = cfg_.trace_times ? std::max(0.0, workload_[s].front().arrival_s) : at + gap(rng);
            push(at, event_kind::arrival, s);
        }
    } else {
        const auto n =
            std::min<std::size_t>(static_cast<std::size_t>(cfg_.concurrency), workload_.size());
        for (; next_stream_ < n; ++next_stream_)
            push(0, event_kind::arrival, next_stream_);
    }
    push(0, event_kind::scrape);
    push(0, event_kind::kv_sample);
    const std::size_t total = requests_.size();
    while (!queue_.empty() && finished_ < total) {
        const event ev = queue_.top();
        queue_.pop();
        if (cfg_.clock)
            *cfg_.clock = ev.t;
        switch (ev.kind) {
        case event_kind::arrival:
            send(ev.index, ev.t);
            break;
        case event_kind::request_arrival:
            request_arrival(ev.t);
            break;
        case event_kind::deliver:
            deliver(ev.index, ev.t);
            break;
        case event_kind::step_end:
            step_end(ev.index, ev.t);
            break;
        case event_kind::scrape:
            for (std::size_t i = 0; i < replicas_.size(); ++i) {
                const sim_replica& r = *replicas_[i];
                // The router's cost model fits on what the scrape reads, as live.
                const replica_load load = r.load();
                fits_[i].observe({r.prefill_seconds(), r.prefills(), r.prompt_tokens(),
                                  r.prefix_hits(), r.finished(), ev.t});
                scrapes_[i] = {ev.t, load, fits_[i].cost()};
            }
            push(ev.t + scrape_every_, event_kind::scrape);
            break;
        case event_kind::kv_batch:
            receive(ev.index);
            break;
        case event_kind::kv_sample:
            sample_kv(ev.t);
            break;
        }
    }
    const double wall =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - wall_start).count();
    return report(wall);
}

nlohmann::json run::report(double wall_s) const {
    double hits = 0, queries = 0, max_count = 0, mean_count = 0;
    std::int64_t preemptions = 0, steps = 0;
    nlohmann::json per_replica = nlohmann::json::object();
    for (std::size_t i = 0; i < replicas_.size(); ++i) {
        hits += replicas_[i]->prefix_hits();
        queries += replicas_[i]->prefix_queries();
        preemptions += replicas_[i]->preemptions();
        steps += replicas_[i]->steps();
        per_replica[pool_.replicas[i].id] = served_[i];
        max_count = std::max(max_count, static_cast<double>(served_[i]));
        mean_count += static_cast<double>(served_[i]);
    }
    mean_count /= static_cast<double>(std::max<std::size_t>(replicas_.size(), 1));
    const double duration = last_end_ > 0 ? last_end_ : 1e-9;
    nlohmann::json out = {
        {"modelled", "sim: lanes-bench simulate (virtual clock, sim cost model)"},
        {"policy", std::string(policy_.name())},
        {"replicas", replicas_.size()},
        {"scrape_interval_s", scrape_every_},
        {"prefix_cache_hit_rate",
         {{"measured", queries > 0 ? hits / queries : 0.0},
          {"hit_tokens", hits},
          {"query_tokens", queries},
          {"ideal", ideal_hit_rate(workload_, cfg_.replica.block_size)},
          {"ideal_fleet", ideal_queries_ > 0 ? ideal_hits_ / ideal_queries_ : 0.0}}},
        {"per_replica", per_replica},
        {"imbalance", mean_count > 0 ? max_count / mean_count : 0.0},
        {"reasons", decisions_->reasons()},
        {"kv_events", {{"published", cfg_.kv_events != nullptr}, {"batches", kv_batches_}}},
        {"cache_at_decision", decisions_->cache_at_decision()},
        {"preemptions", preemptions},
        {"steps", steps},
        {"kv_usage", kv_timeline_}, // [t, mean over replicas, max]
        {"simulation_wall_s", wall_s},
    };
    out.update(latency_figures(requests_, duration));
    if (cfg_.per_request)
        out["requests"] = request_rows(requests_, *decisions_);
    return out;
}

} // namespace

router::clock_fn virtual_clock(std::shared_ptr<const double> seconds) {
    return [seconds = std::move(seconds)] {
        return std::chrono::steady_clock::time_point(
            std::chrono::duration_cast<std::chrono::steady_clock::duration>(
                std::chrono::duration<double>(*seconds)));
    };
}

nlohmann::json simulate(const sim_config& cfg, const std::vector<stream>& workload,
                        sim_policy& policy) {
    run r(cfg, workload, policy);
    return r.go();
}

} // namespace lanes::bench::sim
