// KV events in vLLM's wire format: lanes' encoding round-trips; the forms vLLM's versions write
// (array_like structs with and without medium and the DP rank, the map form of newer vLLM with
// its added fields, integer and byte hashes) decode; malformed batches are refused.
#include "common/kv_events/events.hpp"
#include "common/kv_events/msgpack.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace lanes::common;
namespace ev = lanes::common::kv_events;
namespace mp = lanes::common::msgpack;

namespace {

std::string unhex(std::string_view h) {
    std::string out;
    for (std::size_t i = 0; i + 1 < h.size(); i += 2)
        out += static_cast<char>(std::stoi(std::string(h.substr(i, 2)), nullptr, 16));
    return out;
}

} // namespace

TEST_CASE("kv events: lanes' batches round-trip", "[kv_events]") {
    ev::batch b;
    b.ts = 1234.5;
    b.data_parallel_rank = 0;
    ev::block_stored s;
    s.block_hashes = {ev::int_hash(7), ev::int_hash(~0ull)};
    s.parent = ev::int_hash(3);
    s.token_ids = {1, 2, 3, 70000};
    s.block_size = 2;
    s.medium = "GPU";
    b.events.emplace_back(s);
    b.events.emplace_back(ev::block_removed{{ev::int_hash(7)}, "GPU"});
    b.events.emplace_back(ev::all_blocks_cleared{});
    ev::batch got;
    std::string error;
    REQUIRE(ev::decode(ev::encode(b), got, error));
    CHECK(got.ts == 1234.5);
    CHECK(got.data_parallel_rank == 0);
    REQUIRE(got.events.size() == 3);
    const auto& gs = std::get<ev::block_stored>(got.events[0]);
    CHECK(gs.block_hashes == s.block_hashes);
    CHECK(gs.parent == s.parent);
    CHECK(gs.token_ids == s.token_ids);
    CHECK(gs.block_size == 2);
    CHECK(gs.medium == "GPU");
    CHECK(std::get<ev::block_removed>(got.events[1]).block_hashes == std::vector{ev::int_hash(7)});
    CHECK(std::holds_alternative<ev::all_blocks_cleared>(got.events[2]));
}

TEST_CASE("kv events: a salted run's salt hash and lora name round-trip", "[kv_events]") {
    ev::batch b;
    ev::block_stored s;
    s.block_hashes = {ev::int_hash(7)};
    s.token_ids = {1, 2};
    s.block_size = 2;
    s.cache_salt_hash = 0xfeedfacecafebeefULL;
    b.events.emplace_back(s);
    s.cache_salt_hash.reset();
    s.lora_name = "adapter";
    b.events.emplace_back(s);
    ev::batch got;
    std::string error;
    REQUIRE(ev::decode(ev::encode(b), got, error));
    REQUIRE(got.events.size() == 2);
    CHECK(std::get<ev::block_stored>(got.events[0]).cache_salt_hash == 0xfeedfacecafebeefULL);
    CHECK_FALSE(std::get<ev::block_stored>(got.events[0]).lora_name);
    CHECK(std::get<ev::block_stored>(got.events[1]).lora_name == "adapter");
    CHECK_FALSE(std::get<ev::block_stored>(got.events[1]).cache_salt_hash);

    // Another writer's field where lanes puts the salt hash (an array: vLLM's extra keys) is
    // not taken for one.
    std::string bytes;
    mp::writer w(bytes);
    w.array(3);
    w.float64(1.0);
    w.array(1);
    w.array(9);
    w.str("BlockStored");
    w.array(1);
    w.uint(7);
    w.nil();
    w.array(2);
    w.uint(1);
    w.uint(2);
    w.uint(2);
    w.nil();
    w.str("GPU");
    w.nil();
    w.array(1);
    w.nil();
    w.nil();
    REQUIRE(ev::decode(bytes, got, error));
    CHECK_FALSE(std::get<ev::block_stored>(got.events.at(0)).cache_salt_hash);
}

TEST_CASE("kv events: vLLM's array form, byte for byte", "[kv_events]") {
    // [1.5, [["BlockStored", [2^63+1, 42], nil, [1,2,3,4], 2, nil, "GPU"],
    //        ["BlockRemoved", [42], "GPU"], ["AllBlocksCleared"]], 0]
    // as msgspec writes KVEventBatch with array_like=True (vLLM 0.10 / 0.11).
    const std::string bytes = unhex("93cb3ff8000000000000"
                                    "93"
                                    "97ab426c6f636b53746f726564"
                                    "92cf80000000000000012a"
                                    "c0"
                                    "9401020304"
                                    "02c0a3475055"
                                    "93ac426c6f636b52656d6f766564912aa3475055"
                                    "91b0416c6c426c6f636b73436c6561726564"
                                    "00");
    ev::batch b;
    std::string error;
    REQUIRE(ev::decode(bytes, b, error));
    CHECK(b.ts == 1.5);
    CHECK(b.data_parallel_rank == 0);
    REQUIRE(b.events.size() == 3);
    const auto& s = std::get<ev::block_stored>(b.events[0]);
    CHECK(s.block_hashes == std::vector{ev::int_hash(0x8000000000000001ull), ev::int_hash(42)});
    CHECK_FALSE(s.parent);
    CHECK(s.token_ids == std::vector<std::uint32_t>{1, 2, 3, 4});
    CHECK(s.medium == "GPU");
    CHECK(std::get<ev::block_removed>(b.events[1]).block_hashes == std::vector{ev::int_hash(42)});
    // lanes writes the same bytes for the same batch.
    CHECK(ev::encode(b) == bytes);
}

TEST_CASE("kv events: older and newer vLLM forms decode", "[kv_events]") {
    SECTION("vLLM 0.9: a batch of two fields, BlockStored without medium") {
        std::string bytes;
        mp::writer w(bytes);
        w.array(2);
        w.float64(9.0);
        w.array(1);
        w.array(6);
        w.str("BlockStored");
        w.array(1);
        w.sint(-5); // a hash as Python's signed hash() gives it
        w.uint(11);
        w.array(2);
        w.uint(8);
        w.uint(9);
        w.uint(2);
        w.nil();
        ev::batch b;
        std::string error;
        REQUIRE(ev::decode(bytes, b, error));
        CHECK_FALSE(b.data_parallel_rank);
        const auto& s = std::get<ev::block_stored>(b.events.at(0));
        CHECK(s.block_hashes == std::vector{ev::int_hash(static_cast<std::uint64_t>(-5))});
        CHECK(s.parent == ev::int_hash(11));
        CHECK_FALSE(s.medium);
    }
    SECTION("current vLLM: maps, 32-byte hashes, fields added since") {
        const std::string h1(32, '\xab'), parent(32, '\x01');
        std::string bytes;
        mp::writer w(bytes);
        w.map(3);
        w.str("ts");
        w.float64(2.0);
        w.str("events");
        w.array(2);
        w.map(11);
        w.str("type");
        w.str("BlockStored");
        w.str("block_hashes");
        w.array(1);
        w.bin(h1);
        w.str("parent_block_hash");
        w.bin(parent);
        w.str("token_ids");
        w.array(2);
        w.uint(5);
        w.uint(6);
        w.str("block_size");
        w.uint(2);
        w.str("lora_id");
        w.nil();
        w.str("medium");
        w.str("GPU");
        w.str("lora_name");
        w.str("my-adapter");
        w.str("extra_keys");
        w.array(1);
        w.nil();
        w.str("group_idx");
        w.uint(0);
        w.str("kv_cache_spec_kind");
        w.str("full_attention");
        w.map(3);
        w.str("type");
        w.str("BlockRemoved");
        w.str("block_hashes");
        w.array(1);
        w.bin(h1);
        w.str("medium");
        w.str("GPU");
        w.str("data_parallel_rank");
        w.uint(1);
        ev::batch b;
        std::string error;
        REQUIRE(ev::decode(bytes, b, error));
        CHECK(b.data_parallel_rank == 1);
        const auto& s = std::get<ev::block_stored>(b.events.at(0));
        CHECK(s.block_hashes == std::vector{h1});
        CHECK(s.parent == parent);
        CHECK(s.lora_name == "my-adapter");
        CHECK(std::get<ev::block_removed>(b.events.at(1)).block_hashes == std::vector{h1});
    }
}

TEST_CASE("kv events: malformed batches are refused with a reason", "[kv_events]") {
    const auto refused = [](const std::string& bytes, const std::string& why) {
        ev::batch b;
        std::string error;
        INFO(why);
        CHECK_FALSE(ev::decode(bytes, b, error));
        CHECK(error.find(why) != std::string::npos);
    };
    const auto stored = [](std::size_t tokens, std::uint64_t block_size, const char* type) {
        std::string bytes;
        mp::writer w(bytes);
        w.array(2);
        w.float64(0);
        w.array(1);
        w.array(5);
        w.str(type);
        w.array(1);
        w.uint(1);
        w.nil();
        w.array(tokens);
        for (std::size_t i = 0; i < tokens; ++i)
            w.uint(i);
        w.uint(block_size);
        return bytes;
    };
    refused(stored(3, 2, "BlockStored"), "3 token ids for 1 blocks of 2");
    refused(stored(2, 0, "BlockStored"), "block_size");
    refused(stored(2, 2, "BlockMoved"), "unknown type 'BlockMoved'");
    refused(std::string("\x92\xcb", 2), "truncated");
    std::string not_batch;
    mp::writer(not_batch).str("hello");
    refused(not_batch, "neither an array nor a map");
    CHECK(ev::read_sequence(ev::sequence_frame(-1)) == -1);
    CHECK(ev::read_sequence(ev::sequence_frame(0x0102030405060708)) == 0x0102030405060708);
    CHECK_FALSE(ev::read_sequence("short"));
}
