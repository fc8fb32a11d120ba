// Per-key prefix-cache isolation (--isolate-cache-by-key): each API key's requests carry vLLM's
// `cache_salt`, a hash of the key's name, so engines share cached blocks only between requests of
// one key, and the router folds the same salt into its block hashes. The one edit the router
// makes to a body.
#pragma once

#include <string>
#include <string_view>

namespace lanes::router {

// The salt of a key: the same in every router, and no secret (it names no key).
std::string cache_salt_for(std::string_view key_name);
// Whether a JSON object body has a top-level field `name` (any spelling of it).
bool has_field(std::string_view body, std::string_view name);
// `body` (a JSON object) with "cache_salt": salt added as its first member.
std::string with_cache_salt(std::string_view body, std::string_view salt);

} // namespace lanes::router
