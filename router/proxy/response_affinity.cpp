#include "router/proxy/response_affinity.hpp"

namespace lanes::router {

void response_affinity::remember(std::string_view response_id, std::string_view replica_id) {
    if (capacity_ == 0 || response_id.empty())
        return;
    std::lock_guard lock(mutex_);
    const std::string key(response_id);
    if (auto it = entries_.find(key); it != entries_.end()) {
        it->second.replica = std::string(replica_id);
        lru_.splice(lru_.begin(), lru_, it->second.lru);
        return;
    }
    lru_.push_front(key);
    entries_.emplace(key, entry{std::string(replica_id), lru_.begin()});
    while (entries_.size() > capacity_) {
        entries_.erase(lru_.back());
        lru_.pop_back();
    }
}

std::optional<std::string> response_affinity::find(std::string_view response_id) {
    std::lock_guard lock(mutex_);
    const auto it = entries_.find(std::string(response_id));
    if (it == entries_.end())
        return std::nullopt;
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    return it->second.replica;
}

std::size_t response_affinity::size() const {
    std::lock_guard lock(mutex_);
    return entries_.size();
}

} // namespace lanes::router
