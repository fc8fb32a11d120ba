#include "router/index/block_table.hpp"

#include <catch2/catch.hpp>

#include <cstdint>
#include <random>
#include <unordered_map>

using lanes::common::block_hash;
using lanes::router::block_table;

TEST_CASE("block_table finds, adds and removes values by hash", "[policy][block_table]") {
    block_table<std::uint32_t> t;
    CHECK(t.find(7) == nullptr);
    CHECK_FALSE(t.erase(7));
    const auto [v, added] = t.try_emplace(7, 70);
    CHECK(added);
    CHECK(*v == 70);
    const auto [again, added_again] = t.try_emplace(7, 99); // present: the value stays
    CHECK_FALSE(added_again);
    CHECK(*again == 70);
    *again = 71;
    REQUIRE(t.find(7) != nullptr);
    CHECK(*t.find(7) == 71);
    CHECK(t.try_emplace(0).second); // hash 0 is a key like any other
    CHECK(t.contains(0));
    CHECK(t.size() == 2);
    CHECK(t.erase(7));
    CHECK_FALSE(t.contains(7));
    CHECK(t.try_emplace(9, 90).second);
    CHECK(t.extract(9) == 90); // removed, its value given back
    CHECK_FALSE(t.extract(9).has_value());
    CHECK_FALSE(t.contains(9));
    CHECK(t.contains(0));
    t.clear();
    CHECK(t.empty());
    CHECK_FALSE(t.contains(0));
    CHECK(t.try_emplace(5, 1).second); // usable again after clear()
    CHECK(t.size() == 1);
}

// Against std::unordered_map under random adds and removes, with hashes drawn from a small range
// so that probe runs are long and the backward shift moves entries past the table's end: nothing
// lost, nothing left behind, through every growth.
TEST_CASE("block_table agrees with a node map under random adds and removes",
          "[policy][block_table]") {
    block_table<std::uint64_t> t;
    std::unordered_map<block_hash, std::uint64_t> ref;
    std::mt19937_64 rng(42);
    std::uniform_int_distribution<block_hash> key(0, 3'000);
    for (int step = 0; step < 60'000; ++step) {
        const block_hash h = key(rng);
        if (rng() % 3 == 0) {
            CHECK(t.erase(h) == (ref.erase(h) == 1));
        } else {
            const auto [v, added] = t.try_emplace(h, h * 3);
            const auto [it, ref_added] = ref.try_emplace(h, h * 3);
            CHECK(added == ref_added);
            ++*v;
            ++it->second;
        }
        if (step % 5'000 == 0) {
            REQUIRE(t.size() == ref.size());
            for (block_hash k = 0; k <= 3'000; ++k) {
                const auto it = ref.find(k);
                const std::uint64_t* v = t.find(k);
                REQUIRE((v != nullptr) == (it != ref.end()));
                if (v)
                    CHECK(*v == it->second);
            }
        }
    }
}

TEST_CASE("block_table erase_if removes exactly the entries its predicate names",
          "[policy][block_table]") {
    block_table<std::uint32_t> t;
    for (std::uint32_t i = 0; i < 1'000; ++i)
        t.try_emplace(block_hash{i} * 0x100000001ULL, i);
    CHECK(t.erase_if([](block_hash, std::uint32_t v) { return v % 4 != 0; }) == 750);
    CHECK(t.size() == 250);
    for (std::uint32_t i = 0; i < 1'000; ++i) {
        const std::uint32_t* v = t.find(block_hash{i} * 0x100000001ULL);
        CHECK((v != nullptr) == (i % 4 == 0));
    }
    CHECK(t.erase_if([](block_hash, std::uint32_t) { return true; }) == 250);
    CHECK(t.empty());
    CHECK(t.try_emplace(1, 2).second);
    CHECK(*t.find(1) == 2);
}
