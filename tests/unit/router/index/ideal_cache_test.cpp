// The ideal cache: one LRU as large as the fleet, so a prefix seen before hits until the traffic
// since has pushed it out.
#include "router/index/ideal_cache.hpp"

#include <catch2/catch.hpp>

#include <vector>

using namespace lanes;

TEST_CASE("ideal cache: seen prefixes hit until evicted, capacity follows the fleet", "[ideal]") {
    router::ideal_cache ideal;
    const std::vector<common::block_hash> a = {1, 2, 3, 4}, a2 = {1, 2, 9}, b = {5, 6, 7, 8};
    CHECK(ideal.hit_blocks(a, 8) == 0);
    CHECK(ideal.hit_blocks(a2, 8) == 2); // shares a's first two blocks
    CHECK(ideal.hit_blocks(a, 8) == 4);
    CHECK(ideal.hit_blocks(b, 8) == 0); // 9 blocks seen, 8 kept: the least recent, 9, goes
    CHECK(ideal.hit_blocks(a, 8) == 4);
    CHECK(ideal.hit_blocks(a2, 8) == 2);
    // A smaller fleet keeps less; none keeps nothing.
    CHECK(ideal.hit_blocks(b, 4) == 0);
    CHECK(ideal.hit_blocks(b, 4) == 4);
    CHECK(ideal.hit_blocks(b, 0) == 0);
    CHECK(ideal.hit_blocks(b, 8) == 0);
}
