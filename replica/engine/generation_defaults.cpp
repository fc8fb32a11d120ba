#include "replica/engine/generation_defaults.hpp"

#include <array>
#include <fstream>
#include <sstream>
#include <utility>

#include <nlohmann/json.hpp>

namespace lanes::replica {

namespace {

using json = nlohmann::json;

// transformers' GenerationConfig fields that change what is drawn, with the value that leaves
// sampling alone; vLLM's sampler applies none of them.
constexpr std::array<std::pair<const char*, double>, 10> unapplied_numbers{{
    {"typical_p", 1.0},
    {"epsilon_cutoff", 0.0},
    {"eta_cutoff", 0.0},
    {"no_repeat_ngram_size", 0.0},
    {"num_beams", 1.0},
    {"penalty_alpha", 0.0},
    {"encoder_repetition_penalty", 1.0},
    {"min_new_tokens", 0.0},
    {"min_length", 0.0},
    {"guidance_scale", 1.0},
}};
constexpr std::array<const char*, 6> unapplied_lists{
    {"bad_words_ids", "suppress_tokens", "begin_suppress_tokens", "sequence_bias",
     "forced_bos_token_id", "forced_eos_token_id"}};

template <typename T>
void take(const json& j, const char* key, std::optional<T>& out, bool (*valid)(T),
          std::vector<std::string>& not_applied) {
    const auto it = j.find(key);
    if (it == j.end() || it->is_null())
        return;
    if (!it->is_number() || (std::is_integral_v<T> && !it->is_number_integer())) {
        not_applied.push_back(std::string(key) + " (not a number)");
        return;
    }
    const T value = it->get<T>();
    if (!valid(value)) {
        not_applied.push_back(std::string(key) + "=" + it->dump() + " (out of range)");
        return;
    }
    out = value;
}

} // namespace

std::string generation_defaults::describe() const {
    std::ostringstream out;
    const auto put = [&out](const char* name, const auto& v) {
        if (v)
            out << (out.tellp() > 0 ? " " : "") << name << "=" << *v;
    };
    put("temperature", temperature);
    put("top_p", top_p);
    put("top_k", top_k);
    put("min_p", min_p);
    put("repetition_penalty", repetition_penalty);
    put("max_tokens", max_tokens);
    return out.str();
}

generation_defaults parse_generation_defaults(std::string_view json_text, std::string& error) {
    generation_defaults d;
    const json j = json::parse(json_text.begin(), json_text.end(), nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        error = "generation_config.json is not a JSON object";
        return d;
    }
    auto& skip = d.not_applied;
    // The request's bounds (SamplingParams._verify_args): a default out of them is dropped,
    // else every request that leaves the field unset would be refused.
    take<double>(
        j, "temperature", d.temperature, [](double v) { return v >= 0.0; }, skip);
    take<double>(
        j, "top_p", d.top_p, [](double v) { return v > 0.0 && v <= 1.0; }, skip);
    take<std::int64_t>(
        j, "top_k", d.top_k, [](std::int64_t v) { return v >= -1; }, skip);
    take<double>(
        j, "min_p", d.min_p, [](double v) { return v >= 0.0 && v <= 1.0; }, skip);
    take<double>(
        j, "repetition_penalty", d.repetition_penalty, [](double v) { return v > 0.0; }, skip);
    take<std::int64_t>(
        j, "max_new_tokens", d.max_tokens, [](std::int64_t v) { return v >= 1; }, skip);
    // to_diff_dict drops what equals transformers' defaults (top_k 50; 1.0 for the others).
    if (d.top_k == 50)
        d.top_k.reset();
    for (auto* neutral_one : {&d.temperature, &d.top_p, &d.repetition_penalty})
        if (*neutral_one == 1.0)
            neutral_one->reset();
    for (const auto& [key, neutral] : unapplied_numbers) {
        const auto it = j.find(key);
        if (it != j.end() && it->is_number() && it->get<double>() != neutral)
            skip.push_back(std::string(key) + "=" + it->dump());
    }
    for (const char* key : unapplied_lists) {
        const auto it = j.find(key);
        if (it != j.end() && !it->is_null() && !(it->is_array() && it->empty()))
            skip.emplace_back(key);
    }
    return d;
}

generation_defaults read_generation_defaults(const std::filesystem::path& dir, std::string& error) {
    const auto path = dir / "generation_config.json";
    std::error_code ec;
    if (!std::filesystem::is_regular_file(path, ec))
        return {};
    std::ifstream in(path, std::ios::binary);
    std::ostringstream text;
    text << in.rdbuf();
    if (!in) {
        error = "cannot read " + path.string();
        return {};
    }
    return parse_generation_defaults(text.str(), error);
}

} // namespace lanes::replica
