// A request's sampling resolved over the model's defaults, and the checks that need it resolved.
#include "replica/sampling_request.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::replica;
namespace openai = lanes::common::openai;

namespace {

sampling_params resolve(const openai::generation_request& g, const generation_defaults& d = {},
                        sampling_inputs in = {.max_tokens = 16, .seed = 5, .vocab = 258}) {
    sampling_params s;
    const auto e = resolve_sampling(g, d, in, s);
    INFO((e ? e->message : ""));
    REQUIRE_FALSE(e);
    return s;
}

} // namespace

TEST_CASE("sampling: unset fields take the model's defaults, else vLLM's neutral values",
          "[sampling_request]") {
    openai::generation_request g;
    const auto neutral = resolve(g);
    CHECK(neutral.temperature == 1.0);
    CHECK(neutral.top_p == 1.0);
    CHECK(neutral.top_k == 0);
    CHECK(neutral.min_p == 0.0);
    CHECK(neutral.repetition_penalty == 1.0);
    CHECK(neutral.seed == 5);
    CHECK(neutral.max_tokens == 16);
    CHECK_FALSE(neutral.logprobs);
    generation_defaults d;
    d.temperature = 0.6;
    d.top_p = 0.9;
    d.top_k = 20;
    d.min_p = 0.05;
    d.repetition_penalty = 1.1;
    const auto model = resolve(g, d);
    CHECK(model.temperature == 0.6);
    CHECK(model.top_p == 0.9);
    CHECK(model.top_k == 20);
    CHECK(model.min_p == 0.05);
    CHECK(model.repetition_penalty == 1.1);
    // The request's own values win, 0 included.
    g.temperature = 0.0;
    g.top_k = -1; // off, as 0
    g.min_p = 0.0;
    const auto own = resolve(g, d);
    CHECK(own.temperature == 0.0);
    CHECK(own.top_k == 0);
    CHECK(own.min_p == 0.0);
    CHECK(own.top_p == 0.9);
}

TEST_CASE("sampling: vLLM's temperature floor, stop ids in the vocabulary, logprobs -1",
          "[sampling_request]") {
    openai::generation_request g;
    g.temperature = 0.001;
    g.stop_token_ids = {5, -1, 258, 257};
    g.logprobs = -1;
    const auto s = resolve(g, {}, {.max_tokens = 16, .seed = 1, .vocab = 258, .max_logprobs = -1});
    CHECK(s.temperature == 0.01);
    CHECK(s.stop_token_ids == std::vector<common::token_id>{5, 257});
    CHECK(s.logprobs == 258u);
}

TEST_CASE("sampling: the checks that need the replica are 400s naming the field",
          "[sampling_request]") {
    const auto refusal = [](const openai::generation_request& g, const sampling_inputs& in) {
        sampling_params s;
        const auto e = resolve_sampling(g, {}, in, s);
        REQUIRE(e);
        CHECK(e->status == 400);
        return *e;
    };
    openai::generation_request g;
    g.logprobs = 21;
    auto e = refusal(g, {.vocab = 258});
    CHECK(e.message == "Requested sample logprobs of 21, which is greater than max allowed: 20");
    CHECK(e.param == "logprobs");
    g.kind = openai::endpoint::chat_completions;
    CHECK(refusal(g, {.vocab = 258}).param == "top_logprobs");
    g.logprobs = 0;
    e = refusal(g, {.vocab = 258, .has_logits = false});
    CHECK(e.param == "logprobs");
    g.logprobs.reset();
    g.min_tokens = 17;
    e = refusal(g, {.max_tokens = 16, .vocab = 258});
    CHECK(e.message == "min_tokens must be less than or equal to max_tokens=16, got 17.");
    CHECK(e.param == "min_tokens");
}
