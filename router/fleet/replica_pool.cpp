#include "router/fleet/replica_pool.hpp"

#include <algorithm>

namespace lanes::router {

replica::replica(common::http::url u, health_config health_cfg)
    : health(health_cfg)
    , url_(std::move(u))
    , authority_(url_.authority())
    , id_(url_.str()) {}

scraped_stats replica::stats() const {
    std::lock_guard lock(mutex_);
    return stats_;
}

void replica::set_stats(const scraped_stats& s) {
    std::lock_guard lock(mutex_);
    stats_ = s;
    stats_version_.fetch_add(1, std::memory_order_release);
}

std::unique_ptr<common::http::client_connection> replica::take_idle() {
    std::lock_guard lock(mutex_);
    while (!idle_.empty()) {
        auto conn = std::move(idle_.back());
        idle_.pop_back();
        if (conn->is_open())
            return conn;
    }
    return nullptr;
}

void replica::give_back(std::unique_ptr<common::http::client_connection> conn,
                        std::size_t max_idle) {
    std::lock_guard lock(mutex_);
    if (idle_.size() < max_idle && conn->is_open())
        idle_.push_back(std::move(conn));
}

void replica::drop_idle() {
    std::lock_guard lock(mutex_);
    idle_.clear();
}

bool replica_pool::add(const common::http::url& u, std::string source) {
    auto r = std::make_shared<replica>(u, health_cfg_);
    r->source = std::move(source);
    std::unique_lock lock(mutex_);
    for (const auto& existing : replicas_)
        if (existing->id() == r->id())
            return false;
    replicas_.push_back(std::move(r));
    version_.fetch_add(1);
    return true;
}

bool replica_pool::remove(const std::string& id) {
    std::unique_lock lock(mutex_);
    const auto before = replicas_.size();
    std::erase_if(replicas_, [&](const auto& r) { return r->id() == id; });
    if (replicas_.size() == before)
        return false;
    version_.fetch_add(1);
    return true;
}

std::shared_ptr<replica> replica_pool::find(const std::string& id) const {
    std::shared_lock lock(mutex_);
    for (const auto& r : replicas_)
        if (r->id() == id)
            return r;
    return nullptr;
}

std::vector<std::shared_ptr<replica>> replica_pool::all() const {
    std::shared_lock lock(mutex_);
    return replicas_;
}

} // namespace lanes::router
