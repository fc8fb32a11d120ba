// bpe_tokenizer's state (internal: included by its .cpp files only, so that PCRE2, utf8proc and
// JSON stay out of the public header).
#pragma once

#include "common/prompt/bpe_model.hpp"
#include "common/prompt/bpe_tokenizer.hpp"

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common {

// Added tokens by their bytes: leftmost-longest matches, as Hugging Face's Aho-Corasick does.
class added_matcher {
public:
    struct match {
        std::size_t start = 0;
        std::size_t end = 0; // 0: no match
        std::uint32_t index = 0;
    };
    void add(std::string_view content, std::uint32_t index);
    bool empty() const { return nodes_.empty(); }
    std::vector<match> find_all(std::string_view text) const;

private:
    match longest_at(std::string_view text, std::size_t pos) const;
    struct node {
        std::vector<std::pair<std::uint8_t, std::uint32_t>> next;
        std::int32_t token = -1;
    };
    std::vector<node> nodes_;
    std::array<bool, 256> first_{};
    std::size_t first_count_ = 0; // distinct first bytes
    char only_first_ = 0;         // the first byte, when there is one
};

// Whether NFC may change `text` (it has a code point at or above U+0300).
bool may_change_under_nfc(std::string_view text);
// NFC through utf8proc (text must be valid UTF-8).
std::string nfc(std::string_view text);
// The same, with only the stretches of non-ASCII text (and the character before each) passed
// to utf8proc.
std::string nfc_of_non_ascii(std::string_view text);

struct added_token {
    token_id id = 0;
    std::string content;
    bool special = false;
    bool lstrip = false;
    bool rstrip = false;
    bool single_word = false;
    bool normalized = false;
};

struct bpe_tokenizer::impl {
    struct compiled_regex {
        void* code = nullptr; // pcre2_code*
        compiled_regex() = default;
        compiled_regex(const compiled_regex&) = delete;
        compiled_regex& operator=(const compiled_regex&) = delete;
        ~compiled_regex();
    };
    // One encode call's scratch: the PCRE2 match data of each split step.
    struct encode_run {
        const impl& owner;
        std::vector<token_id>& out;
        std::vector<void*> data;
        encode_run(const impl& o, std::vector<token_id>& ids)
            : owner(o)
            , out(ids) {}
        encode_run(const encode_run&) = delete;
        encode_run& operator=(const encode_run&) = delete;
        ~encode_run();
        void* match_data(std::size_t step);
    };

    bool nfc_ = false;
    std::vector<std::unique_ptr<compiled_regex>> splits_; // applied in order, behavior Isolated
    bpe_model model_;
    std::vector<added_token> added_;
    added_matcher raw_matcher_;        // added tokens with normalized: false
    added_matcher normalized_matcher_; // added tokens with normalized: true
    std::vector<token_id> prefix_;     // the post-processor's tokens before and after the text
    std::vector<token_id> suffix_;
    // Decoding: the bytes of each id (bytes_[offsets_[id] .. offsets_[id + 1]]) and specials.
    std::string bytes_;
    std::vector<std::uint32_t> offsets_;
    std::vector<std::uint8_t> special_;

    template <class OnText, class OnToken>
    void split_added(std::string_view text, const added_matcher& matcher, OnText&& on_text,
                     OnToken&& on_token) const;
    void encode_piece(std::string_view piece, encode_run& run) const;
    void pre_tokenize(std::string_view text, std::size_t step, encode_run& run) const;
};

} // namespace lanes::common
