// Reading a tokenizer.json into bpe_tokenizer's state, refusing what lanes does not implement: the
// pipeline's stages here (normalizer, pre-tokenizer, post-processor, decoder), the vocabulary in
// bpe_vocab_load.cpp.
#include "common/prompt/bpe_load.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

namespace lanes::common {

namespace bpe_load {

[[noreturn]] void fail(const std::string& field, const std::string& what) {
    throw std::runtime_error("tokenizer.json: " + field + ": " + what);
}

bool flag(const json& j, const char* key, bool fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

} // namespace bpe_load

using namespace bpe_load;

namespace {

// GPT-2's split, what a ByteLevel pre-tokenizer with use_regex: true applies.
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

std::string type_of(const json& j, const std::string& field) {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        fail(field, "an object with a \"type\" is expected");
    }
    return j["type"].get<std::string>();
}

void* compile_regex(std::string_view pattern, bool literal, const std::string& field) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    const std::uint32_t options = PCRE2_UTF | PCRE2_UCP | (literal ? PCRE2_LITERAL : 0);
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                                     options, &error, &offset, nullptr);
    if (code == nullptr) {
        PCRE2_UCHAR message[256];
        pcre2_get_error_message(error, message, sizeof message);
        fail(field, "PCRE2 cannot compile the pattern at offset " + std::to_string(offset) + ": " +
                        reinterpret_cast<const char*>(message));
    }
    pcre2_jit_compile(code, PCRE2_JIT_COMPLETE); // without JIT (unsupported CPU) it interprets
    return code;
}

bool load_normalizer(const json& n, const std::string& field) {
    if (n.is_null()) {
        return false;
    }
    const std::string type = type_of(n, field);
    if (type == "NFC") {
        return true;
    }
    if (type == "Sequence" && n.contains("normalizers") && n["normalizers"].is_array()) {
        bool any_nfc = false;
        for (std::size_t i = 0; i < n["normalizers"].size(); ++i) {
            any_nfc = load_normalizer(n["normalizers"][i],
                                      field + ".normalizers[" + std::to_string(i) + "]") ||
                      any_nfc;
        }
        return any_nfc;
    }
    fail(field, "type \"" + type + "\" is not supported (supported: NFC, a Sequence of it, none)");
}

void load_pre_tokenizer(const json& p, bpe_tokenizer::impl& t) {
    if (p.is_null()) {
        fail("pre_tokenizer", "none: byte-level BPE needs a ByteLevel pre-tokenizer");
    }
    std::vector<std::pair<const json*, std::string>> steps;
    if (type_of(p, "pre_tokenizer") == "Sequence") {
        if (!p.contains("pretokenizers") || !p["pretokenizers"].is_array()) {
            fail("pre_tokenizer.pretokenizers", "an array is expected");
        }
        const json& list = p["pretokenizers"]; // a reference into p: steps point into it
        for (std::size_t i = 0; i < list.size(); ++i) {
            steps.emplace_back(&list[i], "pre_tokenizer.pretokenizers[" + std::to_string(i) + "]");
        }
    } else {
        steps.emplace_back(&p, "pre_tokenizer");
    }
    bool byte_level = false;
    for (const auto& [step, field] : steps) {
        const std::string type = type_of(*step, field);
        if (byte_level) {
            fail(field, "\"" + type + "\" after ByteLevel is not supported (ByteLevel comes last)");
        }
        if (type == "Split") {
            const std::string behavior = step->value("behavior", "");
            if (behavior != "Isolated") {
                fail(field + ".behavior",
                     "\"" + behavior + "\" is not supported (supported: Isolated)");
            }
            if (flag(*step, "invert", false)) {
                fail(field + ".invert", "true is not supported");
            }
            const json& pattern = step->value("pattern", json::object());
            auto compiled = std::make_unique<bpe_tokenizer::impl::compiled_regex>();
            if (pattern.contains("Regex") && pattern["Regex"].is_string()) {
                compiled->code = compile_regex(pattern["Regex"].get<std::string>(), false,
                                               field + ".pattern.Regex");
            } else if (pattern.contains("String") && pattern["String"].is_string()) {
                compiled->code = compile_regex(pattern["String"].get<std::string>(), true,
                                               field + ".pattern.String");
            } else {
                fail(field + ".pattern", "a {\"Regex\": ...} or {\"String\": ...} is expected");
            }
            t.splits_.push_back(std::move(compiled));
        } else if (type == "ByteLevel") {
            byte_level = true;
            if (flag(*step, "add_prefix_space", false)) {
                fail(field + ".add_prefix_space", "true is not supported");
            }
            if (flag(*step, "use_regex", true)) {
                auto compiled = std::make_unique<bpe_tokenizer::impl::compiled_regex>();
                compiled->code = compile_regex(gpt2_pattern, false, field + ".use_regex");
                t.splits_.push_back(std::move(compiled));
            }
        } else {
            fail(field, "type \"" + type + "\" is not supported (supported: Split, ByteLevel)");
        }
    }
    if (!byte_level) {
        fail("pre_tokenizer", "no ByteLevel step: only byte-level BPE is supported");
    }
}

void load_post_processor(const json& p, const std::string& field, bpe_tokenizer::impl& t) {
    if (p.is_null()) {
        return;
    }
    const std::string type = type_of(p, field);
    if (type == "ByteLevel") {
        return; // offsets only
    }
    if (type == "Sequence") {
        const json& list = p.value("processors", json::array());
        for (std::size_t i = 0; i < list.size(); ++i) {
            load_post_processor(list[i], field + ".processors[" + std::to_string(i) + "]", t);
        }
        return;
    }
    if (type != "TemplateProcessing") {
        fail(field, "type \"" + type +
                        "\" is not supported (supported: TemplateProcessing, ByteLevel, Sequence)");
    }
    const json& specials = p.value("special_tokens", json::object());
    bool after = false;
    const json& single = p.value("single", json::array());
    for (std::size_t i = 0; i < single.size(); ++i) {
        const json& item = single[i];
        const std::string where = field + ".single[" + std::to_string(i) + "]";
        if (item.contains("Sequence")) {
            after = true;
        } else if (item.contains("SpecialToken")) {
            const std::string name = item["SpecialToken"].value("id", "");
            if (!specials.contains(name) || !specials[name].contains("ids")) {
                fail(where, "\"" + name + "\" is not in special_tokens");
            }
            for (const json& id : specials[name]["ids"]) {
                (after ? t.suffix_ : t.prefix_).push_back(id.get<token_id>());
            }
        } else {
            fail(where, "a SpecialToken or Sequence is expected");
        }
    }
}

void check_decoder(const json& d, const std::string& field) {
    const std::string type = d.is_null() ? "none" : type_of(d, field);
    if (type == "ByteLevel") {
        return;
    }
    if (type == "Sequence") {
        const json& list = d.value("decoders", json::array());
        for (std::size_t i = 0; i < list.size(); ++i) {
            check_decoder(list[i], field + ".decoders[" + std::to_string(i) + "]");
        }
        return;
    }
    fail(field, "\"" + type + "\" is not supported (supported: ByteLevel)");
}

} // namespace

std::array<char32_t, 256> byte_level_alphabet() {
    std::array<char32_t, 256> alphabet{};
    char32_t next = 256;
    for (std::size_t b = 0; b < 256; ++b) {
        const bool printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
        alphabet[b] = printable ? static_cast<char32_t>(b) : next++;
    }
    return alphabet;
}

namespace {

std::unique_ptr<bpe_tokenizer::impl> load(const json& doc) {
    auto t = std::make_unique<bpe_tokenizer::impl>();
    if (doc.contains("truncation") && !doc["truncation"].is_null()) {
        fail("truncation", "set; lanes does not truncate, so its ids would differ");
    }
    t->nfc_ = load_normalizer(doc.value("normalizer", json()), "normalizer");
    load_pre_tokenizer(doc.value("pre_tokenizer", json()), *t);
    load_vocabulary(doc.value("model", json()), doc.value("added_tokens", json()), *t);
    load_post_processor(doc.value("post_processor", json()), "post_processor", *t);
    check_decoder(doc.value("decoder", json()), "decoder");
    return t;
}

} // namespace

bpe_tokenizer bpe_tokenizer::from_json(std::string_view json_text) {
    const json doc = json::parse(json_text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object()) {
        throw std::runtime_error("tokenizer.json: not a JSON object");
    }
    try {
        return bpe_tokenizer(load(doc));
    } catch (const json::exception& e) {
        // a field of an unexpected JSON type somewhere the checks above do not look
        throw std::runtime_error(std::string("tokenizer.json: ") + e.what());
    }
}

bpe_tokenizer bpe_tokenizer::from_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) {
        throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
    }
    std::ostringstream text;
    text << in.rdbuf();
    try {
        return from_json(text.str());
    } catch (const std::exception& e) {
        throw std::runtime_error(path + ": " + e.what());
    }
}

} // namespace lanes::common
