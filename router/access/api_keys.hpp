// Client API keys: who may use the router, under which name, with which limits. A key file holds
// one key a line, "KEY [NAME] [rps=N] [burst=N] [tpm=N]" ('#' starts a comment); LANES_API_KEYS
// holds the same entries separated by commas or newlines. Keys are kept only as SHA-256 digests;
// a presented one is hashed, looked up and compared in constant time. The name (never the key)
// labels metrics and the access log; an entry without one is named after its digest.
#pragma once

#include "common/access/secret.hpp"

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lanes::router {

// A key's own limits; unset ones fall back to the router's flags.
struct key_limits {
    std::optional<double> rps;
    std::optional<double> burst;
    std::optional<double> tpm;
};

struct api_key {
    std::string name;
    common::access::digest digest{};
    key_limits limits;
};

class key_table {
public:
    // Adds the entries of `text`; problems are named by `source` and line (never by the key).
    void parse(std::string_view text, std::string_view source, std::vector<std::string>& errors,
               bool comma_separated = false);
    // The key whose token `token` is, or null.
    std::shared_ptr<const api_key> find(std::string_view token) const;
    std::size_t size() const { return by_digest_.size(); }
    bool empty() const { return by_digest_.empty(); }

private:
    struct digest_hash {
        std::size_t operator()(const common::access::digest& d) const;
    };
    std::unordered_map<common::access::digest, std::shared_ptr<const api_key>, digest_hash>
        by_digest_;
};

// The keys in force: read from a file and/or the environment at start and again on reload()
// (SIGHUP); readers take the current table without a lock.
class key_store {
public:
    key_store(std::string file, std::string env_text)
        : file_(std::move(file))
        , env_text_(std::move(env_text)) {}

    // True when keys are configured at all (a file or the environment); the router is open
    // otherwise.
    bool configured() const { return !file_.empty() || !env_text_.empty(); }
    // Reads the keys; on a problem returns false with `errors` set and keeps the table in force.
    bool load(std::vector<std::string>& errors);
    std::shared_ptr<const key_table> table() const { return table_.load(); }

private:
    std::string file_;
    std::string env_text_;
    std::atomic<std::shared_ptr<const key_table>> table_{std::make_shared<const key_table>()};
};

} // namespace lanes::router
