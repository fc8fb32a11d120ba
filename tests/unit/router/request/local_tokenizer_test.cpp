// The router's in-process token ids: which tokenizer a model gets, and ids equal to what the
// replica computes for the same body (replica/prompt_ids, the same model_tokenizer calls).
#include "router/request/local_tokenizer.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::router;

namespace {

const std::string tiny_dir = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

std::string same(const std::optional<std::string>& named) {
    return named.value_or("");
}

} // namespace

TEST_CASE("local tokenizers: per model, or one for every model", "[local_tokenizer]") {
    const local_tokenizers per_model({{"a=" + tiny_dir}, 1024});
    CHECK(per_model.for_model("a") != nullptr);
    CHECK(per_model.for_model("b") == nullptr);
    const local_tokenizers every({{tiny_dir}, 1024});
    CHECK(every.for_model("b") != nullptr);
    CHECK_THROWS_WITH(local_tokenizers({{tiny_dir, tiny_dir}, 0}),
                      Catch::Contains("two tokenizers for every model"));
    CHECK_THROWS_WITH(local_tokenizers({{"a=/nonexistent-dir"}, 0}),
                      Catch::Contains("/nonexistent-dir"));
}

TEST_CASE("local tokenizers: a body's ids, or none to fall back on", "[local_tokenizer]") {
    const local_tokenizers tokenizers({{"a=" + tiny_dir}, 1024});
    const auto& t = *tokenizers.for_model("a");
    const auto ids = [&](const std::string& body, bool chat) {
        return tokenizers.token_ids(body, chat, same, {}, 0);
    };
    CHECK(ids(R"({"model":"a","prompt":"the replica"})", false) == t.encode("the replica", true));
    CHECK(ids(R"({"model":"a","prompt":"x","add_special_tokens":false})", false) ==
          t.encode("x", false));
    CHECK(ids(R"({"model":"a","messages":[{"role":"user","content":"hi"}]})", true) ==
          t.encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", false));
    CHECK_FALSE(ids(R"({"model":"b","prompt":"x"})", false));       // no tokenizer for b
    CHECK_FALSE(ids(R"({"model":"a","prompt":[1,2]})", false));     // ids already
    CHECK_FALSE(ids(R"({"model":"a","prompt":["x","y"]})", false)); // a batch
    CHECK_FALSE(ids(R"({"model":"a","messages":[{"role":"tool","content":"1"}]})", true));
    CHECK_FALSE(ids(R"({"model":"a","messages":[]})", true));
    CHECK_FALSE(ids("not json", false));
    CHECK_FALSE(tokenizers.token_ids(R"({"model":"a","prompt":"x","n":[[[[1]]]]})", false, same,
                                     {3, 100}, 0));
}
