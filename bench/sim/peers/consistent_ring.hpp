// A consistent-hash ring of workers with virtual nodes, shared by the peers that place a request
// by a hash of its first characters (SGLang prefix_hash, KubeAI's CHWBL).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace lanes::bench::sim {

class consistent_ring {
public:
    // `vnodes` points per worker, placed by hashing "id#k".
    void build(const std::vector<std::string>& ids, std::size_t vnodes);
    bool empty() const { return points_.empty(); }
    std::size_t workers() const { return workers_; }
    // Position of the first point at or after `h` (wrapping), and the worker of a position.
    std::size_t first_at(std::uint64_t h) const;
    std::size_t next(std::size_t pos) const { return (pos + 1) % points_.size(); }
    std::size_t worker_at(std::size_t pos) const { return points_[pos].second; }
    std::size_t size() const { return points_.size(); }

private:
    std::vector<std::pair<std::uint64_t, std::size_t>> points_;
    std::size_t workers_ = 0;
};

} // namespace lanes::bench::sim
