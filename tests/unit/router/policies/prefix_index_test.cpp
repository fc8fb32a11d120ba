#include "router/policies/prefix_index.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

using namespace lanes::router;
using namespace lanes::router::test;
using lanes::common::block_hash;

TEST_CASE("prefix_index matches the longest leading run", "[policy][prefix_index]") {
    prefix_index index(100);
    index.insert("r0", std::vector<block_hash>{1, 2, 3, 4});
    CHECK(index.match("r0", std::vector<block_hash>{1, 2, 3, 9}) == 3);
    CHECK(index.match("r0", std::vector<block_hash>{1, 2, 3, 4, 5}) == 4);
    CHECK(index.match("r0", std::vector<block_hash>{9, 1, 2}) == 0);
    CHECK(index.match("r0", std::vector<block_hash>{}) == 0);
    CHECK(index.match("r1", std::vector<block_hash>{1, 2}) == 0);
    CHECK(index.size("r0") == 4);
    CHECK(index.size("r1") == 0);
}

TEST_CASE("prefix_index stays within capacity after many inserts", "[policy][prefix_index]") {
    prefix_index index(100);
    for (std::uint64_t family = 0; family < 1'000; ++family) {
        index.insert("r0", make_blocks(family, 8));
        REQUIRE(index.size("r0") <= 100);
    }
    CHECK(index.size("r0") == 100);
    CHECK(index.match("r0", make_blocks(999, 8)) == 8); // the newest survive
    CHECK(index.match("r0", make_blocks(0, 8)) == 0);   // the oldest are gone
}

TEST_CASE("prefix_index evicts the least recently used prefix", "[policy][prefix_index]") {
    prefix_index index(8);
    const auto a = make_blocks(1, 4);
    const auto b = make_blocks(2, 4);
    index.insert("r0", a);
    index.insert("r0", b);
    index.insert("r0", a); // touch a: b is now the older
    index.insert("r0", make_blocks(3, 4));
    CHECK(index.match("r0", a) == 4);
    CHECK(index.match("r0", b) == 0);
}

TEST_CASE("prefix_index evicts the deepest blocks of a prefix first", "[policy][prefix_index]") {
    prefix_index index(6);
    const auto a = make_blocks(1, 4);
    index.insert("r0", a);
    index.insert("r0", make_blocks(2, 4)); // two of a's blocks must go: its last two
    CHECK(index.size("r0") == 6);
    CHECK(index.match("r0", a) == 2);

    prefix_index small(5);
    small.insert("r0", make_blocks(3, 10)); // longer than the capacity: the head is kept
    CHECK(small.size("r0") == 5);
    CHECK(small.match("r0", make_blocks(3, 10)) == 5);
}

TEST_CASE("prefix_index takes capacities from num_blocks", "[policy][prefix_index]") {
    prefix_index index(100);
    index.insert("r0", make_blocks(1, 50));
    auto pool = make_pool(2);
    pool.replicas[0].num_blocks = 20;
    index.update_capacities(pool);
    CHECK(index.capacity("r0") == 20);
    CHECK(index.capacity("r1") == 100);
    CHECK(index.size("r0") == 20);
    CHECK(index.match("r0", make_blocks(1, 50)) == 20);
    pool.replicas[0].num_blocks.reset();
    index.update_capacities(pool);
    CHECK(index.capacity("r0") == 100);
}

TEST_CASE("prefix_index forgets replicas that left", "[policy][prefix_index]") {
    prefix_index index(100);
    index.insert("r0", make_blocks(1, 4));
    index.insert("r1", make_blocks(2, 4));
    CHECK(!index.empty());
    auto pool = make_pool(2);
    pool.replicas.erase(pool.replicas.begin()); // r0 left
    index.retain(pool);
    CHECK(index.size("r0") == 0);
    CHECK(index.match("r0", make_blocks(1, 4)) == 0);
    CHECK(index.match("r1", make_blocks(2, 4)) == 4);
    CHECK(!index.empty());
    index.forget("r1");
    CHECK(index.empty());
}
