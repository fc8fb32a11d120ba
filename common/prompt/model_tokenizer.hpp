// A model's tokenizer directory as the Hub ships it, read the way vLLM applies it: tokenizer.json
// (bpe_tokenizer), tokenizer_config.json (chat_template, bos_token, eos_token) or a
// chat_template.jinja beside it, and generation_config.json (eos_token_id, one id or a list).
// Both servers use it: the replica to run and answer in the model's ids, the router to hash the
// very ids the engine will cache. Chats are rendered with the model's Jinja template as
// transformers renders them (jinja.hpp); text is encoded run by run between added tokens, each
// run's ids kept in a segment_cache, so a growing conversation encodes only what is new.
#pragma once

#include "common/prompt/bpe_tokenizer.hpp"
#include "common/prompt/segment_cache.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <ctime>
#include <memory>
#include <optional>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace lanes::common {

class jinja_template;

// A chat request the template cannot render (its own raise_exception, a final message that
// continue_final_message cannot find, both generation flags set, no template): a 400 whose
// message is this what().
struct chat_render_error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// What a chat request gives the template, as the client sent it (vLLM's ChatCompletionRequest
// fields); pointers into the request's JSON, null when absent. The JSON keeps the client's key
// order (ordered_json), as Python's dicts do: tojson writes tools in that order.
struct chat_fields {
    const nlohmann::ordered_json* messages = nullptr;
    const nlohmann::ordered_json* tools = nullptr;
    const nlohmann::ordered_json* kwargs = nullptr; // chat_template_kwargs (an object)
    bool add_generation_prompt = true;
    bool continue_final_message = false;
};

class model_tokenizer {
public:
    struct options {
        // --tokenizer-cache-tokens: ids the segment cache may hold (0: no cache).
        std::size_t cache_ids = std::size_t{1} << 22;
    };
    // Throws std::runtime_error naming the file and what is wrong with it.
    static std::shared_ptr<const model_tokenizer> load(const std::string& directory,
                                                       const options& opts);
    static std::shared_ptr<const model_tokenizer> load(const std::string& directory) {
        return load(directory, options{});
    }
    ~model_tokenizer();

    // encode() of the bpe_tokenizer, through the segment cache.
    std::vector<token_id> encode(std::string_view text, bool add_special_tokens) const;
    std::string decode(std::span<const token_id> ids, bool skip_special_tokens = true) const {
        return bpe_.decode(ids, skip_special_tokens);
    }
    // The chat template applied to a request, as transformers' apply_chat_template (tokenize
    // false) with vLLM's message preparation. `now` is what strftime_now formats (UTC): both
    // servers pass the wall clock, so they render the same date. Throws chat_render_error.
    std::string render_chat(const chat_fields& chat, std::time_t now) const;
    bool has_chat_template() const { return chat_template_ != nullptr; }

    const bpe_tokenizer& bpe() const { return bpe_; }
    std::size_t vocab_size() const { return bpe_.vocab_size(); }
    bool is_eos(token_id id) const;
    std::span<const token_id> eos_ids() const { return eos_ids_; }
    std::optional<token_id> bos_id() const { return bos_id_; }
    // "xxh128:" and the hash of tokenizer.json and the chat template: what a lanes replica
    // reports on /v1/models, so a router can tell whether it holds the same tokenizer.
    const std::string& digest() const { return digest_; }
    const std::string& directory() const { return directory_; }
    const segment_cache& cache() const { return cache_; }

    model_tokenizer(bpe_tokenizer bpe, std::size_t cache_ids);

private:
    bpe_tokenizer bpe_;
    segment_cache cache_;
    std::unique_ptr<jinja_template> chat_template_;
    bool content_as_parts_ = false; // the template iterates over a message's content parts
    // bos_token, eos_token, unk_token, pad_token: those tokenizer_config.json sets.
    std::vector<std::pair<std::string, std::string>> special_tokens_;
    std::vector<token_id> eos_ids_;
    std::optional<token_id> bos_id_;
    std::string digest_;
    std::string directory_;
};

} // namespace lanes::common
