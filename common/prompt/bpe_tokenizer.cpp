#include "common/prompt/bpe_tokenizer.hpp"

#include "common/prompt/bpe_tokenizer_impl.hpp"
#include "common/prompt/utf8.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <utility>

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <utf8proc.h>

namespace lanes::common {

namespace {

// A code point's start before byte pos and its value (U+FFFD past the text's edges).
char32_t code_point_before(std::string_view text, std::size_t pos) {
    std::size_t start = pos;
    while (start > 0 && (static_cast<std::uint8_t>(text[start - 1]) & 0xc0) == 0x80) {
        --start;
    }
    if (start > 0) {
        --start;
    }
    utf8proc_int32_t cp = 0xfffd;
    utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + start),
                     static_cast<utf8proc_ssize_t>(pos - start), &cp);
    return static_cast<char32_t>(cp);
}

char32_t code_point_at(std::string_view text, std::size_t pos, std::size_t* length = nullptr) {
    utf8proc_int32_t cp = 0xfffd;
    const auto n = utf8proc_iterate(reinterpret_cast<const utf8proc_uint8_t*>(text.data() + pos),
                                    static_cast<utf8proc_ssize_t>(text.size() - pos), &cp);
    if (length != nullptr) {
        *length = n > 0 ? static_cast<std::size_t>(n) : 1;
    }
    return static_cast<char32_t>(cp);
}

// Unicode \w as Hugging Face's single_word check reads it (Rust regex): letters, letter numbers,
// marks, decimal digits, connector punctuation, joiners.
bool is_word_char(char32_t cp) {
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_LU:
    case UTF8PROC_CATEGORY_LL:
    case UTF8PROC_CATEGORY_LT:
    case UTF8PROC_CATEGORY_LM:
    case UTF8PROC_CATEGORY_LO:
    case UTF8PROC_CATEGORY_MN:
    case UTF8PROC_CATEGORY_MC:
    case UTF8PROC_CATEGORY_ME:
    case UTF8PROC_CATEGORY_ND:
    case UTF8PROC_CATEGORY_NL:
    case UTF8PROC_CATEGORY_PC:
        return true;
    default:
        return cp == 0x200c || cp == 0x200d;
    }
}

// Unicode White_Space, what \s matches for lstrip/rstrip.
bool is_space(char32_t cp) {
    return (cp >= 0x09 && cp <= 0x0d) || cp == 0x20 || cp == 0x85 || cp == 0xa0 || cp == 0x1680 ||
           (cp >= 0x2000 && cp <= 0x200a) || cp == 0x2028 || cp == 0x2029 || cp == 0x202f ||
           cp == 0x205f || cp == 0x3000;
}

} // namespace

// ---- added tokens: leftmost-longest matching, then single_word / lstrip / rstrip ----------------

void added_matcher::add(std::string_view content, std::uint32_t index) {
    if (content.empty()) {
        return;
    }
    if (nodes_.empty()) {
        nodes_.emplace_back();
    }
    const auto first = static_cast<std::uint8_t>(content[0]);
    if (!first_[first]) {
        first_[first] = true;
        ++first_count_;
        only_first_ = static_cast<char>(first);
    }
    std::uint32_t node = 0;
    for (char c : content) {
        const auto b = static_cast<std::uint8_t>(c);
        std::uint32_t child = 0;
        for (const auto& [byte, next] : nodes_[node].next) {
            if (byte == b) {
                child = next;
                break;
            }
        }
        if (child == 0) {
            child = static_cast<std::uint32_t>(nodes_.size());
            nodes_[node].next.emplace_back(b, child);
            nodes_.emplace_back();
        }
        node = child;
    }
    nodes_[node].token = static_cast<std::int32_t>(index);
}

added_matcher::match added_matcher::longest_at(std::string_view text, std::size_t pos) const {
    match best;
    std::uint32_t node = 0;
    for (std::size_t i = pos; i < text.size(); ++i) {
        const auto b = static_cast<std::uint8_t>(text[i]);
        std::uint32_t child = 0;
        for (const auto& [byte, next] : nodes_[node].next) {
            if (byte == b) {
                child = next;
                break;
            }
        }
        if (child == 0) {
            break;
        }
        node = child;
        if (nodes_[node].token >= 0) {
            best = {pos, i + 1, static_cast<std::uint32_t>(nodes_[node].token)};
        }
    }
    return best;
}

std::vector<added_matcher::match> added_matcher::find_all(std::string_view text) const {
    std::vector<match> found;
    if (nodes_.empty()) {
        return found;
    }
    std::size_t pos = 0;
    while (pos < text.size()) {
        if (first_count_ == 1) {
            // Every added token starts with one byte ('<' for Llama 3 and Qwen): memchr skips
            // to the next place a match can start, several bytes at a time.
            const void* at = std::memchr(text.data() + pos, only_first_, text.size() - pos);
            if (at == nullptr) {
                break;
            }
            pos = static_cast<std::size_t>(static_cast<const char*>(at) - text.data());
        } else if (!first_[static_cast<std::uint8_t>(text[pos])]) {
            ++pos;
            continue;
        }
        const match m = longest_at(text, pos);
        if (m.end == 0) {
            ++pos;
            continue;
        }
        found.push_back(m);
        pos = m.end;
    }
    return found;
}

template <class OnText, class OnToken>
void bpe_tokenizer::impl::split_added(std::string_view text, const added_matcher& matcher,
                                      OnText&& on_text, OnToken&& on_token) const {
    std::size_t done = 0;
    for (auto m : matcher.find_all(text)) {
        const auto& token = added_[m.index];
        std::size_t start = m.start;
        std::size_t stop = m.end;
        if (token.single_word) {
            const bool word_before = start > 0 && is_word_char(code_point_before(text, start));
            const bool word_after = stop < text.size() && is_word_char(code_point_at(text, stop));
            if (word_before || word_after) {
                continue;
            }
        }
        if (token.lstrip) {
            std::size_t s = start;
            while (s > 0) {
                std::size_t back = s - 1;
                while (back > 0 && (static_cast<std::uint8_t>(text[back]) & 0xc0) == 0x80) {
                    --back;
                }
                if (!is_space(code_point_at(text, back))) {
                    break;
                }
                s = back;
            }
            start = std::max(s, done);
        }
        if (token.rstrip) {
            std::size_t len = 0;
            while (stop < text.size() && is_space(code_point_at(text, stop, &len))) {
                stop += len;
            }
        }
        if (done < start) {
            on_text(text.substr(done, start - done));
        }
        on_token(token.id);
        done = stop;
    }
    if (done < text.size()) {
        on_text(text.substr(done));
    }
}

// ---- encode -------------------------------------------------------------------------------------

std::vector<token_id> bpe_tokenizer::encode(std::string_view text, bool add_special_tokens) const {
    const impl& p = *impl_;
    std::string repaired;
    if (!is_valid_utf8(text)) {
        repaired = utf8_lossy(text);
        text = repaired;
    }
    std::vector<token_id> out;
    out.reserve(text.size() / 3 + 8);
    if (add_special_tokens) {
        out.insert(out.end(), p.prefix_.begin(), p.prefix_.end());
    }
    impl::encode_run run(p, out);
    p.split_added(
        text, p.raw_matcher_, [&](std::string_view piece) { p.encode_piece(piece, run); },
        [&](token_id id) { out.push_back(id); });
    if (add_special_tokens) {
        out.insert(out.end(), p.suffix_.begin(), p.suffix_.end());
    }
    return out;
}

void bpe_tokenizer::split_added_tokens(std::string_view text,
                                       const std::function<void(std::string_view)>& on_text,
                                       const std::function<void(token_id)>& on_token) const {
    impl_->split_added(text, impl_->raw_matcher_, on_text, on_token);
}

void bpe_tokenizer::encode_text(std::string_view run, std::vector<token_id>& out) const {
    impl::encode_run scratch(*impl_, out);
    impl_->encode_piece(run, scratch);
}

std::span<const token_id> bpe_tokenizer::special_prefix() const {
    return impl_->prefix_;
}

std::span<const token_id> bpe_tokenizer::special_suffix() const {
    return impl_->suffix_;
}

void bpe_tokenizer::impl::encode_piece(std::string_view piece, encode_run& run) const {
    std::string normalized;
    if (nfc_ && may_change_under_nfc(piece)) {
        normalized = nfc_of_non_ascii(piece);
        piece = normalized;
    }
    if (normalized_matcher_.empty()) {
        pre_tokenize(piece, 0, run);
        return;
    }
    split_added(
        piece, normalized_matcher_, [&](std::string_view text) { pre_tokenize(text, 0, run); },
        [&](token_id id) { run.out.push_back(id); });
}

void bpe_tokenizer::impl::pre_tokenize(std::string_view text, std::size_t step,
                                       encode_run& run) const {
    if (step == splits_.size()) {
        model_.encode_word(text, run.out);
        return;
    }
    if (text.empty()) {
        return;
    }
    const auto* code = static_cast<const pcre2_code*>(splits_[step]->code);
    auto* data = static_cast<pcre2_match_data*>(run.match_data(step));
    const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
    std::size_t pos = 0;
    std::size_t done = 0;
    while (pos <= text.size()) {
        int rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, data, nullptr);
        if (rc == PCRE2_ERROR_JIT_STACKLIMIT) {
            rc = pcre2_match(code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK | PCRE2_NO_JIT,
                             data, nullptr);
        }
        if (rc < 0) {
            break; // no match (or a limit hit): the rest is one piece
        }
        const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(data);
        const std::size_t start = ov[0];
        const std::size_t end = ov[1];
        if (end == start) {
            // an empty match splits nothing: step over one code point
            std::size_t len = 1;
            if (start < text.size()) {
                code_point_at(text, start, &len);
            }
            pos = start + len;
            continue;
        }
        if (start > done) {
            pre_tokenize(text.substr(done, start - done), step + 1, run);
        }
        pre_tokenize(text.substr(start, end - start), step + 1, run);
        done = end;
        pos = end;
    }
    if (done < text.size()) {
        pre_tokenize(text.substr(done), step + 1, run);
    }
}

void* bpe_tokenizer::impl::encode_run::match_data(std::size_t step) {
    if (data.size() <= step) {
        data.resize(owner.splits_.size(), nullptr);
    }
    if (data[step] == nullptr) {
        data[step] = pcre2_match_data_create_from_pattern(
            static_cast<const pcre2_code*>(owner.splits_[step]->code), nullptr);
    }
    return data[step];
}

bpe_tokenizer::impl::encode_run::~encode_run() {
    for (void* d : data) {
        pcre2_match_data_free(static_cast<pcre2_match_data*>(d));
    }
}

bpe_tokenizer::impl::compiled_regex::~compiled_regex() {
    pcre2_code_free(static_cast<pcre2_code*>(code));
}

// ---- decode -------------------------------------------------------------------------------------

std::string bpe_tokenizer::decode(std::span<const token_id> ids, bool skip_special_tokens) const {
    std::string bytes;
    for (token_id id : ids) {
        if (skip_special_tokens && is_special(id)) {
            continue;
        }
        bytes.append(token_bytes(id));
    }
    return utf8_lossy(bytes);
}

std::size_t bpe_tokenizer::vocab_size() const {
    return impl_->offsets_.size() - 1;
}

std::string_view bpe_tokenizer::token_bytes(token_id id) const {
    const auto& offsets = impl_->offsets_;
    if (id + 1 >= offsets.size()) {
        return {};
    }
    return std::string_view(impl_->bytes_).substr(offsets[id], offsets[id + 1] - offsets[id]);
}

bool bpe_tokenizer::is_special(token_id id) const {
    return id < impl_->special_.size() && impl_->special_[id] != 0;
}

std::optional<token_id> bpe_tokenizer::find(std::string_view text) const {
    for (const auto& token : impl_->added_) {
        if (token.content == text) {
            return token.id;
        }
    }
    return impl_->model_.find(text);
}

bpe_tokenizer::bpe_tokenizer(std::unique_ptr<impl> p)
    : impl_(std::move(p)) {}
bpe_tokenizer::bpe_tokenizer(bpe_tokenizer&&) noexcept = default;
bpe_tokenizer& bpe_tokenizer::operator=(bpe_tokenizer&&) noexcept = default;
bpe_tokenizer::~bpe_tokenizer() = default;

// ---- streaming ----------------------------------------------------------------------------------

bpe_stream_decoder::bpe_stream_decoder(const bpe_tokenizer& tokenizer, bool skip_special_tokens)
    : tokenizer_(&tokenizer)
    , skip_special_(skip_special_tokens) {}

std::string bpe_stream_decoder::push(token_id id) {
    if (skip_special_ && tokenizer_->is_special(id)) {
        return {};
    }
    pending_.append(tokenizer_->token_bytes(id));
    const std::size_t ready = utf8_complete_prefix(pending_);
    std::string text = utf8_lossy(std::string_view(pending_).substr(0, ready));
    pending_.erase(0, ready);
    return text;
}

std::string bpe_stream_decoder::finish() {
    std::string text = utf8_lossy(pending_);
    pending_.clear();
    return text;
}

} // namespace lanes::common
