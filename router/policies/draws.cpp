#include "router/policies/draws.hpp"

#include <limits>

namespace lanes::router {

std::uint64_t seeded_draws::stream::next() {
    std::uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

std::size_t seeded_draws::stream::below(std::size_t n) {
    const auto range = static_cast<std::uint64_t>(n);
    constexpr std::uint64_t max = std::numeric_limits<std::uint64_t>::max();
    const std::uint64_t limit = max - max % range; // draws at or above it would bias the modulo
    std::uint64_t x = next();
    while (x >= limit)
        x = next();
    return static_cast<std::size_t>(x % range);
}

} // namespace lanes::router
