#include "router/policies/session.hpp"

#include "router/policies/factory.hpp"

#include "router/policies/load.hpp"
#include "router/policies/rendezvous.hpp"

#include <algorithm>

namespace lanes::router {

session_policy::session_policy(const policy_options& options)
    : fallback_(options)
    , clock_(options.clock)
    , ttl_(options.session.ttl)
    , capacity_(std::max<std::size_t>(options.session.capacity, 1))
    , load_factor_(options.session.load_factor)
    , cap_floor_(options.load.cap_floor) {}

void session_policy::expire(time_point now) {
    // The list is in order of last use, so the expired sessions are at its back.
    while (!lru_.empty()) {
        const auto it = sessions_.find(lru_.back());
        if (now - it->second.last_used <= ttl_)
            break;
        lru_.pop_back();
        sessions_.erase(it);
    }
}

void session_policy::remember(std::uint64_t key, const std::string& replica_id, time_point now) {
    if (auto it = sessions_.find(key); it != sessions_.end()) {
        it->second.replica_id = replica_id;
        it->second.last_used = now;
        lru_.splice(lru_.begin(), lru_, it->second.lru_pos);
        return;
    }
    while (sessions_.size() >= capacity_) {
        sessions_.erase(lru_.back());
        lru_.pop_back();
    }
    auto [it, inserted] = sessions_.emplace(key, entry{replica_id, now, {}});
    lru_.push_front(key);
    it->second.lru_pos = lru_.begin();
}

std::size_t session_policy::on_routed(const route_request& req, const std::string& replica_id) {
    if (!req.session)
        return fallback_.on_routed(req, replica_id);
    const time_point now = clock_();
    expire(now);
    remember(req.session->key, replica_id, now);
    return 0;
}

decision session_policy::choose(const route_request& req, const pool_snapshot& pool,
                                const exclusion& out) const {
    if (!req.session)
        return fallback_.pick(req, pool, out.tried, out.full);
    const std::vector<std::size_t> candidates = eligible_indices(pool, req, out.tried, out.full);
    if (candidates.empty())
        return {std::nullopt, route_reason::session_new, 0};
    // Placed by the hash every router computes alike, as 8 bytes.
    const std::uint64_t place = req.session->place;
    const std::string_view place_key(reinterpret_cast<const char*>(&place), sizeof place);
    const std::int64_t cap = load_cap(pool, candidates, load_factor_, cap_floor_);

    route_reason reason = route_reason::session_new;
    const auto it = sessions_.find(req.session->key);
    if (it != sessions_.end() && clock_() - it->second.last_used <= ttl_) {
        const auto same = std::find_if(candidates.begin(), candidates.end(), [&](std::size_t i) {
            return pool.replicas[i].id == it->second.replica_id;
        });
        if (same != candidates.end() && within_cap(pool.replicas[*same], cap))
            return {*same, route_reason::session_sticky, 0};
        reason = route_reason::session_spill;
    }
    return {*rendezvous_bounded(place_key, pool, candidates, cap), reason, 0};
}

} // namespace lanes::router
