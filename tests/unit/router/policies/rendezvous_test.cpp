// Rendezvous hashing: the weight is XXH3-64 of key and id, the order is deterministic and does
// not depend on where replicas sit in the snapshot, a replica leaving or joining moves only its
// own keys, keys spread evenly, and the bounded pick takes the best replica within the cap.
#include "router/policies/rendezvous.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#define XXH_INLINE_ALL
#include <xxhash.h>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <map>
#include <numeric>
#include <string>
#include <vector>

using namespace lanes::router;
using namespace lanes::router::test;

namespace {

std::vector<std::size_t> every(const pool_snapshot& pool) {
    std::vector<std::size_t> out(pool.replicas.size());
    std::iota(out.begin(), out.end(), std::size_t{0});
    return out;
}

// The id of the replica ranked first for `key`, by rendezvous_before alone.
std::string owner(const std::string& key, const pool_snapshot& pool) {
    std::size_t top = 0;
    for (std::size_t i = 1; i < pool.replicas.size(); ++i)
        if (rendezvous_before(key, pool.replicas[i], pool.replicas[top]))
            top = i;
    return pool.replicas[top].id;
}

// The candidates ranked best first.
std::vector<std::size_t> ranking(const std::string& key, const pool_snapshot& pool) {
    auto order = every(pool);
    std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return rendezvous_before(key, pool.replicas[a], pool.replicas[b]);
    });
    return order;
}

std::string key_of(int i) {
    return "key-" + std::to_string(i);
}

} // namespace

TEST_CASE("rendezvous weight is XXH3-64 over the key's bytes then the id's", "[policy][hash]") {
    CHECK(rendezvous_weight("", "") == 0x2D06800538D394C2ull); // XXH3-64 of no bytes
    const std::string key = "\x01\x02\x03\x04\x05\x06\x07\x08";
    const std::string id = "http://10.0.0.1:8001";
    const std::string both = key + id;
    CHECK(rendezvous_weight(key, id) == XXH3_64bits(both.data(), both.size()));
    // Longer than the stack buffer: the same hash.
    const std::string long_id = "http://" + std::string(300, 'h') + ":8001";
    const std::string long_both = key + long_id;
    CHECK(rendezvous_weight(key, long_id) == XXH3_64bits(long_both.data(), long_both.size()));
    // Exactly at the buffer's size, and one past it.
    const std::string fits(256 - key.size(), 'f'), over(257 - key.size(), 'f');
    CHECK(rendezvous_weight(key, fits) == XXH3_64bits((key + fits).data(), 256));
    CHECK(rendezvous_weight(key, over) == XXH3_64bits((key + over).data(), 257));
    CHECK(rendezvous_weight(key, "r0") != rendezvous_weight(key, "r1"));
    CHECK(rendezvous_weight("a", "r0") != rendezvous_weight("b", "r0"));
}

TEST_CASE("rendezvous order is strict and ties fall to the lower id", "[policy][hash]") {
    const auto pool = make_pool(5);
    for (int k = 0; k < 50; ++k) {
        const std::string key = key_of(k);
        INFO(key);
        for (const auto& a : pool.replicas) {
            CHECK_FALSE(rendezvous_before(key, a, a));
            for (const auto& b : pool.replicas)
                if (a.id != b.id)
                    CHECK(rendezvous_before(key, a, b) != rendezvous_before(key, b, a));
        }
        // rendezvous_order gives the same answers with each weight computed once.
        const auto candidates = every(pool);
        const rendezvous_order order(key, pool, candidates);
        for (const std::size_t a : candidates)
            for (const std::size_t b : candidates)
                CHECK(order.before(a, b) ==
                      rendezvous_before(key, pool.replicas[a], pool.replicas[b]));
    }
    // Equal weights (the same id twice) rank by id: neither comes before the other.
    const replica_view x{.id = "same"}, y{.id = "same", .inflight = 9};
    CHECK_FALSE(rendezvous_before("k", x, y));
    CHECK_FALSE(rendezvous_before("k", y, x));
}

TEST_CASE("rendezvous ownership depends on ids, not on places in the snapshot", "[policy][hash]") {
    const auto pool = make_pool(6);
    auto reversed = pool;
    std::reverse(reversed.replicas.begin(), reversed.replicas.end());
    for (int k = 0; k < 500; ++k) {
        INFO(key_of(k));
        CHECK(owner(key_of(k), pool) == owner(key_of(k), reversed));
        // The bounded pick with no binding cap is the plain owner.
        const auto pick = rendezvous_bounded(key_of(k), reversed, every(reversed),
                                             std::numeric_limits<std::int64_t>::max());
        REQUIRE(pick);
        CHECK(reversed.replicas[*pick].id == owner(key_of(k), pool));
    }
}

TEST_CASE("a replica leaving moves only its keys, one joining takes only keys it wins",
          "[policy][hash]") {
    const auto five = make_pool(5);
    auto four = five;
    four.replicas.erase(four.replicas.begin() + 2); // r2 leaves
    auto six = five;
    six.replicas.push_back({.id = "r5"});
    std::map<std::string, int> moved_to; // r2's keys, by their new owner
    int r2_keys = 0, won_by_r5 = 0;
    constexpr int keys = 20'000;
    for (int k = 0; k < keys; ++k) {
        const std::string key = key_of(k);
        const std::string before = owner(key, five);
        const std::string without = owner(key, four);
        if (before == "r2") {
            ++r2_keys;
            ++moved_to[without];
            // The new owner is the one ranked second before.
            CHECK(five.replicas[ranking(key, five)[1]].id == without);
        } else {
            CHECK(without == before);
        }
        const std::string with = owner(key, six);
        if (with == "r5")
            ++won_by_r5;
        else
            CHECK(with == before);
    }
    // r2 owned about a fifth, r5 wins about a sixth (binomial standard deviations about 57 and
    // 53): within 8 %.
    CHECK(r2_keys > 3'680);
    CHECK(r2_keys < 4'320);
    CHECK(won_by_r5 > 3'066);
    CHECK(won_by_r5 < 3'600);
    // r2's keys spread over the other four, each about a quarter (sd about 27): within 20 %.
    REQUIRE(moved_to.size() == 4);
    for (const auto& [id, n] : moved_to) {
        INFO(id << " took " << n << " of " << r2_keys);
        CHECK(n > r2_keys / 4 * 8 / 10);
        CHECK(n < r2_keys / 4 * 12 / 10);
    }
}

TEST_CASE("rendezvous spreads many keys evenly", "[policy][hash]") {
    // 40k keys over 8 replicas: 5000 each, binomial sd about 66; within 6 % (4.5 sd).
    const auto pool = make_pool(8);
    std::map<std::string, int> counts;
    for (int k = 0; k < 40'000; ++k)
        ++counts[owner(key_of(k), pool)];
    REQUIRE(counts.size() == 8);
    for (const auto& [id, n] : counts) {
        INFO(id << ": " << n);
        CHECK(n > 4'700);
        CHECK(n < 5'300);
    }
}

TEST_CASE("rendezvous_bounded takes the best candidate within the cap", "[policy][hash]") {
    auto pool = make_pool(5);
    const std::string key = "session-7";
    const auto rank = ranking(key, pool);
    const auto all = every(pool);
    CHECK(rendezvous_bounded(key, pool, all, 10) == rank[0]);
    pool.replicas[rank[0]].inflight = 10; // over a cap of 10 (10 + 1 > 10)
    CHECK(rendezvous_bounded(key, pool, all, 10) == rank[1]);
    pool.replicas[rank[1]].inflight = 9; // exactly within: 9 + 1 <= 10
    CHECK(rendezvous_bounded(key, pool, all, 10) == rank[1]);
    pool.replicas[rank[1]].inflight = 12;
    CHECK(rendezvous_bounded(key, pool, all, 10) == rank[2]);
    // Every candidate over the cap: the top-ranked one all the same.
    for (auto& r : pool.replicas)
        r.inflight = 50;
    CHECK(rendezvous_bounded(key, pool, all, 10) == rank[0]);
    // Only candidates count: without the top one, the next.
    std::vector<std::size_t> some(rank.begin() + 1, rank.end());
    std::reverse(some.begin(), some.end());
    CHECK(rendezvous_bounded(key, pool, some, 100) == rank[1]);
    CHECK(rendezvous_bounded(key, pool, std::vector<std::size_t>{rank[4]}, 0) == rank[4]);
    CHECK_FALSE(rendezvous_bounded(key, pool, std::vector<std::size_t>{}, 100));
}

TEST_CASE("prefix_key is the little-endian hash of the last block of the prefix",
          "[policy][hash]") {
    const std::vector<lanes::common::block_hash> blocks = {
        0x0102030405060708ull, 0x1112131415161718ull, 0xF0E0D0C0B0A09080ull};
    const std::string first("\x08\x07\x06\x05\x04\x03\x02\x01", 8);
    const std::string second("\x18\x17\x16\x15\x14\x13\x12\x11", 8);
    const std::string third("\x80\x90\xA0\xB0\xC0\xD0\xE0\xF0", 8);
    CHECK(prefix_key(blocks, 1) == first);
    CHECK(prefix_key(blocks, 0) == first); // 0 counts as 1
    CHECK(prefix_key(blocks, 2) == second);
    CHECK(prefix_key(blocks, 3) == third);
    CHECK(prefix_key(blocks, 100) == third); // a prefix longer than the request: its last block
    CHECK(prefix_key({}, 4).empty());
    // Requests that share the prefix share the key, whatever follows it.
    const std::vector<lanes::common::block_hash> longer = {blocks[0], blocks[1], 42, 43};
    CHECK(prefix_key(longer, 2) == prefix_key(blocks, 2));
    CHECK(prefix_key(longer, 3) != prefix_key(blocks, 3));
}
