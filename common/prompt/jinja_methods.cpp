// Python's str, dict and list methods as the sandbox lets a template call them (the mutating
// ones raise, as transformers' ImmutableSandboxedEnvironment does), and the iteration they share
// with the filters.
#include "common/prompt/jinja_impl.hpp"

#include <algorithm>
#include <cctype>

#include <utf8proc.h>

namespace lanes::common::jinja_detail {

namespace {

bool py_space(char32_t c) {
    return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 ||
           c == 0x1680 || (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 ||
           c == 0x202f || c == 0x205f || c == 0x3000;
}

std::string arg_str(const std::vector<value>& args, std::size_t n, const char* method) {
    if (n >= args.size() || args[n].k != kind::string) {
        fail(std::string(method) + "() takes a string argument");
    }
    return args[n].s;
}

std::int64_t arg_int(const std::vector<value>& args, std::size_t n, std::int64_t fallback) {
    if (n >= args.size() || args[n].k == kind::none) {
        return fallback;
    }
    if (args[n].k != kind::integer) {
        fail("expected an integer argument");
    }
    return args[n].i;
}

std::string py_replace(const std::string& s, const std::string& from, const std::string& to,
                       std::int64_t count) {
    std::string out;
    std::size_t at = 0;
    for (std::int64_t done = 0; count < 0 || done < count; ++done) {
        const std::size_t hit =
            from.empty() ? (at <= s.size() ? at : std::string::npos) : s.find(from, at);
        if (hit == std::string::npos) {
            break;
        }
        out.append(s, at, hit - at);
        out += to;
        check_size(out.size());
        if (from.empty()) {
            if (hit < s.size()) {
                out += s[hit];
            }
            at = hit + 1;
        } else {
            at = hit + from.size();
        }
    }
    if (at < s.size()) {
        out.append(s, at);
    }
    return out;
}

value py_split(const std::string& s, const std::vector<value>& args) {
    list_t parts;
    std::int64_t limit = arg_int(args, 1, -1);
    if (args.empty() || args[0].k == kind::none) {
        const std::u32string cps = code_points(s);
        std::size_t n = 0;
        while (true) {
            while (n < cps.size() && py_space(cps[n])) {
                ++n;
            }
            if (n >= cps.size()) {
                break;
            }
            if (limit == 0) {
                std::size_t end = cps.size();
                while (end > n && py_space(cps[end - 1])) {
                    --end;
                }
                parts.push_back(value::string_v(encode(cps.substr(n, end - n))));
                break;
            }
            std::size_t end = n;
            while (end < cps.size() && !py_space(cps[end])) {
                ++end;
            }
            parts.push_back(value::string_v(encode(cps.substr(n, end - n))));
            n = end;
            --limit;
        }
        return value::list_v(std::move(parts));
    }
    const std::string sep = arg_str(args, 0, "split");
    if (sep.empty()) {
        fail("empty separator");
    }
    std::size_t at = 0;
    for (; limit != 0; --limit) {
        const std::size_t hit = s.find(sep, at);
        if (hit == std::string::npos) {
            break;
        }
        parts.push_back(value::string_v(s.substr(at, hit - at)));
        at = hit + sep.size();
    }
    parts.push_back(value::string_v(s.substr(at)));
    return value::list_v(std::move(parts));
}

[[noreturn]] void unsafe(const value& obj, const std::string& name) {
    fail("access to attribute '" + name + "' of '" + type_name(obj) + "' object is unsafe");
}

bool string_method(const value& obj, const std::string& name, const std::vector<value>& args,
                   value& result) {
    const std::string& s = obj.s;
    if (name == "startswith" || name == "endswith") {
        std::vector<std::string> options;
        if (!args.empty() && args[0].k == kind::list) {
            for (const auto& x : *args[0].l) {
                options.push_back(x.k == kind::string ? x.s : "");
            }
        } else {
            options.push_back(arg_str(args, 0, name.c_str()));
        }
        bool hit = false;
        for (const auto& o : options) {
            hit =
                hit || (o.size() <= s.size() &&
                        (name == "startswith" ? s.compare(0, o.size(), o) == 0
                                              : s.compare(s.size() - o.size(), o.size(), o) == 0));
        }
        result = value::boolean_v(hit);
    } else if (name == "strip" || name == "lstrip" || name == "rstrip") {
        const bool given = !args.empty() && args[0].k != kind::none;
        result = value::string_v(py_strip(s, given ? arg_str(args, 0, name.c_str()) : std::string(),
                                          !given, name != "rstrip", name != "lstrip"));
    } else if (name == "split") {
        result = py_split(s, args);
    } else if (name == "upper" || name == "lower") {
        result = value::string_v(
            change_case(s, name == "upper" ? letter_case::upper : letter_case::lower));
    } else if (name == "title" || name == "capitalize") {
        result = value::string_v(
            change_case(s, name == "title" ? letter_case::title : letter_case::capitalize));
    } else if (name == "replace") {
        result = value::string_v(py_replace(s, arg_str(args, 0, "replace"),
                                            arg_str(args, 1, "replace"), arg_int(args, 2, -1)));
    } else if (name == "find") {
        const std::size_t hit = s.find(arg_str(args, 0, "find"));
        result =
            value::integer_v(hit == std::string::npos
                                 ? -1
                                 : static_cast<std::int64_t>(code_point_count(s.substr(0, hit))));
    } else if (name == "count") {
        const std::string sub = arg_str(args, 0, "count");
        std::int64_t n = 0;
        for (std::size_t at = s.find(sub); !sub.empty() && at != std::string::npos;
             at = s.find(sub, at + sub.size())) {
            ++n;
        }
        result =
            value::integer_v(sub.empty() ? static_cast<std::int64_t>(code_point_count(s)) + 1 : n);
    } else if (name == "join") {
        std::string out;
        const list_t items = args.empty() ? list_t{} : iterate(args[0]);
        for (std::size_t n = 0; n < items.size(); ++n) {
            if (items[n].k != kind::string) {
                fail("sequence item " + std::to_string(n) + ": expected str instance");
            }
            out += n ? s : "";
            out += items[n].s;
            check_size(out.size());
        }
        result = value::string_v(std::move(out));
    } else {
        return false;
    }
    return true;
}

bool dict_method(const value& obj, const std::string& name, const std::vector<value>& args,
                 value& result) {
    if (name == "items" || name == "keys" || name == "values") {
        list_t out;
        for (const auto& [key, v] : obj.d->items) {
            if (name == "items") {
                out.push_back(value::list_v({value::string_v(key), v}));
                out.back().tuple = true;
            } else {
                out.push_back(name == "keys" ? value::string_v(key) : v);
            }
        }
        result = value::list_v(std::move(out));
    } else if (name == "get") {
        const value* hit =
            !args.empty() && args[0].k == kind::string ? obj.d->find(args[0].s) : nullptr;
        result = hit ? *hit : args.size() > 1 ? args[1] : value::none_v();
    } else if (name == "update" || name == "pop" || name == "popitem" || name == "setdefault" ||
               name == "clear") {
        unsafe(obj, name);
    } else {
        return false;
    }
    return true;
}

bool list_method(const value& obj, const std::string& name, const std::vector<value>& args,
                 value& result) {
    if (name == "index" || name == "count") {
        const value target = args.empty() ? value() : args[0];
        std::int64_t count = 0;
        for (std::size_t n = 0; n < obj.l->size(); ++n) {
            if (equal((*obj.l)[n], target)) {
                if (name == "index") {
                    result = value::integer_v(static_cast<std::int64_t>(n));
                    return true;
                }
                ++count;
            }
        }
        if (name == "index") {
            fail(to_repr(target) + " is not in list");
        }
        result = value::integer_v(count);
    } else if (name == "append" || name == "extend" || name == "pop" || name == "insert" ||
               name == "remove" || name == "clear" || name == "sort" || name == "reverse") {
        unsafe(obj, name);
    } else {
        return false;
    }
    return true;
}

} // namespace

std::string change_case(std::string_view s, letter_case mode) {
    std::u32string cps = code_points(s);
    bool after_cased = false; // title: the previous character is cased
    bool word_start = true;   // jinja_title: at the start of a word
    for (std::size_t n = 0; n < cps.size(); ++n) {
        const auto cp = static_cast<utf8proc_int32_t>(cps[n]);
        utf8proc_int32_t out = cp;
        switch (mode) {
        case letter_case::upper:
            out = utf8proc_toupper(cp);
            break;
        case letter_case::lower:
            out = utf8proc_tolower(cp);
            break;
        case letter_case::capitalize:
            out = n == 0 ? utf8proc_totitle(cp) : utf8proc_tolower(cp);
            break;
        case letter_case::title: {
            const auto cat = utf8proc_category(cp);
            const bool cased = cat == UTF8PROC_CATEGORY_LU || cat == UTF8PROC_CATEGORY_LL ||
                               cat == UTF8PROC_CATEGORY_LT;
            out = after_cased ? utf8proc_tolower(cp) : utf8proc_totitle(cp);
            after_cased = cased;
            break;
        }
        case letter_case::jinja_title: {
            // Jinja's title filter: words start after whitespace, '-', and opening brackets.
            const bool boundary =
                py_space(cps[n]) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<';
            out = boundary ? cp : word_start ? utf8proc_toupper(cp) : utf8proc_tolower(cp);
            word_start = boundary;
            break;
        }
        }
        cps[n] = static_cast<char32_t>(out);
    }
    return encode(cps);
}

std::string py_strip(const std::string& s, const std::string& chars, bool whitespace, bool left,
                     bool right) {
    const std::u32string set = code_points(chars);
    const auto strip_it = [&](char32_t c) {
        return whitespace ? py_space(c) : set.find(c) != std::u32string::npos;
    };
    std::size_t begin = 0;
    std::size_t end = s.size();
    const auto decode_one = [&](std::size_t at, std::size_t& len) {
        const std::size_t max = std::min<std::size_t>(4, s.size() - at);
        std::size_t n = 1;
        while (n < max && (static_cast<unsigned char>(s[at + n]) & 0xc0) == 0x80) {
            ++n;
        }
        len = n;
        return code_points(std::string_view(s).substr(at, n))[0];
    };
    while (left && begin < end) {
        std::size_t len = 0;
        if (!strip_it(decode_one(begin, len))) {
            break;
        }
        begin += len;
    }
    while (right && end > begin) {
        std::size_t at = end - 1;
        while (at > begin && (static_cast<unsigned char>(s[at]) & 0xc0) == 0x80) {
            --at;
        }
        std::size_t len = 0;
        if (!strip_it(decode_one(at, len))) {
            break;
        }
        end = at;
    }
    return s.substr(begin, end - begin);
}

std::int64_t word_count(const std::string& s) {
    // Jinja counts the runs of \w: letters, digits and '_'.
    std::int64_t words = 0;
    bool in_word = false;
    for (const char32_t cp : code_points(s)) {
        const auto cat = utf8proc_category(static_cast<utf8proc_int32_t>(cp));
        const bool word = cp == '_' ||
                          (cat >= UTF8PROC_CATEGORY_LU && cat <= UTF8PROC_CATEGORY_LO) ||
                          (cat >= UTF8PROC_CATEGORY_ND && cat <= UTF8PROC_CATEGORY_NO);
        words += word && !in_word;
        in_word = word;
    }
    return words;
}

bool has_method(const value& obj, std::string_view name) {
    // The methods that the immutable sandbox lets a template read (the mutating ones read as
    // undefined there).
    static constexpr std::string_view str_methods[] = {
        "capitalize",   "casefold",    "center",    "count",      "encode",       "endswith",
        "expandtabs",   "find",        "format",    "format_map", "index",        "isalnum",
        "isalpha",      "isascii",     "isdecimal", "isdigit",    "isidentifier", "islower",
        "isnumeric",    "isprintable", "isspace",   "istitle",    "isupper",      "join",
        "ljust",        "lower",       "lstrip",    "maketrans",  "partition",    "removeprefix",
        "removesuffix", "replace",     "rfind",     "rindex",     "rjust",        "rpartition",
        "rsplit",       "rstrip",      "split",     "splitlines", "startswith",   "strip",
        "swapcase",     "title",       "translate", "upper",      "zfill"};
    static constexpr std::string_view dict_methods[] = {"copy",  "fromkeys", "get",
                                                        "items", "keys",     "values"};
    static constexpr std::string_view list_methods[] = {"copy", "count", "index"};
    const auto in = [&](const auto& names) {
        return std::find(std::begin(names), std::end(names), name) != std::end(names);
    };
    switch (obj.k) {
    case kind::string:
        return in(str_methods);
    case kind::dict:
        return in(dict_methods);
    case kind::list:
        return in(list_methods);
    default:
        return false;
    }
}

list_t iterate(const value& v) {
    switch (v.k) {
    case kind::list: {
        std::size_t bytes = v.l->size() * sizeof(value);
        for (const auto& item : *v.l) {
            bytes += item.s.size();
        }
        charge(bytes);
        return *v.l;
    }
    case kind::dict: {
        list_t keys;
        keys.reserve(v.d->items.size());
        for (const auto& [key, x] : v.d->items) {
            keys.push_back(value::string_v(key));
        }
        return keys;
    }
    case kind::string: {
        list_t chars;
        for (const char32_t c : code_points(v.s)) {
            chars.push_back(value::string_v(encode(std::u32string(1, c))));
        }
        return chars;
    }
    case kind::undefined:
        return {};
    default:
        fail(std::string("'") + type_name(v) + "' object is not iterable");
    }
}

bool call_method(const value& obj, const std::string& name, const std::vector<value>& args,
                 value& result) {
    switch (obj.k) {
    case kind::string:
        return string_method(obj, name, args, result);
    case kind::dict:
        return dict_method(obj, name, args, result);
    case kind::list:
        return list_method(obj, name, args, result);
    default:
        return false;
    }
}

} // namespace lanes::common::jinja_detail
