#include "replica/engine/block_manager.hpp"

#include <catch2/catch.hpp>

#include <random>

using namespace lanes::replica;
using lanes::common::block_hash;

TEST_CASE("block_manager keeps its invariants under random operations", "[blocks]") {
    block_manager bm(64);
    std::mt19937_64 rng(42);
    std::vector<std::vector<block_id>> held;
    std::vector<block_hash> known_hashes;
    for (int op = 0; op < 5000; ++op) {
        const int kind = static_cast<int>(rng() % 3);
        if (kind == 0) { // allocate and maybe cache
            const std::size_t n = 1 + rng() % 6;
            auto ids = bm.allocate(n);
            if (!ids) {
                CHECK(bm.num_free() < n);
                continue;
            }
            for (auto b : *ids) {
                if (rng() % 2) {
                    const block_hash h = rng();
                    bm.cache_block(b, h);
                    known_hashes.push_back(h);
                }
            }
            held.push_back(*ids);
        } else if (kind == 1 && !held.empty()) { // release a random holder
            const std::size_t i = rng() % held.size();
            bm.release(held[i]);
            held.erase(held.begin() + static_cast<std::ptrdiff_t>(i));
        } else if (!known_hashes.empty()) { // hit on a cached hash, if still cached
            const block_hash h = known_hashes[rng() % known_hashes.size()];
            if (bm.count_cached(std::span(&h, 1)) == 1)
                held.push_back(bm.acquire_cached(std::span(&h, 1), 1));
        }
        const std::string problem = bm.check_invariants();
        INFO("after operation " << op);
        REQUIRE(problem.empty());
        std::size_t referenced = 0;
        for (std::size_t b = 0; b < bm.num_blocks(); ++b)
            if (bm.ref_count(static_cast<block_id>(b)) > 0)
                ++referenced;
        REQUIRE(referenced == bm.num_used());
        REQUIRE(bm.num_used() + bm.num_free() == bm.num_blocks());
    }
    for (const auto& ids : held)
        bm.release(ids);
    CHECK(bm.num_free() == bm.num_blocks());
    CHECK(bm.check_invariants().empty());
}

TEST_CASE("freed blocks keep their hash, are revived by a hit, evicted LRU", "[blocks]") {
    block_manager bm(4);
    auto seq = *bm.allocate(3); // blocks of one sequence: head .. tail
    const std::vector<block_hash> hashes = {11, 22, 33};
    for (std::size_t i = 0; i < 3; ++i)
        bm.cache_block(seq[i], hashes[i]);
    bm.release(seq); // tail first: free list = [3(never used), 33, 22, 11]
    CHECK(bm.num_free() == 4);
    CHECK(bm.count_cached(hashes) == 3);

    // A hit revives the head blocks without allocating.
    auto hit = bm.acquire_cached(hashes, 2);
    CHECK(hit == std::vector<block_id>{seq[0], seq[1]});
    CHECK(bm.num_free() == 2);
    CHECK(bm.ref_count(seq[0]) == 1);

    // Allocation evicts from the LRU head: the never-used block, then the tail block (33).
    auto a = *bm.allocate(1);
    CHECK(bm.count_cached(hashes) == 3);
    auto b = *bm.allocate(1);
    CHECK(b[0] == seq[2]);
    CHECK(bm.count_cached(hashes) == 2); // 33 is gone, 11 and 22 stay
    CHECK(!bm.allocate(1));
    CHECK(bm.check_invariants().empty());
    bm.release(hit);
    bm.release(a);
    bm.release(b);
    CHECK(bm.num_free() == 4);
}

TEST_CASE("a hash is cached once even if computed twice", "[blocks]") {
    block_manager bm(4);
    auto x = *bm.allocate(1);
    auto y = *bm.allocate(1);
    bm.cache_block(x[0], 7);
    bm.cache_block(y[0], 7); // same content computed by another sequence: not re-registered
    CHECK(bm.lookup(7) == x[0]);
    CHECK(!bm.hash_of(y[0]));
    bm.release(x);
    bm.release(y);
    CHECK(bm.check_invariants().empty());
}
