// Jinja's operators and lookups with Python's meaning: + on numbers, strings and lists, true
// division, floor division and modulo, attribute lookup that falls back to items and back.
#include "common/prompt/jinja_impl.hpp"

#include <algorithm>
#include <cmath>

namespace lanes::common::jinja_detail {

namespace {

std::int64_t as_int(const value& v) {
    return v.k == kind::boolean ? v.b : v.i;
}
bool is_int(const value& v) {
    return v.k == kind::integer || v.k == kind::boolean;
}

[[noreturn]] void unsupported(const std::string& op, const value& a, const value& b) {
    if (!a.defined() || !b.defined()) {
        fail("'" + (a.defined() ? b.s : a.s) + "' is undefined");
    }
    fail("unsupported operand type(s) for " + op + ": '" + type_name(a) + "' and '" + type_name(b) +
         "'");
}

value repeat(const value& seq, std::int64_t times) {
    if (times <= 0) {
        return seq.k == kind::string ? value::string_v("") : value::list_v({});
    }
    const std::size_t unit = seq.k == kind::string ? seq.s.size() : seq.l->size() * sizeof(value);
    if (unit && static_cast<std::uint64_t>(times) > max_output_bytes / unit) {
        fail("repetition over " + std::to_string(max_output_bytes) + " bytes");
    }
    if (seq.k == kind::string) {
        std::string out;
        for (std::int64_t n = 0; n < times; ++n) {
            out += seq.s;
        }
        return value::string_v(std::move(out));
    }
    list_t out;
    for (std::int64_t n = 0; n < times; ++n) {
        out.insert(out.end(), seq.l->begin(), seq.l->end());
    }
    return value::list_v(std::move(out));
}

value arithmetic(const std::string& op, const value& a, const value& b) {
    if (is_int(a) && is_int(b)) {
        const std::int64_t x = as_int(a);
        const std::int64_t y = as_int(b);
        std::int64_t r = 0;
        bool overflow = false;
        if (op == "+") {
            overflow = __builtin_add_overflow(x, y, &r);
        } else if (op == "-") {
            overflow = __builtin_sub_overflow(x, y, &r);
        } else if (op == "*") {
            overflow = __builtin_mul_overflow(x, y, &r);
        } else if (op == "//" || op == "%") {
            if (y == 0) {
                fail("integer division or modulo by zero");
            }
            std::int64_t q = x / y;
            std::int64_t m = x % y;
            if (m != 0 && ((m < 0) != (y < 0))) {
                --q;
                m += y;
            }
            r = op == "//" ? q : m;
        } else if (op == "**") {
            if (y < 0) {
                return value::floating_v(std::pow(static_cast<double>(x), static_cast<double>(y)));
            }
            r = 1;
            for (std::int64_t n = 0; n < y && !overflow; ++n) {
                overflow = __builtin_mul_overflow(r, x, &r);
            }
        }
        if (overflow) {
            fail("integer overflow in " + op);
        }
        if (op != "/") {
            return value::integer_v(r);
        }
    }
    const double x = as_double(a);
    const double y = as_double(b);
    if (op == "+") {
        return value::floating_v(x + y);
    }
    if (op == "-") {
        return value::floating_v(x - y);
    }
    if (op == "*") {
        return value::floating_v(x * y);
    }
    if (op == "**") {
        const double r = std::pow(x, y);
        if (std::isinf(r) && std::isfinite(x) && std::isfinite(y)) {
            fail("numerical result out of range in **");
        }
        return value::floating_v(r);
    }
    if (y == 0) {
        fail("division by zero");
    }
    if (op == "/") {
        return value::floating_v(x / y);
    }
    const double q = std::floor(x / y);
    return value::floating_v(op == "//" ? q : x - q * y);
}

std::int64_t slice_index(const value& v, std::int64_t size, bool& given) {
    given = v.defined() && v.k != kind::none;
    if (!given) {
        return 0;
    }
    if (!is_int(v)) {
        fail("slice indices must be integers or None");
    }
    return as_int(v) < 0 ? as_int(v) + size : as_int(v);
}

} // namespace

bool contains(const value& container, const value& item) {
    switch (container.k) {
    case kind::string:
        if (item.k != kind::string) {
            fail(std::string("'in <string>' requires string as left operand, not ") +
                 type_name(item));
        }
        return container.s.find(item.s) != std::string::npos;
    case kind::list:
        for (const auto& x : *container.l) {
            if (equal(x, item)) {
                return true;
            }
        }
        return false;
    case kind::dict:
        if (item.k == kind::list || item.k == kind::dict) {
            fail(std::string("unhashable type: '") + type_name(item) + "'");
        }
        return item.k == kind::string && container.d->find(item.s) != nullptr;
    case kind::undefined:
        return false;
    default:
        fail(std::string("argument of type '") + type_name(container) + "' is not iterable");
    }
}

value binary_op(const std::string& op, const value& a, const value& b) {
    if (op == "==") {
        return value::boolean_v(equal(a, b));
    }
    if (op == "!=") {
        return value::boolean_v(!equal(a, b));
    }
    if (op == "<" || op == ">" || op == "<=" || op == ">=") {
        const int c = compare(a, b);
        return value::boolean_v(op == "<"    ? c < 0
                                : op == ">"  ? c > 0
                                : op == "<=" ? c <= 0
                                             : c >= 0);
    }
    if (op == "in" || op == "not in") {
        return value::boolean_v(contains(b, a) == (op == "in"));
    }
    if (op == "~") {
        std::string s = to_str(a) + to_str(b);
        check_size(s.size());
        return value::string_v(std::move(s));
    }
    if (a.is_number() && b.is_number()) {
        return arithmetic(op, a, b);
    }
    if (op == "%" && a.k == kind::string) {
        return value::string_v(percent_format(a.s, b));
    }
    if (op == "+" && a.k == b.k && (a.k == kind::string || a.k == kind::list) && !a.lazy &&
        !b.lazy) {
        if (a.k == kind::string) {
            check_size(a.s.size() + b.s.size());
            return value::string_v(a.s + b.s);
        }
        list_t out = *a.l;
        out.insert(out.end(), b.l->begin(), b.l->end());
        return value::list_v(std::move(out));
    }
    if (op == "*" && (a.k == kind::string || a.k == kind::list) && is_int(b)) {
        return repeat(a, as_int(b));
    }
    if (op == "*" && (b.k == kind::string || b.k == kind::list) && is_int(a)) {
        return repeat(b, as_int(a));
    }
    unsupported(op, a, b);
}

namespace {

// A method read without a call (x.items is defined): callable only as obj.name(...).
value method_value(const std::string& name) {
    value v = value::with_kind(kind::function);
    v.fn = std::make_shared<callable>(callable{"method " + name, nullptr});
    return v;
}

value lookup(const value& obj, const std::string& name, bool attribute_first) {
    if (attribute_first && has_method(obj, name)) {
        return method_value(name);
    }
    switch (obj.k) {
    case kind::dict:
    case kind::ns:
        if (const value* v = obj.d->find(name)) {
            return charged_copy(*v);
        }
        break;
    case kind::undefined:
        fail("'" + obj.s + "' is undefined (reading ." + name + ")");
    default:
        break;
    }
    if (has_method(obj, name)) {
        return method_value(name);
    }
    return value::undefined_v(std::string(type_name(obj)) + " object' has no attribute '" + name);
}

} // namespace

// x.name: Python's attribute (a method) first, then the item, as Jinja's getattr.
value get_attr(const value& obj, const std::string& name) {
    return lookup(obj, name, true);
}

value get_item(const value& obj, const value& key) {
    if (obj.lazy) {
        return value::undefined_v("generator object' is not subscriptable");
    }
    if (obj.k == kind::undefined) {
        fail("'" + obj.s + "' is undefined (reading [" + to_repr(key) + "])");
    }
    if ((obj.k == kind::list || obj.k == kind::string) && is_int(key)) {
        const std::int64_t size = obj.k == kind::list ? static_cast<std::int64_t>(obj.l->size())
                                                      : static_cast<std::int64_t>(obj.s.size());
        if (obj.k == kind::string) {
            const std::u32string cps = code_points(obj.s);
            const auto n = static_cast<std::int64_t>(cps.size());
            const std::int64_t at = as_int(key) < 0 ? as_int(key) + n : as_int(key);
            if (at < 0 || at >= n) {
                return value::undefined_v("str object' has no element " + to_str(key));
            }
            return value::string_v(encode(std::u32string(1, cps[static_cast<std::size_t>(at)])));
        }
        const std::int64_t at = as_int(key) < 0 ? as_int(key) + size : as_int(key);
        if (at < 0 || at >= size) {
            return value::undefined_v("list object' has no element " + to_str(key));
        }
        return charged_copy((*obj.l)[static_cast<std::size_t>(at)]);
    }
    if (key.k == kind::string) {
        return lookup(obj, key.s, false);
    }
    return value::undefined_v(std::string(type_name(obj)) + " object' has no element " +
                              to_str(key));
}

value slice(const value& obj, const value& start, const value& stop, const value& step) {
    if (obj.lazy) {
        return value::undefined_v("generator object' is not subscriptable");
    }
    if (obj.k != kind::list && obj.k != kind::string) {
        if (!obj.defined()) {
            fail("'" + obj.s + "' is undefined (slicing it)");
        }
        fail(std::string("'") + type_name(obj) + "' object is not subscriptable");
    }
    const std::u32string cps = obj.k == kind::string ? code_points(obj.s) : std::u32string();
    const auto size = static_cast<std::int64_t>(obj.k == kind::string ? cps.size() : obj.l->size());
    bool given = false;
    std::int64_t by = slice_index(step, 0, given);
    if (!given) {
        by = 1;
    }
    if (by == 0) {
        fail("slice step cannot be zero");
    }
    std::int64_t from = slice_index(start, size, given);
    if (!given) {
        from = by > 0 ? 0 : size - 1;
    }
    std::int64_t to = slice_index(stop, size, given);
    if (!given) {
        to = by > 0 ? size : -1;
    } else if (to < 0) {
        to = by > 0 ? 0 : -1;
    }
    if (by > 0) {
        from = std::clamp<std::int64_t>(from, 0, size);
        to = std::min(to, size);
    } else {
        from = std::min(from, size - 1);
    }
    std::vector<std::size_t> picks;
    for (std::int64_t n = from; by > 0 ? n < to : n > to; n += by) {
        if (n >= 0) {
            picks.push_back(static_cast<std::size_t>(n));
        }
    }
    if (obj.k == kind::string) {
        std::u32string out;
        for (const auto n : picks) {
            out += cps[n];
        }
        return value::string_v(encode(out));
    }
    list_t out;
    out.reserve(picks.size());
    for (const auto n : picks) {
        out.push_back((*obj.l)[n]);
    }
    return value::list_v(std::move(out));
}

} // namespace lanes::common::jinja_detail
