#include "common/prompt/bpe_tokenizer.hpp"

#include <catch2/catch.hpp>
#include <nlohmann/json.hpp>

#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

using namespace lanes::common;
using nlohmann::json;

namespace {

std::string utf8(char32_t cp) {
    std::string s;
    if (cp < 0x80) {
        s += static_cast<char>(cp);
    } else {
        s += static_cast<char>(0xc0 | (cp >> 6));
        s += static_cast<char>(0x80 | (cp & 0x3f));
    }
    return s;
}

// A tokenizer.json written by hand: ids 0..255 are the bytes (in the byte-level alphabet), then
// the merges' results and extra entries, in order, all plain ASCII letters.
struct tiny {
    std::vector<std::pair<std::string, std::string>> merges;
    std::vector<std::string> extra_vocab;
    bool ignore_merges = false;
    bool merges_as_pairs = false;
    json added = json::array();
    json post_processor = nullptr;
    json normalizer = nullptr;
    json pre_tokenizer = {{"type", "ByteLevel"}, {"add_prefix_space", false}, {"use_regex", true}};
    json model_extra = json::object();

    std::string text() const {
        json vocab = json::object();
        const auto alphabet = byte_level_alphabet();
        for (std::size_t b = 0; b < 256; ++b) {
            vocab[utf8(alphabet[b])] = b;
        }
        json merge_list = json::array();
        for (const auto& [l, r] : merges) {
            merge_list.push_back(merges_as_pairs ? json::array({l, r}) : json(l + " " + r));
            if (!vocab.contains(l + r)) {
                vocab[l + r] = vocab.size();
            }
        }
        for (const auto& word : extra_vocab) {
            vocab[word] = vocab.size();
        }
        json model = {{"type", "BPE"},
                      {"dropout", nullptr},
                      {"unk_token", nullptr},
                      {"byte_fallback", false},
                      {"ignore_merges", ignore_merges},
                      {"vocab", vocab},
                      {"merges", merge_list}};
        model.update(model_extra);
        json doc = {{"version", "1.0"},
                    {"truncation", nullptr},
                    {"added_tokens", added},
                    {"normalizer", normalizer},
                    {"pre_tokenizer", pre_tokenizer},
                    {"post_processor", post_processor},
                    {"decoder", {{"type", "ByteLevel"}}},
                    {"model", model}};
        return doc.dump();
    }
    bpe_tokenizer load() const { return bpe_tokenizer::from_json(text()); }
};

json added_token(token_id id, const std::string& content, bool special) {
    return {{"id", id},        {"content", content},   {"special", special}, {"lstrip", false},
            {"rstrip", false}, {"single_word", false}, {"normalized", false}};
}

std::string load_error(const tiny& t) {
    try {
        t.load();
    } catch (const std::runtime_error& e) {
        return e.what();
    }
    return "loaded";
}

} // namespace

TEST_CASE("byte_level_alphabet is GPT-2's bytes_to_unicode", "[bpe]") {
    const auto alphabet = byte_level_alphabet();
    REQUIRE(alphabet['!'] == U'!');
    REQUIRE(alphabet['~'] == U'~');
    REQUIRE(alphabet[0xe9] == U'\u00e9');
    REQUIRE(alphabet[0] == U'\u0100');
    REQUIRE(alphabet[' '] == U'\u0120');  // "Ġ"
    REQUIRE(alphabet['\n'] == U'\u010a'); // "Ċ"
    REQUIRE(alphabet[0x7f] == U'\u0121');
    REQUIRE(alphabet[0xad] == U'\u0143');
    const std::set<char32_t> distinct(alphabet.begin(), alphabet.end());
    REQUIRE(distinct.size() == 256);
}

TEST_CASE("BPE merges the lowest rank first, leftmost among equals, short and long words",
          "[bpe]") {
    tiny t;
    t.merges = {{"b", "c"}, {"a", "b"}, {"a", "a"}, {"aa", "aa"}};
    const auto tok = t.load();
    const token_id bc = 256;
    const token_id ab = 257;
    const token_id aa = 258;
    const token_id aaaa = 259;
    REQUIRE(tok.encode("abc", false) == std::vector<token_id>{'a', bc});
    REQUIRE(tok.encode("abab", false) == std::vector<token_id>{ab, ab});
    REQUIRE(tok.encode("aaaaaaa", false) == std::vector<token_id>{aaaa, aa, 'a'});
    // Past 64 symbols the merge runs on a heap: the same result.
    for (std::size_t n : {63, 64, 65, 201, 4001}) {
        std::vector<token_id> want(n / 4, aaaa);
        if (n % 4 >= 2) {
            want.push_back(aa);
        }
        if (n % 2 == 1) {
            want.push_back('a');
        }
        REQUIRE(tok.encode(std::string(n, 'a'), false) == want);
    }
    tiny pairs = t;
    pairs.merges_as_pairs = true;
    REQUIRE(pairs.load().encode("abc aaaaaaa", false) == tok.encode("abc aaaaaaa", false));
}

TEST_CASE("ignore_merges: a pre-token that is itself in the vocabulary is one token", "[bpe]") {
    tiny t;
    t.merges = {{"a", "b"}};
    t.extra_vocab = {"abc"};
    const token_id ab = 256;
    const token_id abc = 257;
    REQUIRE(t.load().encode("abc", false) == std::vector<token_id>{ab, 'c'});
    t.ignore_merges = true;
    REQUIRE(t.load().encode("abc", false) == std::vector<token_id>{abc});
    REQUIRE(t.load().encode("abcd", false) == std::vector<token_id>{ab, 'c', 'd'});
}

TEST_CASE("added tokens split the text first, and decode skips only the special ones", "[bpe]") {
    tiny t;
    t.merges = {{"h", "i"}};
    t.added = json::array({added_token(300, "<x>", true), added_token(301, "<x>y", false),
                           added_token(302, "<bos>", true)});
    t.post_processor = {
        {"type", "TemplateProcessing"},
        {"single",
         json::array({{{"SpecialToken", {{"id", "<bos>"}}}}, {{"Sequence", {{"id", "A"}}}}})},
        {"special_tokens", {{"<bos>", {{"id", "<bos>"}, {"ids", json::array({302})}}}}}};
    const auto tok = t.load();
    const token_id hi = 256;
    REQUIRE(tok.encode("hi<x>hi", false) == std::vector<token_id>{hi, 300, hi});
    // Leftmost-longest: "<x>y" wins over "<x>".
    REQUIRE(tok.encode("<x>y<x>", false) == std::vector<token_id>{301, 300});
    REQUIRE(tok.encode("<x", false) == std::vector<token_id>{'<', 'x'});
    REQUIRE(tok.encode("hi", true) == std::vector<token_id>{302, hi});
    REQUIRE(tok.encode("", true) == std::vector<token_id>{302});
    const std::vector<token_id> ids = {302, hi, 300, 301, 9999};
    REQUIRE(tok.decode(ids, true) == "hi<x>y");
    REQUIRE(tok.decode(ids, false) == "<bos>hi<x><x>y");
    REQUIRE(tok.find("<x>") == token_id{300});
    REQUIRE(tok.find("hi") == hi);
    REQUIRE(tok.vocab_size() == 303);
}

TEST_CASE("the stream decoder holds back a split UTF-8 sequence and matches decode", "[bpe]") {
    const auto tok = tiny{}.load();
    const auto ids = tok.encode("a\xf0\x9f\x98\x80\xc3\xa9", false); // a, 4 bytes, 2 bytes
    REQUIRE(ids.size() == 7);
    bpe_stream_decoder stream(tok);
    std::vector<std::string> out;
    for (token_id id : ids) {
        out.push_back(stream.push(id));
    }
    REQUIRE(out == std::vector<std::string>{"a", "", "", "", "\xf0\x9f\x98\x80", "", "\xc3\xa9"});
    REQUIRE(stream.finish().empty());
    // A sequence cut short by the end becomes U+FFFD, as in decode.
    REQUIRE(stream.push(0xf0) == "");
    REQUIRE(stream.push(0x9f) == "");
    REQUIRE(stream.finish() == "\xef\xbf\xbd");
    REQUIRE(tok.decode(std::vector<token_id>{0xf0, 0x9f}) == "\xef\xbf\xbd");
    // One that cannot continue goes out at once.
    REQUIRE(stream.push(0xf0) == "");
    REQUIRE(stream.push('x') == "\xef\xbf\xbdx");
}

TEST_CASE("NFC composes before splitting when the file says so", "[bpe]") {
    tiny t;
    const auto plain = t.load();
    t.normalizer = {{"type", "NFC"}};
    const auto nfc = t.load();
    REQUIRE(plain.encode("e\xcc\x81", false) == std::vector<token_id>{'e', 0xcc, 0x81});
    REQUIRE(nfc.encode("e\xcc\x81", false) == std::vector<token_id>{0xc3, 0xa9});
    // Invalid UTF-8 is repaired first (U+FFFD), never passed to the regex.
    REQUIRE(nfc.encode("\xff", false) == std::vector<token_id>{0xef, 0xbf, 0xbd});
}

TEST_CASE("what bpe_tokenizer does not implement is refused, naming the field", "[bpe]") {
    tiny t;
    t.normalizer = {{"type", "Lowercase"}};
    REQUIRE_THAT(load_error(t), Catch::Contains("normalizer") && Catch::Contains("Lowercase"));
    t = tiny{};
    t.model_extra = {{"byte_fallback", true}};
    REQUIRE_THAT(load_error(t), Catch::Contains("model.byte_fallback"));
    t = tiny{};
    t.model_extra = {{"type", "Unigram"}};
    REQUIRE_THAT(load_error(t), Catch::Contains("model.type"));
    t = tiny{};
    t.pre_tokenizer = {{"type", "Metaspace"}};
    REQUIRE_THAT(load_error(t), Catch::Contains("pre_tokenizer") && Catch::Contains("Metaspace"));
    t = tiny{};
    t.pre_tokenizer = {
        {"type", "Sequence"},
        {"pretokenizers",
         json::array(
             {{{"type", "Split"}, {"pattern", {{"Regex", "(unclosed"}}}, {"behavior", "Isolated"}},
              {{"type", "ByteLevel"}, {"use_regex", false}}})}};
    REQUIRE_THAT(load_error(t), Catch::Contains("pre_tokenizer.pretokenizers[0].pattern.Regex"));
    t = tiny{};
    t.merges = {{"q", "zz"}};
    REQUIRE_THAT(load_error(t), Catch::Contains("model.merges[0]"));
    REQUIRE_THROWS_WITH(bpe_tokenizer::from_file("/nonexistent/tokenizer.json"),
                        Catch::Contains("cannot read /nonexistent/tokenizer.json"));
}
