// Jinja's builtin filters that chat templates use, with Jinja's argument names and
// defaults; tojson is transformers' json.dumps(ensure_ascii=False, sort_keys=False).
#include "common/prompt/jinja_impl.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>

namespace lanes::common::jinja_detail {

namespace {

// Positional argument n, else keyword key, else fallback.
value arg(const std::vector<value>& args, const kwargs_t& kwargs, std::size_t n,
          std::string_view key, value fallback = {}) {
    if (n < args.size()) {
        return args[n];
    }
    for (const auto& [k, v] : kwargs) {
        if (k == key) {
            return v;
        }
    }
    return fallback;
}

value attribute_of(const value& item, const value& attribute) {
    if (attribute.k == kind::integer) {
        return get_item(item, attribute);
    }
    value v = item;
    const std::string path = to_str(attribute);
    std::size_t at = 0;
    while (true) {
        const std::size_t dot = path.find('.', at);
        v = get_item(v, value::string_v(path.substr(at, dot - at)));
        if (dot == std::string::npos) {
            return v;
        }
        at = dot + 1;
    }
}

// select/reject/selectattr/rejectattr: keep the items whose test (or truthiness) is want.
value select(const value& subject, const std::vector<value>& args, bool by_attr, bool want) {
    list_t out;
    const std::size_t test_at = by_attr ? 1 : 0;
    if (by_attr && args.empty()) {
        fail("selectattr/rejectattr need an attribute");
    }
    const std::string test = args.size() > test_at ? to_str(args[test_at]) : "";
    const std::vector<value> test_args(
        args.begin() + static_cast<std::ptrdiff_t>(std::min(args.size(), test_at + 1)), args.end());
    for (const auto& item : iterate(subject)) {
        const value v = by_attr ? attribute_of(item, args[0]) : item;
        const bool ok = test.empty() ? truthy(v) : apply_test(test, v, test_args);
        if (ok == want) {
            out.push_back(item);
        }
    }
    return value::list_v(std::move(out));
}

std::string escape(const std::string& s) {
    std::string out;
    for (const char c : s) {
        switch (c) {
        case '&':
            out += "&amp;";
            break;
        case '<':
            out += "&lt;";
            break;
        case '>':
            out += "&gt;";
            break;
        case '"':
            out += "&#34;";
            break;
        case '\'':
            out += "&#39;";
            break;
        default:
            out += c;
        }
    }
    return out;
}

std::string indent(const std::string& s, const value& width, bool first, bool blank) {
    const std::string pad = width.k == kind::string
                                ? width.s
                                : std::string(static_cast<std::size_t>(std::max<std::int64_t>(
                                                  0, width.k == kind::integer ? width.i : 4)),
                                              ' ');
    std::vector<std::string> lines;
    std::size_t at = 0;
    const std::string text = s + "\n";
    for (std::size_t nl = text.find('\n'); nl != std::string::npos; nl = text.find('\n', at)) {
        lines.push_back(text.substr(at, nl - at));
        at = nl + 1;
    }
    std::string out = lines[0];
    for (std::size_t n = 1; n < lines.size(); ++n) {
        out += "\n";
        out += (blank || !lines[n].empty()) ? pad + lines[n] : lines[n];
    }
    return first ? pad + out : out;
}

value sorted(const value& subject, bool reverse, bool case_sensitive, const value& attribute) {
    list_t items = iterate(subject);
    const auto key = [&](const value& v) {
        value k = attribute.defined() && attribute.k != kind::none ? attribute_of(v, attribute) : v;
        if (!case_sensitive && k.k == kind::string) {
            k.s = change_case(k.s, letter_case::lower);
        }
        return k;
    };
    std::stable_sort(items.begin(), items.end(), [&](const value& a, const value& b) {
        return reverse ? compare(key(b), key(a)) < 0 : compare(key(a), key(b)) < 0;
    });
    return value::list_v(std::move(items));
}

value min_max(const value& subject, bool want_max, bool case_sensitive, const value& attribute) {
    const value s = sorted(subject, false, case_sensitive, attribute);
    if (s.l->empty()) {
        return value::undefined_v("min/max of an empty sequence");
    }
    return want_max ? s.l->back() : s.l->front();
}

value to_int(const value& v, const value& fallback) {
    switch (v.k) {
    case kind::integer:
        return v;
    case kind::boolean:
        return value::integer_v(v.b);
    case kind::floating:
        return std::isfinite(v.f) ? value::integer_v(static_cast<std::int64_t>(v.f)) : fallback;
    case kind::string: {
        const std::string t = py_strip(v.s, "", true, true, true);
        try {
            std::size_t used = 0;
            const long long n = std::stoll(t, &used);
            if (used == t.size()) {
                return value::integer_v(n);
            }
            const double d = std::stod(t, &used);
            return used == t.size() ? value::integer_v(static_cast<std::int64_t>(d)) : fallback;
        } catch (const std::exception&) {
            return fallback;
        }
    }
    default:
        return fallback;
    }
}

value to_float(const value& v, const value& fallback) {
    if (v.is_number()) {
        return value::floating_v(as_double(v));
    }
    if (v.k == kind::string) {
        try {
            std::size_t used = 0;
            const std::string t = py_strip(v.s, "", true, true, true);
            const double d = std::stod(t, &used);
            return used == t.size() ? value::floating_v(d) : fallback;
        } catch (const std::exception&) {
            return fallback;
        }
    }
    return fallback;
}

value round_value(const value& v, std::int64_t precision, const std::string& method) {
    const double scale = std::pow(10.0, static_cast<double>(precision));
    const double x = as_double(v) * scale;
    const double r = method == "ceil"    ? std::ceil(x)
                     : method == "floor" ? std::floor(x)
                                         : std::nearbyint(x);
    return value::floating_v(r / scale);
}

value eager_filter(const std::string& name, const value& subject, const std::vector<value>& args,
                   const kwargs_t& kwargs) {
    if (name == "default" || name == "d") {
        const bool boolean = truthy(arg(args, kwargs, 1, "boolean"));
        if (!subject.defined() || (boolean && !truthy(subject))) {
            return arg(args, kwargs, 0, "default_value", value::string_v(""));
        }
        return subject;
    }
    if (name == "tojson") {
        const value indent = arg(args, kwargs, 0, "indent");
        return value::string_v(
            to_json(subject, indent.k == kind::integer
                                 ? static_cast<int>(std::clamp<std::int64_t>(indent.i, 0, 64))
                                 : -1));
    }
    if (name == "length" || name == "count") {
        switch (subject.k) {
        case kind::string:
            return value::integer_v(static_cast<std::int64_t>(code_point_count(subject.s)));
        case kind::list:
            return value::integer_v(static_cast<std::int64_t>(subject.l->size()));
        case kind::dict:
        case kind::ns:
            return value::integer_v(static_cast<std::int64_t>(subject.d->items.size()));
        case kind::undefined:
            return value::integer_v(0);
        default:
            fail(std::string("object of type '") + type_name(subject) + "' has no len()");
        }
    }
    if (name == "trim") {
        const value chars = arg(args, kwargs, 0, "chars");
        const bool given = chars.k == kind::string;
        return value::string_v(py_strip(to_str(subject), given ? chars.s : "", !given, true, true));
    }
    if (name == "string" || name == "safe") {
        return value::string_v(to_str(subject));
    }
    if (name == "e" || name == "escape") {
        return value::string_v(escape(to_str(subject)));
    }
    if (name == "upper" || name == "lower") {
        return value::string_v(change_case(to_str(subject), name == "upper" ? letter_case::upper
                                                                            : letter_case::lower));
    }
    if (name == "capitalize") {
        return value::string_v(change_case(to_str(subject), letter_case::capitalize));
    }
    if (name == "title") {
        return value::string_v(change_case(to_str(subject), letter_case::jinja_title));
    }
    if (name == "replace") {
        value out;
        std::vector<value> method_args = {value::string_v(to_str(arg(args, kwargs, 0, "old"))),
                                          value::string_v(to_str(arg(args, kwargs, 1, "new"))),
                                          arg(args, kwargs, 2, "count", value::none_v())};
        call_method(value::string_v(to_str(subject)), "replace", method_args, out);
        return out;
    }
    if (name == "join") {
        const value sep = arg(args, kwargs, 0, "d", value::string_v(""));
        const value attribute = arg(args, kwargs, 1, "attribute");
        std::string out;
        bool first = true;
        for (const auto& item : iterate(subject)) {
            out += first ? "" : to_str(sep);
            out += to_str(attribute.defined() ? attribute_of(item, attribute) : item);
            check_size(out.size());
            first = false;
        }
        return value::string_v(std::move(out));
    }
    if (name == "select" || name == "reject") {
        return select(subject, args, false, name == "select");
    }
    if (name == "selectattr" || name == "rejectattr") {
        return select(subject, args, true, name == "selectattr");
    }
    if (name == "map") {
        list_t out;
        const value attribute = arg({}, kwargs, 0, "attribute");
        for (const auto& item : iterate(subject)) {
            if (attribute.defined()) {
                value v = attribute_of(item, attribute);
                out.push_back(v.defined() ? v : arg({}, kwargs, 0, "default", v));
            } else if (!args.empty()) {
                out.push_back(apply_filter(to_str(args[0]), item,
                                           std::vector<value>(args.begin() + 1, args.end()), {}));
            } else {
                out.push_back(item);
            }
        }
        return value::list_v(std::move(out));
    }
    if (name == "first" || name == "last") {
        const list_t items = iterate(subject);
        if (items.empty()) {
            return value::undefined_v("no " + name + " item");
        }
        return name == "first" ? items.front() : items.back();
    }
    if (name == "reverse") {
        if (subject.k == kind::string) {
            return slice(subject, value(), value(), value::integer_v(-1));
        }
        list_t items = iterate(subject);
        std::reverse(items.begin(), items.end());
        return value::list_v(std::move(items));
    }
    if (name == "list") {
        return value::list_v(iterate(subject));
    }
    if (name == "items" || name == "dictsort") {
        if (subject.k != kind::dict) {
            if (name == "items" && !subject.defined()) {
                return value::list_v({});
            }
            fail(name + ": expected a mapping, got " + type_name(subject));
        }
        value out;
        call_method(subject, "items", {}, out);
        if (name == "dictsort") {
            const bool by_value =
                to_str(arg(args, kwargs, 1, "by", value::string_v("key"))) == "value";
            out = sorted(out, truthy(arg(args, kwargs, 2, "reverse")),
                         truthy(arg(args, kwargs, 0, "case_sensitive")),
                         value::integer_v(by_value ? 1 : 0));
        }
        return out;
    }
    if (name == "sort") {
        return sorted(subject, truthy(arg(args, kwargs, 0, "reverse")),
                      truthy(arg(args, kwargs, 1, "case_sensitive")),
                      arg(args, kwargs, 2, "attribute"));
    }
    if (name == "unique") {
        list_t out;
        const bool case_sensitive = truthy(arg(args, kwargs, 0, "case_sensitive"));
        std::vector<value> seen;
        for (const auto& item : iterate(subject)) {
            value k = item;
            if (!case_sensitive && k.k == kind::string) {
                k.s = change_case(k.s, letter_case::lower);
            }
            if (std::none_of(seen.begin(), seen.end(),
                             [&](const value& s) { return equal(s, k); })) {
                seen.push_back(k);
                out.push_back(item);
            }
        }
        return value::list_v(std::move(out));
    }
    if (name == "min" || name == "max") {
        return min_max(subject, name == "max", truthy(arg(args, kwargs, 0, "case_sensitive")),
                       arg(args, kwargs, 1, "attribute"));
    }
    if (name == "sum") {
        const value attribute = arg(args, kwargs, 0, "attribute");
        value total = arg(args, kwargs, 1, "start", value::integer_v(0));
        for (const auto& item : iterate(subject)) {
            total =
                binary_op("+", total, attribute.defined() ? attribute_of(item, attribute) : item);
        }
        return total;
    }
    if (name == "abs") {
        if (subject.k == kind::integer || subject.k == kind::boolean) {
            const std::int64_t i = subject.k == kind::boolean ? subject.b : subject.i;
            return value::integer_v(i < 0 ? -i : i);
        }
        return value::floating_v(std::fabs(as_double(subject)));
    }
    if (name == "round") {
        // Python's round(int, n >= 0) is the int itself.
        const std::int64_t precision =
            to_int(arg(args, kwargs, 0, "precision"), value::integer_v(0)).i;
        const std::string method =
            to_str(arg(args, kwargs, 1, "method", value::string_v("common")));
        if (method == "common" && precision >= 0 &&
            (subject.k == kind::integer || subject.k == kind::boolean)) {
            return value::integer_v(subject.k == kind::boolean ? subject.b : subject.i);
        }
        return round_value(subject,
                           to_int(arg(args, kwargs, 0, "precision"), value::integer_v(0)).i,
                           to_str(arg(args, kwargs, 1, "method", value::string_v("common"))));
    }
    if ((name == "int" || name == "float") && !subject.defined()) {
        fail("'" + subject.s + "' is undefined (converting it to a number)");
    }
    if (name == "int") {
        return to_int(subject, arg(args, kwargs, 0, "default", value::integer_v(0)));
    }
    if (name == "float") {
        return to_float(subject, arg(args, kwargs, 0, "default", value::floating_v(0)));
    }
    if (name == "indent") {
        if (subject.k != kind::string) {
            fail(std::string("indent: expected a string, got ") + type_name(subject));
        }
        return value::string_v(indent(to_str(subject), arg(args, kwargs, 0, "width"),
                                      truthy(arg(args, kwargs, 1, "first")),
                                      truthy(arg(args, kwargs, 2, "blank"))));
    }
    if (name == "format") {
        value tuple = value::list_v(args);
        tuple.tuple = true;
        return value::string_v(percent_format(to_str(subject), tuple));
    }
    if (name == "wordcount") {
        return value::integer_v(word_count(to_str(subject)));
    }
    fail("no filter named '" + name + "'");
}

} // namespace

value apply_filter(const std::string& name, const value& subject, const std::vector<value>& args,
                   const kwargs_t& kwargs) {
    // Jinja's select, map, unique, items and reverse (of a list) return generators: always true,
    // without a length or a last item, not subscriptable; iterating them (for, list, join,
    // first) is what templates do.
    static constexpr std::string_view lazy_filters[] = {
        "select", "reject", "selectattr", "rejectattr", "map", "unique", "items", "reverse"};
    if (subject.lazy && (name == "length" || name == "count" || name == "last")) {
        fail("object of type 'generator' has no len()");
    }
    value out = eager_filter(name, subject, args, kwargs);
    if (out.k == kind::list && std::find(std::begin(lazy_filters), std::end(lazy_filters), name) !=
                                   std::end(lazy_filters)) {
        out.lazy = true;
    }
    return out;
}

} // namespace lanes::common::jinja_detail
