// The model's sampling defaults read from generation_config.json as vLLM takes them.
#include "replica/engine/generation_defaults.hpp"

#include <catch2/catch.hpp>

#include <algorithm>
#include <string>

using namespace lanes::replica;

namespace {

bool names(const generation_defaults& d, const std::string& prefix) {
    return std::any_of(d.not_applied.begin(), d.not_applied.end(),
                       [&](const std::string& n) { return n.starts_with(prefix); });
}

} // namespace

TEST_CASE("generation_config: the fields vLLM takes", "[generation_defaults]") {
    std::string error;
    const auto d = parse_generation_defaults(
        R"({"temperature":0.6,"top_p":0.95,"top_k":20,"min_p":0.05,"repetition_penalty":1.1,)"
        R"("max_new_tokens":128,"do_sample":true,"eos_token_id":[1,2],"bos_token_id":1})",
        error);
    CHECK(error.empty());
    CHECK(d.temperature == 0.6);
    CHECK(d.top_p == 0.95);
    CHECK(d.top_k == 20);
    CHECK(d.min_p == 0.05);
    CHECK(d.repetition_penalty == 1.1);
    CHECK(d.max_tokens == 128);
    CHECK(d.not_applied.empty());
    CHECK(d.describe() == "temperature=0.6 top_p=0.95 top_k=20 min_p=0.05 "
                          "repetition_penalty=1.1 max_tokens=128");
}

TEST_CASE("generation_config: transformers' defaults are not taken (to_diff_dict)",
          "[generation_defaults]") {
    std::string error;
    const auto d =
        parse_generation_defaults(R"({"top_k":50,"temperature":1.0,"top_p":1.0})", error);
    CHECK(d.empty());
    CHECK(parse_generation_defaults(R"({"eos_token_id":2})", error).empty());
}

TEST_CASE("generation_config: what the sampler cannot apply is named, bad values dropped",
          "[generation_defaults]") {
    std::string error;
    const auto d = parse_generation_defaults(
        R"({"typical_p":0.9,"no_repeat_ngram_size":3,"num_beams":4,"temperature":-1,)"
        R"("top_p":"x","suppress_tokens":[5],"num_beams_ok":1})",
        error);
    CHECK(error.empty());
    CHECK(d.empty());
    CHECK(names(d, "typical_p=0.9"));
    CHECK(names(d, "no_repeat_ngram_size=3"));
    CHECK(names(d, "num_beams=4"));
    CHECK(names(d, "temperature=-1 (out of range)"));
    CHECK(names(d, "top_p (not a number)"));
    CHECK(names(d, "suppress_tokens"));
    CHECK(
        parse_generation_defaults(R"({"num_beams":1,"typical_p":1.0})", error).not_applied.empty());
}

TEST_CASE("generation_config: not JSON gives no defaults and an error", "[generation_defaults]") {
    std::string error;
    CHECK(parse_generation_defaults("{", error).empty());
    CHECK_FALSE(error.empty());
    error.clear();
    CHECK(parse_generation_defaults("[1]", error).empty());
    CHECK_FALSE(error.empty());
    error.clear();
    CHECK(read_generation_defaults("/nonexistent-dir", error).empty());
    CHECK(error.empty()); // no file: no defaults, as vLLM
}
