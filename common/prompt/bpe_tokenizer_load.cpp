// Reading a tokenizer.json into bpe_tokenizer's state, refusing what lanes does not implement.
#include "common/prompt/bpe_tokenizer_impl.hpp"

#include <cerrno>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <unordered_map>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <nlohmann/json.hpp>
#include <pcre2.h>
#include <utf8proc.h>

namespace lanes::common {

namespace {

using json = nlohmann::json;

// GPT-2's split, what a ByteLevel pre-tokenizer with use_regex: true applies.
constexpr std::string_view gpt2_pattern =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";

[[noreturn]] void fail(const std::string& field, const std::string& what) {
    throw std::runtime_error("tokenizer.json: " + field + ": " + what);
}

std::string type_of(const json& j, const std::string& field) {
    if (!j.is_object() || !j.contains("type") || !j["type"].is_string()) {
        fail(field, "an object with a \"type\" is expected");
    }
    return j["type"].get<std::string>();
}

bool flag(const json& j, const char* key, bool fallback) {
    auto it = j.find(key);
    return it != j.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

void append_utf8(std::string& out, char32_t cp) {
    utf8proc_uint8_t buf[4];
    const auto n = utf8proc_encode_char(static_cast<utf8proc_int32_t>(cp), buf);
    out.append(reinterpret_cast<const char*>(buf), static_cast<std::size_t>(n));
}

// Code point -> byte for the byte-level alphabet (every code point it uses is below U+0144).
class byte_level_inverse {
public:
    byte_level_inverse() {
        table_.fill(-1);
        const auto alphabet = byte_level_alphabet();
        for (std::size_t b = 0; b < 256; ++b) {
            table_[alphabet[b]] = static_cast<std::int16_t>(b);
        }
    }
    // The bytes a token written in the alphabet stands for; false if a character is outside it.
    bool to_bytes(std::string_view text, std::string& out) const {
        out.clear();
        std::size_t i = 0;
        while (i < text.size()) {
            utf8proc_int32_t cp = 0;
            const auto n =
                utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data()) + i,
                                 static_cast<utf8proc_ssize_t>(text.size() - i), &cp);
            if (n <= 0 || cp < 0 || static_cast<std::size_t>(cp) >= table_.size() ||
                table_[static_cast<std::size_t>(cp)] < 0) {
                return false;
            }
            out.push_back(static_cast<char>(table_[static_cast<std::size_t>(cp)]));
            i += static_cast<std::size_t>(n);
        }
        return true;
    }

private:
    std::array<std::int16_t, 0x144> table_{};
};

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

namespace {

struct vocab_entry {
    std::string text; // as written in the file
    bool set = false;
};

using id_map = std::unordered_map<std::string_view, token_id, string_hash, std::equal_to<>>;

// Merges in rank order, each "a b" or [a, b]; both halves and their concatenation must be tokens.
void load_merges(const json& merges, const id_map& ids, bpe_model& model) {
    model.merges.reserve(merges.size());
    for (std::size_t rank = 0; rank < merges.size(); ++rank) {
        const json& merge = merges[rank];
        std::string left;
        std::string right;
        if (merge.is_string()) {
            const std::string& line = merge.get_ref<const std::string&>();
            const auto space = line.find(' ');
            if (space == std::string::npos || line.find(' ', space + 1) != std::string::npos) {
                fail("model.merges[" + std::to_string(rank) + "]",
                     "\"" + line + "\" is not two tokens separated by one space");
            }
            left = line.substr(0, space);
            right = line.substr(space + 1);
        } else if (merge.is_array() && merge.size() == 2 && merge[0].is_string() &&
                   merge[1].is_string()) {
            left = merge[0].get<std::string>();
            right = merge[1].get<std::string>();
        } else {
            fail("model.merges[" + std::to_string(rank) + "]",
                 "a \"a b\" string or an [a, b] pair is expected");
        }
        const auto l = ids.find(left);
        const auto r = ids.find(right);
        const auto merged = ids.find(left + right);
        if (l == ids.end() || r == ids.end() || merged == ids.end()) {
            fail("model.merges[" + std::to_string(rank) + "]",
                 "\"" + left + "\" + \"" + right + "\": a token is not in the vocabulary");
        }
        model.merges.insert_or_assign(l->second, r->second, static_cast<std::uint32_t>(rank),
                                      merged->second);
    }
}

void load_model(const json& m, bpe_tokenizer::impl& t, std::vector<vocab_entry>& by_id) {
    if (!m.is_object()) {
        fail("model", "an object is expected");
    }
    const std::string type = m.value("type", "BPE");
    if (type != "BPE") {
        fail("model.type", "\"" + type + "\" is not supported (supported: BPE)");
    }
    if (flag(m, "byte_fallback", false)) {
        fail("model.byte_fallback",
             "true (SentencePiece-style BPE, as Llama 2 uses) is not supported");
    }
    if (m.contains("dropout") && !m["dropout"].is_null() && m["dropout"].get<double>() != 0.0) {
        fail("model.dropout", "BPE dropout is not supported");
    }
    for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
        if (m.contains(key) && m[key].is_string() && !m[key].get<std::string>().empty()) {
            fail(std::string("model.") + key, "a non-empty value is not supported");
        }
    }
    t.model_.ignore_merges = flag(m, "ignore_merges", false);
    if (!m.contains("vocab") || !m["vocab"].is_object()) {
        fail("model.vocab", "an object {token: id} is expected");
    }
    if (!m.contains("merges") || !m["merges"].is_array()) {
        fail("model.merges", "an array is expected");
    }
    const byte_level_inverse inverse;
    const json& vocab = m["vocab"];
    id_map ids;
    ids.reserve(vocab.size());
    std::string bytes;
    for (const auto& [text, id_value] : vocab.items()) {
        if (!id_value.is_number_unsigned()) {
            fail("model.vocab[\"" + text + "\"]", "an id (unsigned integer) is expected");
        }
        const auto id = id_value.get<token_id>();
        if (by_id.size() <= id) {
            by_id.resize(std::size_t{id} + 1);
        }
        by_id[id] = {text, true};
        if (inverse.to_bytes(text, bytes)) {
            t.model_.vocab_by_bytes.emplace(bytes, id);
        }
    }
    for (const auto& [text, id_value] : vocab.items()) {
        ids.emplace(by_id[id_value.get<token_id>()].text, id_value.get<token_id>());
    }
    const auto alphabet = byte_level_alphabet();
    for (std::size_t b = 0; b < 256; ++b) {
        std::string symbol;
        append_utf8(symbol, alphabet[b]);
        if (auto it = ids.find(symbol); it != ids.end()) {
            t.model_.byte_ids[b] = it->second;
        }
    }
    if (m.contains("unk_token") && m["unk_token"].is_string()) {
        const auto it = ids.find(m["unk_token"].get<std::string>());
        if (it == ids.end()) {
            fail("model.unk_token", "not in the vocabulary");
        }
        t.model_.unk = it->second;
    }
    load_merges(m["merges"], ids, t.model_);
}

void load_added_tokens(const json& list, bpe_tokenizer::impl& t, std::vector<vocab_entry>& by_id) {
    if (list.is_null()) {
        return;
    }
    if (!list.is_array()) {
        fail("added_tokens", "an array is expected");
    }
    for (std::size_t i = 0; i < list.size(); ++i) {
        const json& a = list[i];
        const std::string field = "added_tokens[" + std::to_string(i) + "]";
        if (!a.is_object() || !a.contains("id") || !a["id"].is_number_unsigned() ||
            !a.contains("content") || !a["content"].is_string()) {
            fail(field, "an object with \"id\" and \"content\" is expected");
        }
        added_token token;
        token.id = a["id"].get<token_id>();
        token.content = a["content"].get<std::string>();
        token.special = flag(a, "special", false);
        token.lstrip = flag(a, "lstrip", false);
        token.rstrip = flag(a, "rstrip", false);
        token.single_word = flag(a, "single_word", false);
        token.normalized = flag(a, "normalized", !token.special);
        if (by_id.size() <= token.id) {
            by_id.resize(std::size_t{token.id} + 1);
        }
        by_id[token.id] = {token.content, true}; // an added token's content wins over the vocab's
        const auto index = static_cast<std::uint32_t>(t.added_.size());
        if (token.normalized) {
            t.normalized_matcher_.add(t.nfc_ ? nfc(token.content) : token.content, index);
        } else {
            t.raw_matcher_.add(token.content, index);
        }
        t.added_.push_back(std::move(token));
    }
}

// Each id's bytes as the ByteLevel decoder gives them: the alphabet's bytes when every character
// is in it, else the text itself.
void build_decode_table(const std::vector<vocab_entry>& by_id, bpe_tokenizer::impl& t) {
    const byte_level_inverse inverse;
    t.offsets_.assign(by_id.size() + 1, 0);
    t.special_.assign(by_id.size(), 0);
    std::string bytes;
    for (std::size_t id = 0; id < by_id.size(); ++id) {
        t.offsets_[id] = static_cast<std::uint32_t>(t.bytes_.size());
        if (!by_id[id].set) {
            continue;
        }
        if (inverse.to_bytes(by_id[id].text, bytes)) {
            t.bytes_.append(bytes);
        } else {
            t.bytes_.append(by_id[id].text);
        }
    }
    t.offsets_[by_id.size()] = static_cast<std::uint32_t>(t.bytes_.size());
    for (const auto& token : t.added_) {
        t.special_[token.id] = token.special ? 1 : 0;
    }
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
    std::vector<vocab_entry> by_id;
    load_model(doc.value("model", json()), *t, by_id);
    load_added_tokens(doc.value("added_tokens", json()), *t, by_id);
    load_post_processor(doc.value("post_processor", json()), "post_processor", *t);
    check_decoder(doc.value("decoder", json()), "decoder");
    build_decode_table(by_id, *t);
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
