#include "router/index/block_lru.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <list>
#include <random>

using lanes::common::block_hash;
using lanes::router::block_lru;

TEST_CASE("block_lru keeps the most recently used entries", "[policy][block_lru]") {
    block_lru lru(3);
    for (block_hash h : {1, 2, 3})
        lru.touch(h);
    CHECK(lru.recency_order() == std::vector<block_hash>{3, 2, 1});
    lru.touch(1); // 1 is now the newest, 2 the oldest
    lru.touch(4); // evicts 2
    CHECK(lru.size() == 3);
    CHECK(lru.contains(1));
    CHECK_FALSE(lru.contains(2));
    CHECK(lru.recency_order() == std::vector<block_hash>{4, 1, 3});
    lru.set_capacity(1);
    CHECK(lru.recency_order() == std::vector<block_hash>{4});
    lru.set_capacity(0);
    lru.touch(5);
    CHECK(lru.size() == 0);
    CHECK_FALSE(lru.contains(4));
}

// The table's deletion shifts probe runs back; a reference LRU (list) under random touches, with
// hashes drawn so that many share home slots, checks that nothing is lost or left behind.
TEST_CASE("block_lru erases entries anywhere in the recency order", "[policy][block_lru]") {
    block_lru lru(4);
    for (block_hash h : {1, 2, 3, 4})
        lru.touch(h);
    CHECK_FALSE(lru.erase(9));
    CHECK(lru.erase(3)); // the middle
    CHECK(lru.recency_order() == std::vector<block_hash>{4, 2, 1});
    CHECK(lru.erase(4)); // the head
    CHECK(lru.erase(1)); // the tail
    CHECK(lru.recency_order() == std::vector<block_hash>{2});
    lru.touch(5);
    lru.touch(6);
    lru.touch(7);
    lru.touch(8); // full again: evicts 2
    CHECK(lru.recency_order() == std::vector<block_hash>{8, 7, 6, 5});
    CHECK(lru.erase(8));
    CHECK(lru.erase(7));
    CHECK(lru.erase(6));
    CHECK(lru.erase(5));
    CHECK(lru.size() == 0);
    CHECK(lru.recency_order().empty());
    lru.touch(10);
    CHECK(lru.recency_order() == std::vector<block_hash>{10});
}

TEST_CASE("block_lru agrees with a list LRU under random use", "[policy][block_lru]") {
    std::mt19937_64 rng(11);
    for (std::size_t capacity : {1, 7, 64, 500}) {
        block_lru lru(capacity);
        std::list<block_hash> reference; // most recent first
        for (int step = 0; step < 20'000; ++step) {
            // Few distinct values in the low and high bits: heavy collisions and long probe runs.
            const block_hash h = (rng() % (3 * capacity + 5)) * 0x100000001ULL;
            if (rng() % 50 == 0) {
                const std::size_t new_capacity = 1 + rng() % (2 * capacity);
                lru.set_capacity(new_capacity);
                if (reference.size() > new_capacity)
                    reference.resize(new_capacity);
                capacity = new_capacity;
            }
            if (rng() % 4 == 0) { // a chain of distinct blocks, as prefix_index inserts them
                std::vector<block_hash> chain;
                for (std::size_t n = 1 + rng() % (capacity + 3); chain.size() < n;) {
                    const block_hash c = (rng() % (3 * capacity + 5)) * 0x100000001ULL;
                    if (std::find(chain.begin(), chain.end(), c) == chain.end())
                        chain.push_back(c);
                }
                lru.touch_in_order(chain);
                if (chain.size() > capacity)
                    chain.resize(capacity);
                for (auto it = chain.rbegin(); it != chain.rend(); ++it) {
                    reference.remove(*it);
                    reference.push_front(*it);
                }
            } else if (rng() % 5 == 0) { // a failed request's blocks forgotten again
                const bool held =
                    std::find(reference.begin(), reference.end(), h) != reference.end();
                REQUIRE(lru.erase(h) == held);
                reference.remove(h);
            } else {
                lru.touch(h);
                reference.remove(h);
                reference.push_front(h);
            }
            while (reference.size() > capacity)
                reference.pop_back();
            const block_hash probe = (rng() % (3 * capacity + 5)) * 0x100000001ULL;
            REQUIRE(lru.contains(probe) ==
                    (std::find(reference.begin(), reference.end(), probe) != reference.end()));
            REQUIRE(lru.size() == reference.size());
        }
        CHECK(lru.recency_order() == std::vector<block_hash>(reference.begin(), reference.end()));
    }
}
