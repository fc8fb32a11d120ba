#include "router/request/routing_key.hpp"

#include "common/prompt/tokenizer.hpp"

#include <xxhash.h>

#include <algorithm>

namespace lanes::router {

common::block_hash affinity_root(std::string_view model, std::uint64_t context_hash) {
    if (model.empty() && context_hash == 0)
        return common::root_block_hash;
    return XXH3_64bits_withSeed(model.data(), model.size(), common::root_block_hash ^ context_hash);
}

common::block_hash kv_event_root(const replica& r, const std::string& lora,
                                 std::uint64_t salt_hash) {
    const auto models = r.models();
    const std::string model =
        !lora.empty() ? lora : (models->ids.size() == 1 ? models->ids.front() : "");
    return affinity_root(model, salt_hash);
}

routing_key make_routing_key(request_view& view, std::string_view model, const hash_units& units,
                             std::size_t bytes_per_token) {
    routing_key key;
    auto& ids = view.prompt_token_ids;
    if (!units.engine && !ids.empty() && ids.front() != common::bos_token)
        ids.insert(ids.begin(), common::bos_token);
    const common::block_hash root = affinity_root(model, view.context_hash);
    key.blocks = ids.empty()
                     ? common::hash_prompt_blocks(view.prompt(), units.text_block_bytes, root)
                     : common::hash_blocks(ids, units.id_block_tokens, root);
    key.block_tokens = units.id_block_tokens;
    key.prompt_tokens = !ids.empty() ? ids.size()
                        : units.engine
                            ? view.prompt().size() / std::max<std::size_t>(bytes_per_token, 1)
                            : view.prompt().size() + 1;
    return key;
}

} // namespace lanes::router
