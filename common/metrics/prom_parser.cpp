#include "common/metrics/prom_parser.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>

namespace lanes::common::prom {

namespace {

bool is_space(char c) {
    return c == ' ' || c == '\t';
}

bool is_name_start(char c, bool allow_colon) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
           (allow_colon && c == ':');
}

bool is_name_char(char c, bool allow_colon) {
    return is_name_start(c, allow_colon) || (c >= '0' && c <= '9');
}

// A cursor over one line. Every method is total: malformed input yields empty tokens or false.
class cursor {
public:
    explicit cursor(std::string_view s)
        : s_(s) {}

    bool done() const { return pos_ >= s_.size(); }
    char peek() const { return done() ? '\0' : s_[pos_]; }
    std::string_view rest() const { return done() ? std::string_view{} : s_.substr(pos_); }
    void advance(std::size_t n = 1) { pos_ = std::min(s_.size(), pos_ + n); }

    // Skips blanks; returns whether there were any.
    bool skip_space() {
        const std::size_t start = pos_;
        while (!done() && is_space(s_[pos_]))
            ++pos_;
        return pos_ != start;
    }

    bool consume(char c) {
        if (peek() != c || done())
            return false;
        ++pos_;
        return true;
    }

    std::string_view name(bool allow_colon) {
        const std::size_t start = pos_;
        if (done() || !is_name_start(s_[pos_], allow_colon))
            return {};
        while (!done() && is_name_char(s_[pos_], allow_colon))
            ++pos_;
        return s_.substr(start, pos_ - start);
    }

    // Up to the next blank or the end of the line.
    std::string_view token() {
        const std::size_t start = pos_;
        while (!done() && !is_space(s_[pos_]))
            ++pos_;
        return s_.substr(start, pos_ - start);
    }

    // A double-quoted label value with `\\`, `\"` and `\n` escapes; nullopt when unterminated.
    std::optional<std::string> quoted() {
        if (!consume('"'))
            return std::nullopt;
        std::string out;
        while (!done()) {
            const char c = s_[pos_++];
            if (c == '"')
                return out;
            if (c != '\\') {
                out += c;
                continue;
            }
            if (done())
                break;
            const char e = s_[pos_++];
            if (e == 'n')
                out += '\n';
            else if (e == '\\' || e == '"')
                out += e;
            else
                out.append(1, '\\').append(1, e); // unknown escape: keep it as written
        }
        return std::nullopt;
    }

private:
    std::string_view s_;
    std::size_t pos_ = 0;
};

// Go-style float: decimal or exponent forms, `+Inf`, `-Inf`, `Inf`, `NaN` (any case).
std::optional<double> parse_double(std::string_view t) {
    if (t.empty())
        return std::nullopt;
    bool negative = false;
    if (t.front() == '+' || t.front() == '-') {
        negative = t.front() == '-';
        t.remove_prefix(1);
        if (t.empty() || t.front() == '+' || t.front() == '-')
            return std::nullopt;
    }
    double v = 0.0;
    const auto [ptr, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
    if (ptr != t.data() + t.size())
        return std::nullopt;
    if (ec == std::errc::result_out_of_range) {
        // from_chars leaves v alone on overflow/underflow; strtod saturates like Go's ParseFloat.
        const std::string copy(t);
        v = std::strtod(copy.c_str(), nullptr);
    } else if (ec != std::errc{}) {
        return std::nullopt;
    }
    return negative ? -v : v;
}

std::string unescape_help(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\\' && i + 1 < s.size() && (s[i + 1] == '\\' || s[i + 1] == 'n')) {
            out += s[i + 1] == 'n' ? '\n' : '\\';
            ++i;
        } else {
            out += s[i];
        }
    }
    return out;
}

enum class line_kind { ok, eof };

// `# HELP name text`, `# TYPE name type`, `# EOF`, or any other comment (ignored).
std::optional<std::string> parse_comment(cursor& c, parse_result& r, line_kind& kind) {
    c.consume('#');
    c.skip_space();
    const std::string_view keyword = c.token();
    if (keyword == "EOF") {
        c.skip_space();
        if (c.done())
            kind = line_kind::eof;
        return std::nullopt;
    }
    if (keyword != "HELP" && keyword != "TYPE")
        return std::nullopt;
    if (!c.skip_space())
        return std::string("missing metric name after # ") + std::string(keyword);
    const std::string_view name = c.name(true);
    if (name.empty())
        return std::string("invalid metric name after # ") + std::string(keyword);
    if (!c.done() && !c.skip_space())
        return std::string("invalid metric name after # ") + std::string(keyword);
    if (keyword == "HELP") {
        r.help[std::string(name)] = unescape_help(c.rest());
        return std::nullopt;
    }
    const std::string_view type = c.token();
    c.skip_space();
    if (type.empty() || !c.done())
        return std::string("invalid # TYPE line for ") + std::string(name);
    r.types[std::string(name)] = std::string(type);
    return std::nullopt;
}

// `{name="value", ...}`, the opening brace already consumed. A trailing comma is allowed.
std::optional<std::string> parse_labels(cursor& c, sample& s) {
    for (;;) {
        c.skip_space();
        if (c.consume('}'))
            return std::nullopt;
        const std::string_view key = c.name(false);
        if (key.empty())
            return "invalid label name";
        c.skip_space();
        if (!c.consume('='))
            return "expected '=' after label " + std::string(key);
        c.skip_space();
        std::optional<std::string> value = c.quoted();
        if (!value)
            return "invalid or unterminated value for label " + std::string(key);
        s.labels.emplace_back(std::string(key), std::move(*value));
        c.skip_space();
        if (c.consume('}'))
            return std::nullopt;
        if (!c.consume(','))
            return "expected ',' or '}' after label " + std::string(key);
    }
}

// `name[{labels}] value [timestamp] [# exemplar]`.
std::optional<std::string> parse_sample(cursor& c, parse_result& r) {
    sample s;
    s.name = std::string(c.name(true));
    if (s.name.empty())
        return "invalid metric name";
    c.skip_space();
    if (c.consume('{')) {
        if (auto err = parse_labels(c, s))
            return err;
        c.skip_space();
    }
    const std::string_view value_text = c.token();
    if (value_text.empty())
        return "missing value for " + s.name;
    const std::optional<double> value = parse_double(value_text);
    if (!value)
        return "invalid value '" + std::string(value_text) + "' for " + s.name;
    s.value = *value;
    c.skip_space();
    if (!c.done() && c.peek() != '#') {
        const std::string_view ts = c.token();
        if (!parse_double(ts))
            return "invalid timestamp '" + std::string(ts) + "' for " + s.name;
        c.skip_space();
    }
    if (!c.done() && c.peek() != '#') // an exemplar (` # {...} v`) is skipped
        return "unexpected text after value of " + s.name;
    r.samples.push_back(std::move(s));
    return std::nullopt;
}

} // namespace

std::optional<std::string_view> sample::label(std::string_view key) const {
    for (const auto& [k, v] : labels)
        if (k == key)
            return std::string_view(v);
    return std::nullopt;
}

std::optional<double> parse_result::sum(std::string_view name) const {
    std::optional<double> total;
    for (const sample& s : samples)
        if (s.name == name)
            total = total.value_or(0.0) + s.value;
    return total;
}

const sample*
parse_result::find(std::string_view name,
                   const std::vector<std::pair<std::string, std::string>>& match) const {
    for (const sample& s : samples) {
        if (s.name != name)
            continue;
        const bool all = std::all_of(match.begin(), match.end(), [&](const auto& kv) {
            const auto v = s.label(kv.first);
            return v && *v == kv.second;
        });
        if (all)
            return &s;
    }
    return nullptr;
}

parse_result parse(std::string_view text) {
    parse_result r;
    std::size_t line_no = 0;
    while (!text.empty()) {
        ++line_no;
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text = nl == std::string_view::npos ? std::string_view{} : text.substr(nl + 1);
        if (!line.empty() && line.back() == '\r')
            line.remove_suffix(1);

        cursor c(line);
        c.skip_space();
        if (c.done())
            continue;
        std::optional<std::string> err;
        line_kind kind = line_kind::ok;
        if (c.peek() == '#')
            err = parse_comment(c, r, kind);
        else
            err = parse_sample(c, r);
        if (err && r.error.empty()) {
            r.error = std::move(*err);
            r.error_line = line_no;
        }
        if (kind == line_kind::eof)
            break;
    }
    return r;
}

} // namespace lanes::common::prom
