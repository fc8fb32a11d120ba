// The precise index against the block manager itself: after any sequence of stores, evictions and
// a restart, sent through the wire format, the index holds exactly the prefixes the replica's
// cache holds (in the router's own hashes); and the pending entries of requests just routed.
#include "router/index/precise_index.hpp"

#include "common/kv_events/events.hpp"
#include "replica/engine/block_manager.hpp"

#include <catch2/catch.hpp>

#include <memory>
#include <random>
#include <vector>

using namespace lanes;
namespace ev = lanes::common::kv_events;

namespace {

constexpr std::size_t block_size = 4;
constexpr common::block_hash router_root = 0x1234;

// Sends what the block manager recorded through encode/decode into the index.
void deliver(replica::block_manager& bm, router::precise_index& index) {
    ev::batch b;
    b.events = bm.take_events();
    if (b.events.empty())
        return;
    ev::batch wire;
    std::string error;
    REQUIRE(ev::decode(ev::encode(b), wire, error));
    index.apply("r", wire, router_root);
}

// A sequence as the scheduler runs one: cached blocks taken, the rest allocated and registered.
struct running {
    std::vector<replica::block_id> table;
};

std::optional<running> run_prompt(replica::block_manager& bm,
                                  const std::vector<common::token_id>& tokens) {
    const auto hashes = common::hash_blocks(tokens, block_size);
    const std::size_t hit = bm.count_cached(hashes);
    running r;
    r.table = bm.acquire_cached(hashes, hit);
    auto fresh = bm.allocate(hashes.size() - hit);
    if (!fresh) {
        bm.release(r.table);
        return std::nullopt;
    }
    for (std::size_t i = hit; i < hashes.size(); ++i) {
        const auto b = (*fresh)[i - hit];
        r.table.push_back(b);
        const common::block_hash parent = i == 0 ? common::root_block_hash : hashes[i - 1];
        bm.cache_block(
            b, hashes[i], parent,
            std::span<const common::token_id>(tokens).subspan(i * block_size, block_size), i == 0);
    }
    return r;
}

} // namespace

TEST_CASE("precise index: equals the block manager's cache through stores, evictions, restart",
          "[precise]") {
    std::mt19937_64 rng(42);
    auto bm = std::make_unique<replica::block_manager>(48);
    bm->record_events(block_size);
    router::precise_index index;
    ev::batch first;
    first.events.emplace_back(ev::all_blocks_cleared{});
    index.apply("r", first, router_root);
    REQUIRE(index.live("r"));

    // Prompts from a few shared prefixes with tails of their own, so blocks are shared, evicted
    // and stored again.
    std::vector<std::vector<common::token_id>> prefixes;
    for (int p = 0; p < 6; ++p) {
        std::vector<common::token_id> t;
        for (int i = 0; i < 12; ++i)
            t.push_back(static_cast<common::token_id>(rng() % 300));
        prefixes.push_back(t);
    }
    const auto prompt = [&] {
        auto t = prefixes[rng() % prefixes.size()];
        const std::size_t tail = (rng() % 4) * block_size + rng() % block_size;
        for (std::size_t i = 0; i < tail; ++i)
            t.push_back(static_cast<common::token_id>(rng() % 300));
        return t;
    };
    // A router that starts now from the replica's block dump alone knows the same.
    const auto from_dump = [&] {
        auto fresh = std::make_unique<router::precise_index>();
        fresh->reset("d", true);
        ev::batch d;
        d.events = bm->dump();
        ev::batch wire;
        std::string error;
        REQUIRE(ev::decode(ev::encode(d), wire, error));
        fresh->apply("d", wire, router_root);
        return fresh;
    };
    const auto check_agree = [&] {
        const auto fresh = from_dump();
        for (int probe = 0; probe < 20; ++probe) {
            const auto t = prompt();
            const std::size_t cached = bm->count_cached(common::hash_blocks(t, block_size));
            const auto router_hashes = common::hash_blocks(t, block_size, router_root);
            REQUIRE(index.match("r", router_hashes) == cached);
            REQUIRE(fresh->match("d", router_hashes) == cached);
        }
    };

    std::vector<running> live;
    for (int step = 0; step < 2000; ++step) {
        if (auto r = run_prompt(*bm, prompt()))
            live.push_back(std::move(*r));
        while (live.size() > 3 || (!live.empty() && rng() % 3 == 0)) {
            const std::size_t k = rng() % live.size();
            bm->release(live[k].table);
            live.erase(live.begin() + static_cast<std::ptrdiff_t>(k));
        }
        deliver(*bm, index);
        if (step % 50 == 0)
            check_agree();
    }
    REQUIRE(bm->check_invariants().empty());
    check_agree();
    CHECK(index.size("r") > 0);

    // A restart: a new, empty cache announces itself; the index follows.
    for (auto& r : live)
        bm->release(r.table);
    bm = std::make_unique<replica::block_manager>(48);
    bm->record_events(block_size);
    index.apply("r", first, router_root);
    CHECK(index.size("r") == 0);
    check_agree();
}

TEST_CASE("precise index: routed blocks count until their ttl, unknown parents are skipped",
          "[precise]") {
    router::precise_index_settings s;
    s.pending_ttl = std::chrono::milliseconds(100);
    router::precise_index index(s);
    const std::vector<common::block_hash> blocks = {1, 2, 3};
    const auto now = router::precise_index::clock::now();
    index.expect("r", blocks, now); // not live yet: nothing expected
    CHECK(index.match("r", blocks, now) == 0);
    index.reset("r", true);
    index.expect("r", blocks, now);
    CHECK(index.match("r", blocks, now) == 3);
    CHECK(index.match("r", blocks, now + std::chrono::milliseconds(200)) == 0);
    CHECK(index.size("r") == 0); // pending blocks are not held ones

    ev::batch b;
    ev::block_stored orphan;
    orphan.block_hashes = {ev::int_hash(9)};
    orphan.parent = ev::int_hash(8); // never stored
    orphan.token_ids = {1, 2, 3, 4};
    orphan.block_size = 4;
    b.events.emplace_back(orphan);
    std::size_t unplaced = 0;
    index.apply("r", b, router_root, &unplaced);
    CHECK(unplaced == 1);
    CHECK(index.size("r") == 0);
}

// A block routed (expected), then stored, then removed is gone at once, however long its
// expectation had left; one stored under two engine hashes is held until both are removed.
TEST_CASE("precise index: a stored block is no longer expected, and goes with its last copy",
          "[precise]") {
    router::precise_index index;
    index.reset("r", true);
    const std::vector<common::token_id> tokens = {1, 2, 3, 4};
    const auto hashes = common::hash_blocks(tokens, block_size, router_root);
    const auto now = router::precise_index::clock::now();
    index.expect("r", hashes, now);
    CHECK(index.match("r", hashes, now) == 1);
    CHECK(index.size("r") == 0);

    const auto store = [&](std::uint64_t engine_hash) {
        ev::block_stored st;
        st.block_hashes = {ev::int_hash(engine_hash)};
        st.token_ids = tokens;
        st.block_size = block_size;
        ev::batch b;
        b.events.emplace_back(st);
        index.apply("r", b, router_root);
    };
    const auto remove = [&](std::uint64_t engine_hash) {
        ev::block_removed rm;
        rm.block_hashes = {ev::int_hash(engine_hash)};
        ev::batch b;
        b.events.emplace_back(rm);
        index.apply("r", b, router_root);
    };
    store(11);
    store(12); // the same tokens under another engine hash: a second copy
    CHECK(index.size("r") == 1);
    CHECK(index.match("r", hashes, now) == 1);
    remove(11);
    CHECK(index.match("r", hashes, now) == 1);
    remove(12);
    CHECK(index.size("r") == 0);
    CHECK(index.match("r", hashes, now) == 0); // its expectation went when it was stored
    index.expect("r", hashes, now);            // routed again: expected again
    CHECK(index.match("r", hashes, now) == 1);
    CHECK(index.size("r") == 0);
}

TEST_CASE("precise index: blocks under a cache_salt carry its hash and match only that salt",
          "[precise]") {
    replica::block_manager bm(16);
    bm.record_events(block_size);
    const common::block_hash salt = common::salted_root("tenant-a");
    const std::vector<common::token_id> tokens = {5, 6, 7, 8, 9, 10, 11, 12};
    const auto hashes = common::hash_blocks(tokens, block_size, salt);
    const auto ids = bm.allocate(hashes.size());
    REQUIRE(ids);
    for (std::size_t i = 0; i < hashes.size(); ++i)
        bm.cache_block(
            (*ids)[i], hashes[i], i == 0 ? salt : hashes[i - 1],
            std::span<const common::token_id>(tokens).subspan(i * block_size, block_size), i == 0);
    // The router's root for a salted run folds the salt's hash in; any other root stands for
    // unsalted requests.
    const auto root_of = [](const ev::block_stored& st) {
        return st.cache_salt_hash ? router_root ^ *st.cache_salt_hash : router_root;
    };
    for (const bool dump : {false, true}) {
        ev::batch b;
        b.events = dump ? bm.dump() : bm.take_events();
        REQUIRE(b.events.size() == 1);
        const auto& st = std::get<ev::block_stored>(b.events.front());
        CHECK_FALSE(st.parent);
        REQUIRE(st.cache_salt_hash);
        CHECK(*st.cache_salt_hash == salt);
        ev::batch wire;
        std::string error;
        REQUIRE(ev::decode(ev::encode(b), wire, error));
        router::precise_index index;
        index.reset("r", true);
        index.apply("r", wire, root_of);
        CHECK(index.match("r", common::hash_blocks(tokens, block_size, router_root ^ salt)) == 2);
        CHECK(index.match("r", common::hash_blocks(tokens, block_size, router_root)) == 0);
        const common::block_hash other = common::salted_root("tenant-b");
        CHECK(index.match("r", common::hash_blocks(tokens, block_size, router_root ^ other)) == 0);
    }
}
