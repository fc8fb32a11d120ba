#include "router/request/routing_key.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::router;

namespace {

request_view text(std::string prompt) {
    request_view v;
    v.owned = std::move(prompt);
    return v;
}

} // namespace

TEST_CASE("routing keys: lanes units hash byte tokens as the replica caches them",
          "[routing_key]") {
    const hash_units lanes_units{16, 16, false};
    auto v = text(std::string(100, 'a'));
    const auto key = make_routing_key(v, "", lanes_units, 4);
    CHECK(key.blocks == common::hash_prompt_blocks(std::string(100, 'a'), 16));
    CHECK(key.prompt_tokens == 101); // with the BOS
    CHECK(key.block_tokens == 16);
    // Token ids get the BOS a lanes replica adds.
    request_view ids;
    ids.prompt_token_ids = {5, 6, 7};
    const auto id_key = make_routing_key(ids, "", lanes_units, 4);
    CHECK(ids.prompt_token_ids.front() == common::bos_token);
    CHECK(id_key.prompt_tokens == 4);
}

TEST_CASE("routing keys: an engine's units, and the model and tools apart", "[routing_key]") {
    const hash_units engine{64, 16, true}; // 16-token blocks of about 4 bytes a token
    auto v = text(std::string(640, 'a'));
    const auto key = make_routing_key(v, "m", engine, 4);
    CHECK(key.blocks.size() == 10); // 641 byte tokens (with the BOS) over 64-byte blocks
    CHECK(key.prompt_tokens == 160);
    request_view ids;
    ids.prompt_token_ids = std::vector<std::uint32_t>(48, 128000);
    const auto id_key = make_routing_key(ids, "m", engine, 4);
    CHECK(id_key.blocks.size() == 3); // ids are the engine's tokens: 16 a block, no BOS added
    CHECK(ids.prompt_token_ids.size() == 48);
    // The same prompt for another model, or with other tools, shares no block.
    auto w = text(std::string(640, 'a'));
    CHECK(make_routing_key(w, "other", engine, 4).blocks[0] != key.blocks[0]);
    auto t = text(std::string(640, 'a'));
    t.context_hash = 42;
    CHECK(make_routing_key(t, "m", engine, 4).blocks[0] != key.blocks[0]);
    auto again = text(std::string(640, 'a'));
    CHECK(make_routing_key(again, "m", engine, 4).blocks == key.blocks);
}
