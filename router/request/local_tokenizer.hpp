// The engine's token ids computed in process (--tokenizer [MODEL=]DIR, repeatable): each model's
// tokenizer directory loaded at start (common::model_tokenizer), a request's chat rendered with
// the model's template and encoded, or its text prompt encoded, exactly as vLLM does, so that
// its blocks hash as the engine's KV events do with no /tokenize round trip. Text runs between
// special tokens are cached, so a conversation that grows encodes only its new turn. A model
// with no tokenizer, or a body this cannot render (the engine will say why), is routed as
// before (the /tokenize endpoint when set, else its text).
#pragma once

#include "common/prompt/model_tokenizer.hpp"

#include <nlohmann/json_fwd.hpp>

#include <cstddef>
#include <cstdint>
#include <ctime>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::router {

struct local_tokenizer_settings {
    // "DIR" (every model) or "MODEL=DIR"; --tokenizer, repeatable.
    std::vector<std::string> directories;
    std::size_t cache_tokens = std::size_t{1} << 22; // --tokenizer-cache-tokens, per tokenizer
};

class local_tokenizers {
public:
    // Loads every directory; throws std::runtime_error naming the one that fails.
    explicit local_tokenizers(const local_tokenizer_settings& s);

    bool empty() const { return by_model_.empty() && !any_model_; }
    // The tokenizer of `model`: its own, else the one given without a model, else null.
    const common::model_tokenizer* for_model(std::string_view model) const;
    // Every loaded tokenizer by the model it is for ("" for the one without a model).
    const std::map<std::string, std::shared_ptr<const common::model_tokenizer>, std::less<>>&
    by_model() const {
        return by_model_;
    }

    struct bounds {
        std::size_t max_depth = 64;
        std::size_t max_values = 1'000'000;
    };
    // The ids of a completions (chat false) or chat request body, with the tokenizer of the
    // model `resolve` makes of the one it names; nullopt when that model has no tokenizer or
    // the body is not one to render (a prompt given as ids or a batch, a template's refusal,
    // a bound).
    using model_resolver = std::function<std::string(const std::optional<std::string>&)>;
    std::optional<std::vector<std::uint32_t>> token_ids(std::string_view body, bool chat,
                                                        const model_resolver& resolve, bounds b,
                                                        std::time_t now) const;

private:
    std::map<std::string, std::shared_ptr<const common::model_tokenizer>, std::less<>> by_model_;
    const common::model_tokenizer* any_model_ = nullptr;
};

// A body as the chat template's JSON (null when it is not JSON), read with simdjson: several times
// faster than nlohmann's parser, which dominated a long chat's decision. Keys keep the body's
// order; a repeated key keeps its first place and its last value, as Python's json.loads does.
// The body must be bounded already (common::measure_json).
nlohmann::ordered_json read_template_json(std::string_view body);

} // namespace lanes::router
