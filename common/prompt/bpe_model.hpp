// The BPE model of a byte-level tokenizer (internal to bpe_tokenizer): a pre-token's bytes ->
// ids by merging the adjacent pair of lowest rank, leftmost first, until none merges. Merges sit
// in an open-addressing table keyed by the pair of ids; words are cached (bounded) by their bytes.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <array>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace lanes::common {

// (left id, right id) -> (rank, merged id), linear probing over a power-of-two table.
class merge_table {
public:
    struct entry {
        std::uint64_t key = empty_key;
        std::uint32_t rank = 0;
        token_id merged = 0;
    };
    static constexpr std::uint64_t empty_key = ~std::uint64_t{0};

    void reserve(std::size_t n);
    // A pair listed twice keeps its later rank (as Hugging Face's loader does).
    void insert_or_assign(token_id left, token_id right, std::uint32_t rank, token_id merged);
    const entry* find(token_id left, token_id right) const {
        const std::uint64_t key = (std::uint64_t{left} << 32) | right;
        for (std::size_t i = slot(key);; i = (i + 1) & mask_) {
            const entry& e = slots_[i];
            if (e.key == key) {
                return &e;
            }
            if (e.key == empty_key) {
                return nullptr;
            }
        }
    }
    std::size_t size() const { return size_; }

private:
    std::size_t slot(std::uint64_t key) const {
        key ^= key >> 33;
        key *= 0xff51afd7ed558ccdULL;
        key ^= key >> 33;
        return static_cast<std::size_t>(key) & mask_;
    }
    std::vector<entry> slots_ = std::vector<entry>(1);
    std::size_t mask_ = 0;
    std::size_t size_ = 0;
};

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept;
};

class bpe_model {
public:
    // Filled by the loader.
    std::array<std::optional<token_id>, 256> byte_ids; // the id of each single byte
    merge_table merges;
    // Vocabulary entries written wholly in the byte-level alphabet, by their bytes.
    std::unordered_map<std::string, token_id, string_hash, std::equal_to<>> vocab_by_bytes;
    bool ignore_merges = false;
    std::optional<token_id> unk;

    // Appends the ids of one pre-token (its raw bytes). Thread-safe.
    void encode_word(std::string_view bytes, std::vector<token_id>& out) const;
    std::optional<token_id> find(std::string_view bytes) const;

    // Words longer than this are not cached; the cache stops growing at cache_capacity entries.
    static constexpr std::size_t cache_max_word = 256;
    static constexpr std::size_t cache_capacity = 1 << 16;

private:
    void merge_short(std::vector<token_id>& symbols) const;
    void merge_long(std::vector<token_id>& symbols) const;

    mutable std::mutex cache_mutex_;
    mutable std::unordered_map<std::string, std::vector<token_id>, string_hash, std::equal_to<>>
        cache_;
};

} // namespace lanes::common
