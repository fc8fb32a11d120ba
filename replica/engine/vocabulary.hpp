// The ids the engine samples, stops on and turns into text. By default the byte vocabulary
// (common/prompt/tokenizer.hpp): printable bytes, newline and EOS may be drawn, each id is its
// byte. With --tokenizer, a model's vocabulary (common::model_tokenizer): any id but the special
// tokens may be drawn (the random-weight model would spell control tokens), EOS is any of the
// model's end ids, and text comes from a streaming decoder that never splits a UTF-8 sequence.
// With --model (a real checkpoint), as vLLM: every id of the model's logits may be drawn, special
// and padding ids included (they decode to nothing when skipped).
#pragma once

#include "common/prompt/model_tokenizer.hpp"
#include "common/prompt/tokenizer.hpp"

#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace lanes::replica {

class vocabulary {
public:
    vocabulary() = default; // the byte vocabulary
    // `whole_vocabulary` > 0: every id below it may be drawn (a checkpoint's logits width).
    explicit vocabulary(std::shared_ptr<const common::model_tokenizer> model,
                        std::size_t whole_vocabulary = 0);

    std::size_t size() const;
    bool is_eos(common::token_id id) const;
    // Whether sampling may draw `id` (EOS only when allowed).
    bool sampleable(common::token_id id, bool allow_eos) const;
    // A token chosen without a model (sim backend): deterministic in (seed, position), drawn
    // from a small alphabet of letters, spaces and punctuation so that the text reads as words.
    common::token_id synthetic(std::uint64_t seed, std::uint64_t position) const;
    const common::model_tokenizer* model() const { return model_.get(); }

    // One sequence's output text, as ids arrive.
    class text_stream {
    public:
        explicit text_stream(const vocabulary& v);
        std::string push(common::token_id id);
        std::string finish();

    private:
        std::optional<common::bpe_stream_decoder> decoder_;
    };

private:
    std::shared_ptr<const common::model_tokenizer> model_;
    std::vector<bool> drawable_; // model vocabulary: ids sampling may draw (EOS aside)
    // Model vocabulary: the id of each byte's one-character token (synthetic_token's letters).
    std::array<common::token_id, 256> letters_{};
};

} // namespace lanes::replica
