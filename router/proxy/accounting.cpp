#include "router/proxy/accounting.hpp"

#include "common/log.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/metrics.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <charconv>
#include <chrono>
#include <utility>

namespace lanes::router {

namespace {

std::atomic<std::uint64_t> accountings_made{0};

} // namespace

accounting::accounting(router_metrics& metrics, const replica_pool& pool,
                       std::size_t live_decisions, bool access_log, double refusal_log_rate)
    : metrics_(metrics)
    , pool_(pool)
    , live_(live_decisions)
    , access_log_(access_log)
    , instance_(++accountings_made) {
    refusals_.rate = std::max(0.0, refusal_log_rate);
    refusals_.tokens = std::max(1.0, refusals_.rate);
}

void accounting::answered(const common::http::request* req,
                          const common::http::response_writer& out) {
    const int status = out.answered_status();
    if (!access_log_ || out.logged() || status < 400)
        return;
    std::uint64_t held = 0;
    {
        std::lock_guard lock(refusals_.mutex);
        const auto now = std::chrono::steady_clock::now();
        const double burst = std::max(1.0, refusals_.rate);
        if (refusals_.at != std::chrono::steady_clock::time_point{})
            refusals_.tokens =
                std::min(burst, refusals_.tokens +
                                    std::chrono::duration<double>(now - refusals_.at).count() *
                                        refusals_.rate);
        refusals_.at = now;
        if (refusals_.tokens < 1.0) {
            ++refusals_.held;
            return;
        }
        refusals_.tokens -= 1.0;
        held = std::exchange(refusals_.held, 0);
    }
    const std::string_view reason = out.refusal().empty() ? "refused" : out.refusal();
    // The target is printable ASCII without spaces (the parser refuses anything else); the
    // request id is the client's only when it passed acceptable_request_id.
    LANES_LOG(info, "access",
              out.request_id() << " " << (req ? req->method_string() : "-") << " "
                               << (req ? req->target() : "-")
                               << " client=" << out.remote().address().to_string()
                               << " status=" << status << " reason=" << reason
                               << (held ? " (refusals not logged since the last: " : "")
                               << (held ? std::to_string(held) + ")" : std::string()));
}

void accounting::count_for_key(const client& who, int status) {
    if (who.key)
        metrics_.key_requests.with({who.name(), std::to_string(status)}).inc();
}

void accounting::note_routed(const route_request& rr, const decision& d, std::size_t block_tokens) {
    metrics_.predicted_query_tokens.inc(static_cast<double>(rr.prompt_tokens));
    // A replica always computes the prompt's last token, so at most (tokens - 1) / block size
    // blocks can hit (vLLM's cap, which lanes replicas share).
    const std::size_t cap =
        rr.prompt_tokens > 0 && block_tokens > 0 ? (rr.prompt_tokens - 1) / block_tokens : 0;
    metrics_.predicted_hit_tokens.inc(
        static_cast<double>(std::min(d.matched_blocks, cap) * block_tokens));
}

void accounting::account(const common::http::request& req, const dispatch_plan& plan,
                         const std::string& replica_id, const decision& d,
                         const attempt_result& last, std::string_view request_id,
                         std::int64_t attempts, std::vector<weighed_candidate> weighed) {
    // A client that left counts as 499 (nginx's "client closed request"), a stream it cut
    // included.
    const int code = last.client_gone ? 499 : last.status ? last.status : 502;
    requests_counter(replica_id, code, d.reason, plan.model_label).inc();
    count_for_key(plan.who, code);
    const auto ended = std::chrono::steady_clock::now();
    const double took = std::chrono::duration<double>(ended - plan.start).count();
    metrics_.duration.observe(took);
    live_.record({replica_id, plan.model_label, to_string(d.reason), code, d.matched_blocks,
                  plan.blocks.size(), took * 1000.0, std::move(weighed)},
                 ended);
    if (!access_log_)
        return;
    LANES_LOG(info, "access",
              request_id << " " << req.target() << (plan.who.key ? " key=" : "") << plan.who.name()
                         << " replica=" << replica_id << " reason=" << to_string(d.reason)
                         << " status=" << code << " cached_blocks=" << d.matched_blocks << "/"
                         << plan.blocks.size() << " attempts=" << attempts
                         << " duration_ms=" << took * 1000.0
                         << (last.client_gone ? " client_closed"
                             : last.answered  ? ""
                                              : " stream_broken"));
}

std::string accounting::live_json(bool admin) const {
    live_state::reason_counts reasons;
    std::uint64_t total = 0;
    // lanes_router_requests_total{replica, code, reason, model}: summed by replica and reason.
    metrics_.requests.for_each([&](const common::metrics::label_values& v, const auto& c) {
        const auto n = static_cast<std::uint64_t>(c.value());
        total += n;
        if (v.size() == 4 && v[0] != "none")
            reasons[v[0]][v[2]] += n;
    });
    return live_.json(pool_, admin, reasons, total);
}

common::metrics::counter& accounting::requests_counter(const std::string& replica_id, int status,
                                                       route_reason reason,
                                                       const std::string& model) {
    // The last child used on this thread, keyed by this object's number (never reused, unlike
    // its address), so a child of metrics that are gone is never handed out.
    struct last_used {
        std::uint64_t owner = 0;
        std::uint64_t generation = 0; // of the family: a retired child is not handed out
        std::string replica;
        int status = 0;
        route_reason reason{};
        std::string model;
        common::metrics::counter* counter = nullptr;
    };
    thread_local last_used last;
    const std::uint64_t generation = metrics_.requests.generation();
    if (last.owner == instance_ && last.generation == generation && last.status == status &&
        last.reason == reason && last.replica == replica_id && last.model == model)
        return *last.counter;
    std::array<char, 12> code{};
    const auto code_end = std::to_chars(code.data(), code.data() + code.size(), status).ptr;
    auto& counter = metrics_.requests.with(
        {replica_id,
         std::string_view(code.data(), static_cast<std::size_t>(code_end - code.data())),
         to_string(reason), model});
    last = {instance_, generation, replica_id, status, reason, model, &counter};
    return counter;
}

} // namespace lanes::router
