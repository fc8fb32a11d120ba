// Reading a tokenizer.json's vocabulary into bpe_tokenizer's state: the BPE model's tokens and
// merges, the added tokens, and each id's bytes for decoding.
#include "common/prompt/bpe_load.hpp"
#include "common/prompt/utf8.hpp"

#include <unordered_map>

#include <utf8proc.h>

namespace lanes::common::bpe_load {

namespace {

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

void load_vocabulary(const json& model, const json& added_tokens, bpe_tokenizer::impl& t) {
    std::vector<vocab_entry> by_id;
    load_model(model, t, by_id);
    load_added_tokens(added_tokens, t, by_id);
    build_decode_table(by_id, t);
}

} // namespace lanes::common::bpe_load
