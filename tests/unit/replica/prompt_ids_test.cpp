// The ids a request runs: the byte vocabulary as before, and a model's tokenizer (the tiny test
// tokenizer) with vLLM's defaults for special tokens and chat rendering.
#include "replica/prompt_ids.hpp"

#include <catch2/catch.hpp>

using namespace lanes;
using namespace lanes::replica;
namespace openai = lanes::common::openai;

namespace {

const std::string tiny_dir = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

prompt_ids_result ids_of(const vocabulary& v, openai::endpoint kind, const std::string& body) {
    openai::request_limits limits;
    limits.vocab_size = v.size();
    const auto parsed = openai::parse_generation_request(kind, body, limits);
    REQUIRE(parsed.request);
    return prompt_ids(*parsed.request, body, v, 0);
}

} // namespace

TEST_CASE("prompt ids: the byte vocabulary puts BOS first unless asked not to", "[prompt_ids]") {
    const vocabulary bytes;
    const auto c = openai::endpoint::completions;
    CHECK(ids_of(bytes, c, R"({"prompt":"ab"})").ids == std::vector<common::token_id>{256, 97, 98});
    CHECK(ids_of(bytes, c, R"({"prompt":"ab","add_special_tokens":false})").ids ==
          std::vector<common::token_id>{97, 98});
    CHECK(ids_of(bytes, c, R"({"prompt":[5,6]})").ids == std::vector<common::token_id>{256, 5, 6});
    const auto bad = ids_of(bytes, c, R"({"prompt":"ab","add_special_tokens":"no"})");
    REQUIRE(bad.error);
    CHECK(bad.error->param == "add_special_tokens");
}

TEST_CASE("prompt ids: a model's tokenizer, with vLLM's defaults", "[prompt_ids]") {
    const auto t = common::model_tokenizer::load(tiny_dir);
    const vocabulary v(t);
    const auto c = openai::endpoint::completions;
    const auto chat = openai::endpoint::chat_completions;
    CHECK(ids_of(v, c, R"({"prompt":"the replica"})").ids == t->encode("the replica", true));
    // Ids as given (no BOS of another vocabulary), each inside the vocabulary.
    CHECK(ids_of(v, c, R"({"prompt":[5,438]})").ids == std::vector<common::token_id>{5, 438});
    openai::request_limits limits;
    limits.vocab_size = v.size();
    const auto outside = openai::parse_generation_request(c, R"({"prompt":[5,439]})", limits).error;
    REQUIRE(outside);
    CHECK(outside->message.find("[0, 438]") != std::string::npos);
    // Chat: the model's template, then encoded without the post-processor's tokens.
    const auto one = ids_of(v, chat, R"({"messages":[{"role":"user","content":"hi"}]})");
    CHECK(one.ids == t->encode("<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\n", false));
    CHECK(one.ids.front() == 437);
    const auto no_prompt = ids_of(
        v, chat, R"({"messages":[{"role":"user","content":"hi"}],"add_generation_prompt":false})");
    CHECK(no_prompt.ids == t->encode("<|im_start|>user\nhi<|im_end|>\n", false));
    // The template's refusal is the client's 400, worded by the template.
    const auto refused = ids_of(v, chat, R"({"messages":[{"role":"tool","content":"1"}]})");
    REQUIRE(refused.error);
    CHECK(refused.error->status == 400);
    CHECK(refused.error->message == "a conversation cannot start with a tool result");
    const auto both = ids_of(
        v, chat, R"({"messages":[{"role":"user","content":"hi"}],"continue_final_message":true})");
    REQUIRE(both.error);
    CHECK(both.error->message.find("cannot both be true") != std::string::npos);
    const auto kwargs = ids_of(
        v, chat, R"({"messages":[{"role":"user","content":"hi"}],"chat_template_kwargs":[1]})");
    REQUIRE(kwargs.error);
    CHECK(kwargs.error->param == "chat_template_kwargs");
}

TEST_CASE("prompt ids: token strings as the vocabulary spells them", "[prompt_ids]") {
    const vocabulary v(common::model_tokenizer::load(tiny_dir));
    const auto& bpe = v.model()->bpe();
    const auto ids = bpe.encode("<|im_start|> the", false);
    const auto strs = token_strings(v, ids);
    REQUIRE(strs.size() == ids.size());
    CHECK(strs.front() == "<|im_start|>");
    CHECK(strs.back().starts_with("\xc4\xa0")); // byte-level form of the leading space: U+0120
}
