// Which replica produced a /v1/responses answer. vLLM keeps a response's state in the process
// that made it, so a request that continues it (previous_response_id), retrieves it or cancels it
// must go to that replica. A bounded map, learned from the answers: the least recently used id is
// forgotten first. Thread-safe.
#pragma once

#include <cstddef>
#include <list>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace lanes::router {

class response_affinity {
public:
    explicit response_affinity(std::size_t capacity)
        : capacity_(capacity) {}

    void remember(std::string_view response_id, std::string_view replica_id);
    std::optional<std::string> find(std::string_view response_id);
    std::size_t size() const;

private:
    struct entry {
        std::string replica;
        std::list<std::string>::iterator lru; // this entry's key in lru_
    };
    std::size_t capacity_;
    mutable std::mutex mutex_;
    std::unordered_map<std::string, entry> entries_;
    std::list<std::string> lru_; // most recently used first
};

} // namespace lanes::router
