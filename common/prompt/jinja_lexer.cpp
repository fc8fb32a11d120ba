// The Jinja lexer with transformers' settings: trim_blocks drops the newline after a block or
// comment tag, lstrip_blocks the blanks before one on its line; '-' strips all whitespace on its
// side, '+' keeps it. As Jinja's lexer: \r\n and \r become \n, one trailing newline of the source
// is dropped, and a tag ends only where its brackets balance.
#include "common/prompt/jinja_impl.hpp"

#include "common/prompt/utf8.hpp"

#include <cctype>

namespace lanes::common::jinja_detail {

void syntax_error(int line, int column, const std::string& message) {
    throw template_syntax_error("chat template line " + std::to_string(line) + " column " +
                                std::to_string(column) + ": " + message);
}

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v';
}

std::string normalize_newlines(std::string_view source) {
    std::string out;
    out.reserve(source.size());
    for (std::size_t n = 0; n < source.size(); ++n) {
        if (source[n] == '\r') {
            out += '\n';
            if (n + 1 < source.size() && source[n + 1] == '\n') {
                ++n;
            }
        } else {
            out += source[n];
        }
    }
    if (!out.empty() && out.back() == '\n') {
        out.pop_back();
    }
    return out;
}

class lexer {
public:
    explicit lexer(std::string_view source)
        : src_(normalize_newlines(source)) {}

    std::vector<token> run() {
        while (pos_ < src_.size()) {
            root();
        }
        push(tok::eof, "", pos_);
        return std::move(out_);
    }

private:
    void root() {
        std::size_t start = pos_;
        std::size_t tag = src_.size();
        for (std::size_t n = src_.find('{', pos_); n != std::string::npos;
             n = src_.find('{', n + 1)) {
            if (n + 1 < src_.size() &&
                (src_[n + 1] == '{' || src_[n + 1] == '%' || src_[n + 1] == '#')) {
                tag = n;
                break;
            }
        }
        std::string_view text(src_.data() + start, tag - start);
        if (tag == src_.size()) {
            push(tok::text, std::string(text), start);
            pos_ = tag;
            return;
        }
        const char type = src_[tag + 1];
        const char sign = tag + 2 < src_.size() ? src_[tag + 2] : '\0';
        text = strip_before_tag(text, sign, type != '{');
        if (!text.empty()) {
            push(tok::text, std::string(text), start);
        }
        pos_ = tag + 2 + ((sign == '-' || sign == '+') ? 1 : 0);
        if (type == '#') {
            comment(tag);
        } else if (type == '%' && raw_block(tag)) {
            return;
        } else {
            push(type == '{' ? tok::var_begin : tok::block_begin, "", tag);
            inside_tag(type == '{');
        }
    }

    // The text before a tag: '-' strips all whitespace; lstrip_blocks (block and comment tags,
    // unless '+') the blanks between the line's start and the tag.
    std::string_view strip_before_tag(std::string_view text, char sign, bool lstrip) const {
        if (sign == '-') {
            while (!text.empty() && is_space(text.back())) {
                text.remove_suffix(1);
            }
        } else if (sign != '+' && lstrip) {
            const auto nl = text.rfind('\n');
            const std::size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
            if ((l_pos > 0 || line_starting_) && l_pos < text.size()) {
                bool blank = true;
                for (std::size_t n = l_pos; n < text.size(); ++n) {
                    blank = blank && is_space(text[n]);
                }
                if (blank) {
                    text = text.substr(0, l_pos);
                }
            }
        }
        return text;
    }

    // Where a tag's keyword is: after its blanks.
    std::size_t skip_blanks(std::size_t p) const {
        while (p < src_.size() && is_space(src_[p])) {
            ++p;
        }
        return p;
    }

    // {% raw %}...{% endraw %}: the text between as is. pos_ is past "{%" and its sign.
    bool raw_block(std::size_t tag) {
        std::size_t p = skip_blanks(pos_);
        if (src_.compare(p, 3, "raw") != 0) {
            return false;
        }
        p = skip_blanks(p + 3);
        const bool strip_after = src_.compare(p, 3, "-%}") == 0;
        if (!strip_after && src_.compare(p, 2, "%}") != 0) {
            return false;
        }
        pos_ = p + (strip_after ? 3 : 2);
        if (strip_after) {
            skip_space_after();
        }
        line_starting_ = src_[pos_ - 1] == '\n';
        for (std::size_t n = src_.find("{%", pos_); n != std::string::npos;
             n = src_.find("{%", n + 1)) {
            const char sign = n + 2 < src_.size() ? src_[n + 2] : '\0';
            std::size_t q = skip_blanks(n + 2 + ((sign == '-' || sign == '+') ? 1 : 0));
            if (src_.compare(q, 6, "endraw") != 0) {
                continue;
            }
            q = skip_blanks(q + 6);
            const bool minus = src_.compare(q, 3, "-%}") == 0;
            const bool plus = src_.compare(q, 3, "+%}") == 0;
            if (!minus && !plus && src_.compare(q, 2, "%}") != 0) {
                continue;
            }
            const std::string_view text =
                strip_before_tag(std::string_view(src_).substr(pos_, n - pos_), sign, true);
            if (!text.empty()) {
                push(tok::text, std::string(text), pos_);
            }
            pos_ = q + (minus || plus ? 3 : 2);
            if (minus) {
                skip_space_after();
            } else if (!plus) {
                trim_newline();
            }
            line_starting_ = src_[pos_ - 1] == '\n';
            return true;
        }
        error_at(tag, "missing end of raw directive");
    }

    void comment(std::size_t begin) {
        const std::size_t content = pos_;
        const auto end = src_.find("#}", pos_);
        if (end == std::string::npos) {
            error_at(begin, "missing end of comment tag");
        }
        pos_ = end + 2;
        if (end > content && src_[end - 1] == '-') {
            skip_space_after();
        } else if (!(end > content && src_[end - 1] == '+')) {
            trim_newline();
        }
        line_starting_ = pos_ > 0 && src_[pos_ - 1] == '\n';
    }

    void skip_space_after() {
        while (pos_ < src_.size() && is_space(src_[pos_])) {
            ++pos_;
        }
    }
    void trim_newline() {
        if (pos_ < src_.size() && src_[pos_] == '\n') {
            ++pos_;
        }
    }

    bool at(std::string_view s) const { return src_.compare(pos_, s.size(), s) == 0; }

    // Tokens up to the tag's end: "}}" for a variable, "%}" for a block.
    void inside_tag(bool variable) {
        const std::string_view end = variable ? "}}" : "%}";
        std::vector<char> brackets;
        const std::size_t begin = pos_;
        while (true) {
            if (pos_ >= src_.size()) {
                error_at(begin, variable ? "unexpected end of template, expected '}}'"
                                         : "unexpected end of template, expected '%}'");
            }
            if (brackets.empty()) {
                const std::size_t at_pos = pos_;
                if (src_[pos_] == '-' && src_.compare(pos_ + 1, 2, end) == 0) {
                    pos_ += 3;
                    skip_space_after();
                    finish_tag(variable, at_pos);
                    return;
                }
                if (!variable && src_[pos_] == '+' && src_.compare(pos_ + 1, 2, end) == 0) {
                    pos_ += 3;
                    finish_tag(variable, at_pos);
                    return;
                }
                if (at(end)) {
                    pos_ += 2;
                    if (!variable) {
                        trim_newline();
                    }
                    finish_tag(variable, at_pos);
                    return;
                }
            }
            const char c = src_[pos_];
            if (is_space(c)) {
                ++pos_;
            } else if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
                const std::size_t s = pos_;
                while (
                    pos_ < src_.size() &&
                    (std::isalnum(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
                    ++pos_;
                }
                push(tok::name, src_.substr(s, pos_ - s), s);
            } else if (std::isdigit(static_cast<unsigned char>(c))) {
                number();
            } else if (c == '\'' || c == '"') {
                string_literal();
            } else {
                op(brackets);
            }
        }
    }

    void finish_tag(bool variable, std::size_t at_pos) {
        push(variable ? tok::var_end : tok::block_end, "", at_pos);
        line_starting_ = src_[pos_ - 1] == '\n';
    }

    void number() {
        const std::size_t s = pos_;
        const auto digits = [&] {
            while (pos_ < src_.size() &&
                   (std::isdigit(static_cast<unsigned char>(src_[pos_])) || src_[pos_] == '_')) {
                ++pos_;
            }
        };
        digits();
        bool is_float = false;
        if (pos_ + 1 < src_.size() && src_[pos_] == '.' &&
            std::isdigit(static_cast<unsigned char>(src_[pos_ + 1]))) {
            is_float = true;
            ++pos_;
            digits();
        }
        if (pos_ < src_.size() && (src_[pos_] == 'e' || src_[pos_] == 'E')) {
            std::size_t p = pos_ + 1;
            if (p < src_.size() && (src_[p] == '+' || src_[p] == '-')) {
                ++p;
            }
            if (p < src_.size() && std::isdigit(static_cast<unsigned char>(src_[p]))) {
                is_float = true;
                pos_ = p;
                digits();
            }
        }
        std::string text;
        for (std::size_t n = s; n < pos_; ++n) {
            if (src_[n] != '_') {
                text += src_[n];
            }
        }
        push(is_float ? tok::floating : tok::integer, text, s);
    }

    static int hex(char c) {
        if (c >= '0' && c <= '9') {
            return c - '0';
        }
        if (c >= 'a' && c <= 'f') {
            return c - 'a' + 10;
        }
        if (c >= 'A' && c <= 'F') {
            return c - 'A' + 10;
        }
        return -1;
    }

    void string_literal() {
        const std::size_t s = pos_;
        const char quote = src_[pos_++];
        std::string text;
        while (true) {
            if (pos_ >= src_.size()) {
                error_at(s, "unexpected end of string");
            }
            const char c = src_[pos_++];
            if (c == quote) {
                break;
            }
            if (c != '\\' || pos_ >= src_.size()) {
                text += c;
                continue;
            }
            const char e = src_[pos_++];
            switch (e) {
            case 'n':
                text += '\n';
                break;
            case 't':
                text += '\t';
                break;
            case 'r':
                text += '\r';
                break;
            case 'b':
                text += '\b';
                break;
            case 'f':
                text += '\f';
                break;
            case 'v':
                text += '\v';
                break;
            case 'a':
                text += '\a';
                break;
            case '0':
                text += '\0';
                break;
            case '\n':
                break;
            case '\\':
            case '\'':
            case '"':
                text += e;
                break;
            case 'x':
            case 'u':
            case 'U': {
                const int width = e == 'x' ? 2 : e == 'u' ? 4 : 8;
                char32_t cp = 0;
                for (int n = 0; n < width; ++n) {
                    const int h = pos_ < src_.size() ? hex(src_[pos_]) : -1;
                    if (h < 0) {
                        error_at(s, "bad escape in string literal");
                    }
                    cp = cp * 16 + static_cast<char32_t>(h);
                    ++pos_;
                }
                if (cp > 0x10ffff) {
                    error_at(s, "illegal Unicode character in string literal");
                }
                append_utf8(text, cp);
                break;
            }
            default:
                text += '\\';
                text += e;
            }
        }
        push(tok::string, text, s);
    }

    void op(std::vector<char>& brackets) {
        static constexpr std::string_view two[] = {"//", "**", "==", "!=", "<=", ">="};
        for (const auto o : two) {
            if (at(o)) {
                push(tok::op, std::string(o), pos_);
                pos_ += 2;
                return;
            }
        }
        const char c = src_[pos_];
        static constexpr std::string_view one = "+-/*%~[](){}<>=.:|,";
        if (one.find(c) == std::string_view::npos) {
            error_at(pos_, std::string("unexpected char '") + c + "'");
        }
        if (c == '(' || c == '[' || c == '{') {
            brackets.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
        } else if (c == ')' || c == ']' || c == '}') {
            if (brackets.empty() || brackets.back() != c) {
                error_at(pos_, std::string("unexpected '") + c + "'");
            }
            brackets.pop_back();
        }
        push(tok::op, std::string(1, c), pos_);
        ++pos_;
    }

    std::pair<int, int> where(std::size_t at_pos) const {
        int line = 1;
        std::size_t line_start = 0;
        for (std::size_t n = 0; n < at_pos && n < src_.size(); ++n) {
            if (src_[n] == '\n') {
                ++line;
                line_start = n + 1;
            }
        }
        return {line, static_cast<int>(at_pos - line_start) + 1};
    }

    void push(tok type, std::string text, std::size_t at_pos) {
        // Lines counted incrementally: tokens come in source order.
        for (; counted_ < at_pos && counted_ < src_.size(); ++counted_) {
            if (src_[counted_] == '\n') {
                ++line_;
                line_start_ = counted_ + 1;
            }
        }
        out_.push_back(
            token{type, std::move(text), line_, static_cast<int>(at_pos - line_start_) + 1});
    }

    [[noreturn]] void error_at(std::size_t at_pos, const std::string& message) const {
        const auto [line, column] = where(at_pos);
        syntax_error(line, column, message);
    }

    std::string src_;
    std::size_t pos_ = 0;
    bool line_starting_ = true;
    std::vector<token> out_;
    std::size_t counted_ = 0;
    int line_ = 1;
    std::size_t line_start_ = 0;
};

} // namespace

std::vector<token> tokenize(std::string_view source) {
    return lexer(source).run();
}

} // namespace lanes::common::jinja_detail
