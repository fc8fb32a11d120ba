// model_tokenizer on the tiny test tokenizer (tests/fixtures/tokenizer-tiny): the directory read
// as the Hub lays it out, encoding through the segment cache equal to the tokenizer's own, the
// chat template applied as transformers and vLLM apply it.
#include "common/prompt/model_tokenizer.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>

using namespace lanes::common;
using ojson = nlohmann::ordered_json;

namespace {

const std::string tiny_dir = std::string(LANES_SOURCE_DIR) + "/tests/fixtures/tokenizer-tiny";

std::string render(const model_tokenizer& t, const ojson& messages, bool generation = true,
                   bool continue_final = false, const ojson* tools = nullptr) {
    chat_fields f;
    f.messages = &messages;
    f.tools = tools;
    f.add_generation_prompt = generation;
    f.continue_final_message = continue_final;
    return t.render_chat(f, 0);
}

} // namespace

TEST_CASE("model tokenizer: a Hub directory gives ids, end ids and a digest", "[model_tokenizer]") {
    const auto t = model_tokenizer::load(tiny_dir);
    REQUIRE(t->vocab_size() == 439);
    // eos_token from tokenizer_config.json and generation_config.json's list, merged.
    CHECK(std::vector<token_id>(t->eos_ids().begin(), t->eos_ids().end()) ==
          std::vector<token_id>{436, 438});
    CHECK(t->is_eos(438));
    CHECK_FALSE(t->is_eos(437));
    CHECK_FALSE(t->bos_id());
    CHECK(t->has_chat_template());
    CHECK(t->digest().starts_with("xxh128:"));
    CHECK(t->digest().size() == 7 + 32);
    CHECK(model_tokenizer::load(tiny_dir)->digest() == t->digest());
}

TEST_CASE("model tokenizer: a missing or broken directory is refused by name",
          "[model_tokenizer]") {
    CHECK_THROWS_WITH(model_tokenizer::load("/nonexistent-dir"),
                      Catch::Contains("/nonexistent-dir: no readable tokenizer.json"));
    const auto dir = std::filesystem::temp_directory_path() / "lanes-model-tokenizer-test";
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(tiny_dir + "/tokenizer.json", dir / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
    std::ofstream(dir / "tokenizer_config.json") << R"({"chat_template": "{% if %}"})";
    CHECK_THROWS_WITH(model_tokenizer::load(dir.string()), Catch::Contains("chat_template"));
    std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "<|im_end|>"})";
    const auto no_template = model_tokenizer::load(dir.string());
    CHECK_FALSE(no_template->has_chat_template());
    const ojson one = ojson::parse(R"([{"role":"user","content":"hi"}])");
    CHECK_THROWS_AS(render(*no_template, one), chat_render_error);
    std::filesystem::remove_all(dir);
}

TEST_CASE("model tokenizer: cached encoding equals the tokenizer's, and a new turn is all that "
          "is encoded",
          "[model_tokenizer]") {
    const auto t = model_tokenizer::load(tiny_dir, {1 << 16});
    const std::string turn1 = "<|im_start|>system\nThe router sends each prompt to the replica "
                              "that already holds its prefix.<|im_end|>\n";
    const std::string turn2 = "<|im_start|>user\nWhich replica holds the prefix of this "
                              "request, and is it overloaded?<|im_end|>\n";
    for (const std::string& text : {turn1, turn1 + turn2, std::string("caf\xc3\xa9 \xff bad"),
                                    std::string(), std::string("<|im_end|>")}) {
        CHECK(t->encode(text, false) == t->bpe().encode(text, false));
        CHECK(t->encode(text, true) == t->bpe().encode(text, true));
    }
    const auto hits = t->cache().hits();
    const auto misses = t->cache().misses();
    (void)t->encode(turn1 + turn2 + turn1, false);
    CHECK(t->cache().misses() == misses); // every run long enough to cache was seen before
    CHECK(t->cache().hits() > hits);
}

TEST_CASE("segment cache: bounded by the ids it holds, least recently used first out",
          "[model_tokenizer]") {
    segment_cache cache(16 * 4); // 4 ids a shard
    std::vector<token_id> out;
    const std::vector<token_id> three = {1, 2, 3};
    cache.insert("a run of text", three);
    CHECK(cache.find("a run of text", out));
    CHECK(out == three);
    const std::vector<token_id> five = {1, 2, 3, 4, 5};
    cache.insert("too long for a shard", five);
    CHECK_FALSE(cache.find("too long for a shard", out));
    int kept = 0;
    for (int i = 0; i < 200; ++i)
        cache.insert("run " + std::to_string(i), three);
    for (int i = 0; i < 200; ++i)
        kept += cache.find("run " + std::to_string(i), out) ? 1 : 0;
    CHECK(kept <= 16); // one 3-id run a shard
    segment_cache off(0);
    off.insert("x", three);
    CHECK_FALSE(off.find("x", out));
}

TEST_CASE("model tokenizer: chats rendered as transformers renders them", "[model_tokenizer]") {
    const auto t = model_tokenizer::load(tiny_dir);
    const ojson chat = ojson::parse(
        R"([{"role":"system","content":"be brief"},{"role":"user","content":[{"type":"text","text":"one"},{"type":"text","text":"two"}]}])");
    CHECK(render(*t, chat) == "<|im_start|>system\nbe brief<|im_end|>\n"
                              "<|im_start|>user\none\ntwo<|im_end|>\n<|im_start|>assistant\n");
    CHECK(render(*t, chat, false) ==
          "<|im_start|>system\nbe brief<|im_end|>\n<|im_start|>user\none\ntwo<|im_end|>\n");
    // Tools reach the template in the client's key order (tojson as json.dumps).
    const ojson tools =
        ojson::parse(R"([{"type":"function","function":{"name":"f","parameters":{}}}])");
    CHECK(render(*t, chat, true, false, &tools)
              .starts_with("<|im_start|>system\nTools: [{\"type\": \"function\", \"function\": "
                           "{\"name\": \"f\", \"parameters\": {}}}]<|im_end|>\n"));
    // continue_final_message: cut right after the final message, trailing space kept as given.
    const ojson partial = ojson::parse(
        R"([{"role":"user","content":"hi"},{"role":"assistant","content":"The answer is "}])");
    CHECK(render(*t, partial, false, true) ==
          "<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nThe answer is ");
    CHECK_THROWS_WITH(render(*t, partial, true, true), Catch::Contains("cannot both be true"));
    // The template's own raise_exception is the message a client gets.
    const ojson tool_first = ojson::parse(R"([{"role":"tool","content":"42"}])");
    CHECK_THROWS_WITH(render(*t, tool_first), "a conversation cannot start with a tool result");
    const ojson image = ojson::parse(
        R"([{"role":"user","content":[{"type":"image_url","image_url":{"url":"x"}}]}])");
    CHECK_THROWS_WITH(render(*t, image), Catch::Contains("only text content parts"));
}

TEST_CASE("model tokenizer: messages reach the template as vLLM prepares them",
          "[model_tokenizer]") {
    const auto dir = std::filesystem::temp_directory_path() / "lanes-model-tokenizer-prep";
    std::filesystem::create_directories(dir);
    std::filesystem::copy_file(tiny_dir + "/tokenizer.json", dir / "tokenizer.json",
                               std::filesystem::copy_options::overwrite_existing);
    std::ofstream(dir / "tokenizer_config.json")
        << R"({"chat_template": "{{ messages | tojson }}"})";
    const auto t = model_tokenizer::load(dir.string());
    const ojson chat = ojson::parse(R"([
        {"role":"user","content":[{"type":"text","text":"a"},"b",{"type":"text"}],"extra":1},
        {"role":"assistant","content":null,"reasoning_content":"think",
         "tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\": 1}"}},
                       {"id":"c2","type":"function","function":{"name":"g","arguments":""}}]},
        {"role":"assistant","content":"done","tool_calls":[]},
        {"role":"tool","content":"42","tool_call_id":"c1","name":"f"}])");
    CHECK(render(*t, chat, false) ==
          R"([{"role": "user", "content": "a\nb"}, )"
          R"({"role": "assistant", "content": "", "tool_calls": [{"id": "c1", "type": "function", )"
          R"("function": {"name": "f", "arguments": {"x": 1}}}, {"id": "c2", "type": "function", )"
          R"("function": {"name": "g", "arguments": {}}}], "reasoning": "think", )"
          R"("reasoning_content": "think"}, {"role": "assistant", "content": "done"}, )"
          R"({"role": "tool", "content": "42", "tool_call_id": "c1", "name": "f"}])");
    const ojson bad_args = ojson::parse(
        R"([{"role":"assistant","tool_calls":[{"function":{"name":"f","arguments":"{x"}}]}])");
    CHECK_THROWS_WITH(render(*t, bad_args, false), Catch::Contains("not valid JSON"));
    // A template that iterates over content parts gets them as parts, a string included.
    std::ofstream(dir / "tokenizer_config.json")
        << R"({"chat_template": "{% for m in messages %}{% for p in m['content'] %}[{{ p.text }}]{% endfor %}{% endfor %}"})";
    const auto parts = model_tokenizer::load(dir.string());
    const ojson two = ojson::parse(
        R"([{"role":"user","content":"s"},{"role":"user","content":[{"type":"text","text":"t"}]}])");
    CHECK(render(*parts, two, false) == "[s][t]");
    std::filesystem::remove_all(dir);
}
