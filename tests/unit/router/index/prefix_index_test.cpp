#include "router/index/prefix_index.hpp"

#include "tests/unit/router/policies/fake_pool.hpp"

#include <catch2/catch.hpp>

#include <random>
#include <span>

using namespace lanes::router;
using namespace lanes::router::test;
using lanes::common::block_hash;

TEST_CASE("prefix_index matches the longest leading run", "[policy][prefix_index]") {
    prefix_index index(100);
    index.insert("r0", std::vector<block_hash>{1, 2, 3, 4});
    CHECK(index.match("r0", std::vector<block_hash>{1, 2, 3, 9}) == 3);
    CHECK(index.match("r0", std::vector<block_hash>{1, 2, 3, 4, 5}) == 4);
    // Chained hashes: a different first block changes every hash after it.
    CHECK(index.match("r0", std::vector<block_hash>{9, 19, 29}) == 0);
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
    small.insert("r0", make_blocks(3, 5)); // as long as the capacity: kept whole
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

// match() binary-searches the leading run, which is exact only if the held blocks stay
// prefix-closed under LRU eviction. Check that against a linear scan with real chained hashes,
// prompts sharing prefixes of random lengths, and a capacity far below the working set.
TEST_CASE("prefix_index binary-search match equals a linear scan under eviction",
          "[policy][prefix_index]") {
    std::mt19937_64 rng(7);
    std::vector<std::vector<lanes::common::token_id>> bases(6);
    for (auto& b : bases) {
        b.resize(40 * 4);
        for (auto& t : b)
            t = static_cast<lanes::common::token_id>(rng() % 200);
    }
    auto prompt_blocks = [&] {
        auto tokens = bases[rng() % bases.size()];
        tokens.resize(4 * (1 + rng() % 40)); // a shared head of random length
        for (std::size_t extra = rng() % 12; extra > 0; --extra)
            tokens.push_back(static_cast<lanes::common::token_id>(rng() % 200));
        return lanes::common::hash_blocks(tokens, 4);
    };
    prefix_index index(50);
    std::size_t partial = 0;
    for (int i = 0; i < 3'000; ++i) {
        const auto probe = prompt_blocks();
        // The reference, block by block: a prefix of length k matches whole exactly when its
        // last block is held.
        std::size_t linear = 0;
        while (linear < probe.size() &&
               index.match("r0", std::span(probe).first(linear + 1)) == linear + 1)
            ++linear;
        REQUIRE(index.match("r0", probe) == linear);
        partial += linear > 0 && linear < probe.size();
        index.insert("r0", prompt_blocks());
    }
    CHECK(partial > 100); // partial matches happened, so the search was exercised
}

TEST_CASE("prefix_index forgets a replica whose epoch moved (its cache was lost)",
          "[prefix_index]") {
    using namespace lanes::router;
    using namespace lanes::router::test;
    prefix_index index(64);
    auto pool = make_pool(2);
    const auto blocks = make_blocks(1, 8);
    index.update_capacities(pool);
    index.insert("r0", blocks);
    index.insert("r1", blocks);
    index.update_capacities(pool);
    CHECK(index.match_at(0, blocks) == 8);
    pool.replicas[0].epoch = 1; // r0 restarted
    index.update_capacities(pool);
    CHECK(index.match_at(0, blocks) == 0);
    CHECK(index.match_at(1, blocks) == 8);
    index.insert("r0", blocks); // learned again from here on
    index.update_capacities(pool);
    CHECK(index.match_at(0, blocks) == 8);
}

TEST_CASE("prefix_index: a request's blocks are pending until its replica takes it",
          "[policy][prefix_index]") {
    prefix_index index(100);
    const auto system = make_blocks(1, 4); // a shared system prompt
    CHECK(index.insert("r0", system).held == 0);
    index.settle("r0", system, 0, true); // taken: kept
    auto longer = system;
    for (block_hash h : make_blocks(2, 4))
        longer.push_back(h);
    const std::size_t held = index.insert("r0", longer).held;
    CHECK(held == 4);
    CHECK(index.match("r0", longer) == 8);   // pending blocks count, so a burst lands together
    index.settle("r0", longer, held, false); // refused (a 400, a failure): its own blocks go
    CHECK(index.match("r0", longer) == 4);   // what was there before stays
    CHECK(index.size("r0") == 4);
}

TEST_CASE("prefix_index: one request fills at most its share, a prompt no replica holds none",
          "[policy][prefix_index]") {
    index_knobs knobs;
    knobs.capacity = 100;
    REQUIRE(knobs.max_request_share == 0.5); // the default
    prefix_index index(knobs);
    const auto known = make_blocks(1, 60);
    index.insert("r0", known);
    REQUIRE(index.match("r0", known) == 50); // its leading half of the index
    // A prompt longer than the whole index (a refused 8 MiB body, say) evicts nothing, and what
    // it matched is still found.
    auto huge = std::vector<block_hash>(known.begin(), known.begin() + 10);
    for (block_hash h : make_blocks(2, 10'000))
        huge.push_back(h);
    CHECK(index.insert("r0", huge).held == 10);
    CHECK(index.size("r0") == 50);
    CHECK(index.match("r0", known) == 50);
    index.settle("r0", huge, 10, false);
    CHECK(index.match("r0", known) == 50);
    // One that fits but is refused costs at most the share: half of what was known survives.
    const auto refused = make_blocks(3, 90);
    CHECK(index.insert("r0", refused).held == 0);
    CHECK(index.match("r0", refused) == 50);
    index.settle("r0", refused, 0, false);
    CHECK(index.match("r0", refused) == 0);
    CHECK(index.match("r0", known) == 50); // (the index had room for 50 more)
    const auto other = make_blocks(4, 50);
    index.insert("r0", other); // now full
    index.insert("r0", refused);
    index.settle("r0", refused, 0, false);
    CHECK(index.size("r0") == 50); // what the refused one evicted is gone, no more than 50
    // A share of 1 lets one request fill the index.
    knobs.max_request_share = 1.0;
    prefix_index whole(knobs);
    whole.insert("r0", make_blocks(5, 100));
    CHECK(whole.size("r0") == 100);
}
