// A model's own tokenizer, loaded from a Hugging Face tokenizer.json: byte-level BPE as Llama 3.x,
// Qwen2/2.5/3 and Mistral-Nemo use it. The pipeline is the file's: added tokens split out of the
// raw text first; each piece between them normalized (NFC or none), split by the pre-tokenizer's
// regexes (PCRE2, UTF + Unicode properties, JIT), mapped to bytes and merged by BPE rank; the
// post-processor's BOS/EOS around the result. Decoding reverses the byte-level mapping; a
// bpe_stream_decoder emits text as ids arrive without ever splitting a UTF-8 sequence.
// Anything else a file may hold (SentencePiece-style BPE, other normalizers, pre-tokenizers or
// models) is refused at load with a message naming the field.
#pragma once

#include "common/prompt/tokenizer.hpp"

#include <array>
#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common {

class bpe_tokenizer {
public:
    // Throws std::runtime_error naming the file and the field on anything it cannot read or use.
    static bpe_tokenizer from_file(const std::string& path);
    static bpe_tokenizer from_json(std::string_view json_text);

    bpe_tokenizer(bpe_tokenizer&&) noexcept;
    bpe_tokenizer& operator=(bpe_tokenizer&&) noexcept;
    ~bpe_tokenizer();

    // Text -> ids. Added tokens in the text always become their ids (vLLM's default); the
    // post-processor's tokens (BOS, EOS) come only with add_special_tokens. Text that is not
    // valid UTF-8 is first made so (each ill-formed subpart becomes U+FFFD). Thread-safe.
    std::vector<token_id> encode(std::string_view text, bool add_special_tokens = true) const;

    // encode() in pieces, for callers that cache: the runs of text between added tokens encode
    // independently of their neighbours. split_added_tokens calls on_text for each run and
    // on_token for each added token, in order; encode_text appends one run's ids. For valid
    // UTF-8 `text`, encode(text, false) is exactly these put together; special_prefix() and
    // special_suffix() are what add_special_tokens puts around them.
    void split_added_tokens(std::string_view text,
                            const std::function<void(std::string_view)>& on_text,
                            const std::function<void(token_id)>& on_token) const;
    void encode_text(std::string_view run, std::vector<token_id>& out) const;
    std::span<const token_id> special_prefix() const;
    std::span<const token_id> special_suffix() const;
    // Ids -> text; ids outside the vocabulary are dropped, as are special tokens when asked.
    std::string decode(std::span<const token_id> ids, bool skip_special_tokens = true) const;

    // One more than the highest id (vocabulary and added tokens).
    std::size_t vocab_size() const;
    // The bytes an id decodes to (empty for an unknown id).
    std::string_view token_bytes(token_id id) const;
    // The id of a vocabulary entry or added token, given as its decoded text.
    std::optional<token_id> find(std::string_view text) const;
    bool is_special(token_id id) const;

    // The loaded state, opaque here (bpe_tokenizer_impl.hpp), so that PCRE2, utf8proc and JSON
    // stay out of this header.
    struct impl;

private:
    explicit bpe_tokenizer(std::unique_ptr<impl> p);
    std::unique_ptr<impl> impl_;
};

// Incremental decoding of one sequence: push ids as they are generated, take the text that is
// complete. Bytes of a UTF-8 sequence still waiting for its end are held back; the concatenation
// of everything returned, finish() included, equals decode() of all the ids.
class bpe_stream_decoder {
public:
    explicit bpe_stream_decoder(const bpe_tokenizer& tokenizer, bool skip_special_tokens = true);
    std::string push(token_id id);
    // What is still held (an incomplete sequence becomes U+FFFD); the decoder starts over.
    std::string finish();

private:
    const bpe_tokenizer* tokenizer_;
    bool skip_special_;
    std::string pending_;
};

// The byte-level alphabet (GPT-2's bytes_to_unicode): the code point that stands for each byte.
std::array<char32_t, 256> byte_level_alphabet();

} // namespace lanes::common
