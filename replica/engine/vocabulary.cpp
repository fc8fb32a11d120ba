#include "replica/engine/vocabulary.hpp"

#include "replica/engine/sampler.hpp"

namespace lanes::replica {

vocabulary::vocabulary(std::shared_ptr<const common::model_tokenizer> model,
                       std::size_t whole_vocabulary)
    : model_(std::move(model)) {
    const auto& bpe = model_->bpe();
    if (whole_vocabulary > 0) {
        drawable_.assign(whole_vocabulary, true);
    } else {
        drawable_.resize(bpe.vocab_size());
        for (std::size_t id = 0; id < drawable_.size(); ++id) {
            const auto t = static_cast<common::token_id>(id);
            drawable_[id] = !bpe.is_special(t) && !bpe.token_bytes(t).empty();
        }
    }
    for (std::size_t byte = 0; byte < letters_.size(); ++byte) {
        const char c = static_cast<char>(byte);
        letters_[byte] = bpe.find(std::string_view(&c, 1)).value_or(0);
    }
}

std::size_t vocabulary::size() const {
    return model_ ? model_->vocab_size() : common::vocab_size;
}

bool vocabulary::is_eos(common::token_id id) const {
    return model_ ? model_->is_eos(id) : id == common::eos_token;
}

bool vocabulary::sampleable(common::token_id id, bool allow_eos) const {
    if (is_eos(id))
        return allow_eos;
    if (!model_)
        return replica::sampleable(id, allow_eos);
    return id < drawable_.size() && drawable_[id];
}

common::token_id vocabulary::synthetic(std::uint64_t seed, std::uint64_t position) const {
    const common::token_id byte = synthetic_token(seed, position);
    return model_ ? letters_[byte & 0xff] : byte;
}

vocabulary::text_stream::text_stream(const vocabulary& v) {
    if (v.model_)
        decoder_.emplace(v.model_->bpe());
}

std::string vocabulary::text_stream::push(common::token_id id) {
    if (decoder_)
        return decoder_->push(id);
    return std::string(1, static_cast<char>(id));
}

std::string vocabulary::text_stream::finish() {
    return decoder_ ? decoder_->finish() : std::string();
}

} // namespace lanes::replica
