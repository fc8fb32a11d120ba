#include "router/index/block_table.hpp"

#include <random>

namespace lanes::router {

const std::uint64_t block_table_seed = [] {
    std::random_device rd;
    return (static_cast<std::uint64_t>(rd()) << 32) ^ rd();
}();

} // namespace lanes::router
