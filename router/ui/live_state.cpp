#include "router/ui/live_state.hpp"

#include "router/admin.hpp"

#include <nlohmann/json.hpp>

#include <chrono>

namespace lanes::router {

namespace {

double unix_seconds(std::chrono::system_clock::time_point t) {
    return std::chrono::duration<double>(t.time_since_epoch()).count();
}

} // namespace

void live_state::record(routed_request r, std::chrono::steady_clock::time_point ended) {
    std::unique_lock lock(mutex_, std::try_to_lock);
    if (!lock.owns_lock())
        return; // another request is being recorded: this one is left out of the sample
    latest_.push_front({ended, std::move(r)});
    while (latest_.size() > keep_)
        latest_.pop_back();
}

std::string live_state::json(const replica_pool& pool, bool admin, const reason_counts& reasons,
                             std::uint64_t requests_total) const {
    using nlohmann::json;
    json replicas = json::array();
    for (const auto& r : pool.all()) {
        json row = replica_state(*r);
        const auto [error_at, error] = r->last_error();
        json by_reason = json::object();
        if (const auto it = reasons.find(r->id()); it != reasons.end())
            for (const auto& [reason, n] : it->second)
                by_reason[reason] = n;
        row["requests"] = std::move(by_reason);
        row["last_error"] =
            error.empty() ? json(nullptr) : json{{"at", unix_seconds(error_at)}, {"what", error}};
        replicas.push_back(std::move(row));
    }
    json decisions = json::array();
    // Decisions are timed by the steady clock (read once per request already) and written out
    // by the wall clock of now.
    const double now = unix_seconds(std::chrono::system_clock::now());
    const auto steady_now = std::chrono::steady_clock::now();
    std::lock_guard lock(mutex_);
    for (const auto& k : latest_) {
        json weighed = json::array();
        for (const auto& w : k.r.weighed)
            weighed.push_back({{"replica", w.replica},
                               {"estimate_ms", w.estimate_ms},
                               {"cached_blocks", w.cached_blocks},
                               {"queued_tokens", w.queued_tokens}});
        decisions.push_back({{"at", now - std::chrono::duration<double>(steady_now - k.at).count()},
                             {"replica", k.r.replica},
                             {"model", k.r.model},
                             {"reason", k.r.reason},
                             {"status", k.r.status},
                             {"matched_blocks", k.r.matched_blocks},
                             {"blocks", k.r.blocks},
                             {"duration_ms", k.r.duration_ms},
                             {"estimates", std::move(weighed)}});
    }
    return json{{"now", now},
                {"admin", admin},
                {"requests_total", requests_total},
                {"replicas", replicas},
                {"decisions", decisions}}
        .dump();
}

} // namespace lanes::router
