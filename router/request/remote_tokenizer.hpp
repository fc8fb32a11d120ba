// Token ids in the engine's own vocabulary for a request that brings text, from an engine's
// /tokenize (vLLM's, or a lanes replica's: the chat template applied as the engine applies it),
// so the router's block hashes line up with the blocks the engine's KV events name. A small LRU
// keeps the answers for prompts seen again (retries, identical prompts): those cost a lookup,
// not a round trip. Any failure leaves the request to the router's text hashing.
#pragma once

#include "common/http/url.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lanes::common::http {
class client_connection;
}

namespace lanes::router {

struct tokenizer_settings {
    std::string endpoint; // base URL of an engine serving POST /tokenize; "" for none
    std::chrono::milliseconds timeout{1'000};
    std::size_t cache_entries = 4096;   // prompts kept in the LRU (0: none)
    std::size_t max_tokens = 1u << 20;  // a longer answer is not used
    std::size_t max_values = 1'000'000; // JSON values a body may hold to be tokenized (DOM nodes)
    std::size_t idle_connections = 16;  // kept-alive connections to the endpoint
};

// What to tokenize: the POST /tokenize body for a request, and the key its answer is cached by.
struct tokenize_query {
    std::string body;
    std::uint64_t key_lo = 0, key_hi = 0; // a 128-bit hash of what the ids depend on
};

// The /tokenize body for a completions or chat request body (`chat`), naming the model
// `model_of` makes of the one the request names; nullopt when the request is not one to
// tokenize (its prompt is already token ids, or is a list) or is beyond the bounds on the DOM
// built to read it (`max_depth` levels, `max_values` values: checked before it is built).
using model_namer = std::function<std::string(const std::optional<std::string>&)>;
struct tokenize_bounds {
    std::size_t max_depth = 64;
    std::size_t max_values = 1'000'000;
};
std::optional<tokenize_query> make_tokenize_query(std::string_view request_body, bool chat,
                                                  const model_namer& model_of,
                                                  tokenize_bounds bounds = {});

// Reads a /tokenize answer ({"tokens": [...], ...}); nullopt when it is not one or is longer than
// `max_tokens`.
std::optional<std::vector<std::uint32_t>> read_tokenize_answer(std::string_view body,
                                                               std::size_t max_tokens);

class remote_tokenizer {
public:
    explicit remote_tokenizer(tokenizer_settings s);
    ~remote_tokenizer();
    remote_tokenizer(const remote_tokenizer&) = delete;
    remote_tokenizer& operator=(const remote_tokenizer&) = delete;

    // The cached ids of `q`, if any (moving it to the front).
    std::optional<std::vector<std::uint32_t>> cached(const tokenize_query& q);
    // Asks the endpoint (and caches the answer); nullopt on any failure. `q` must outlive it.
    boost::asio::awaitable<std::optional<std::vector<std::uint32_t>>>
    fetch(boost::asio::any_io_executor ex, const tokenize_query& q);

    struct counts {
        std::uint64_t hits = 0, misses = 0, errors = 0;
    };
    counts totals() const;

private:
    void remember(const tokenize_query& q, const std::vector<std::uint32_t>& ids);
    std::unique_ptr<common::http::client_connection> take_connection();
    void give_back(std::unique_ptr<common::http::client_connection> c);

    tokenizer_settings settings_;
    std::optional<common::http::url> target_;
    struct entry {
        std::uint64_t lo, hi;
        std::vector<std::uint32_t> ids;
    };
    struct key_hash {
        std::size_t operator()(const std::pair<std::uint64_t, std::uint64_t>& k) const {
            return static_cast<std::size_t>(k.first ^ (k.second * 0x9e3779b97f4a7c15ULL));
        }
    };
    mutable std::mutex mutex_;
    std::list<entry> lru_; // most recent first
    std::unordered_map<std::pair<std::uint64_t, std::uint64_t>, std::list<entry>::iterator,
                       key_hash>
        index_;
    std::vector<std::unique_ptr<common::http::client_connection>> idle_;
    counts counts_;
};

} // namespace lanes::router
