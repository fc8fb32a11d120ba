// Values written out as Python does: str() and repr() (with its float repr), and json.dumps
// as transformers' tojson calls it (ensure_ascii=False, insertion order, ", " and ": "
// separators, or "," and newlines with an indent).
#include "common/prompt/jinja_impl.hpp"

#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>

#include <utf8proc.h>

namespace lanes::common::jinja_detail {

namespace {

constexpr auto npos = std::string::npos;

// Python's float repr: the shortest round-trip digits, positional for exponents -4..15.
std::string float_repr(double x) {
    if (std::isnan(x)) {
        return "nan";
    }
    if (std::isinf(x)) {
        return x < 0 ? "-inf" : "inf";
    }
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof buf, x, std::chars_format::scientific);
    const std::string sci(buf, res.ptr);
    const auto e = sci.find('e');
    std::string mantissa = sci.substr(0, e);
    const int exponent = std::stoi(sci.substr(e + 1));
    std::string sign;
    if (mantissa[0] == '-') {
        sign = "-";
        mantissa.erase(0, 1);
    }
    std::string digits;
    for (const char c : mantissa) {
        if (c != '.') {
            digits += c;
        }
    }
    if (exponent >= -4 && exponent < 16) {
        std::string out;
        if (exponent < 0) {
            out = "0." + std::string(static_cast<std::size_t>(-exponent - 1), '0') + digits;
        } else if (static_cast<int>(digits.size()) <= exponent + 1) {
            out = digits +
                  std::string(static_cast<std::size_t>(exponent + 1) - digits.size(), '0') + ".0";
        } else {
            out = digits.substr(0, static_cast<std::size_t>(exponent + 1)) + "." +
                  digits.substr(static_cast<std::size_t>(exponent + 1));
        }
        return sign + out;
    }
    std::string out = digits.substr(0, 1);
    if (digits.size() > 1) {
        out += "." + digits.substr(1);
    }
    std::snprintf(buf, sizeof buf, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
    return sign + out + buf;
}

// str.isprintable() per character: not a control, format, surrogate, private-use, unassigned or
// separator character other than the space.
bool printable(char32_t cp) {
    if (cp == ' ') {
        return true;
    }
    switch (utf8proc_category(static_cast<utf8proc_int32_t>(cp))) {
    case UTF8PROC_CATEGORY_CC:
    case UTF8PROC_CATEGORY_CF:
    case UTF8PROC_CATEGORY_CS:
    case UTF8PROC_CATEGORY_CO:
    case UTF8PROC_CATEGORY_CN:
    case UTF8PROC_CATEGORY_ZS:
    case UTF8PROC_CATEGORY_ZL:
    case UTF8PROC_CATEGORY_ZP:
        return false;
    default:
        return true;
    }
}

void repr_string(const std::string& s, std::string& out) {
    const bool has_single = s.find('\'') != std::string::npos;
    const bool has_double = s.find('"') != std::string::npos;
    const char quote = has_single && !has_double ? '"' : '\'';
    out += quote;
    for (const char32_t cp : code_points(s)) {
        if (cp == static_cast<char32_t>(quote) || cp == '\\') {
            out += '\\';
            out += static_cast<char>(cp);
        } else if (cp == '\n') {
            out += "\\n";
        } else if (cp == '\r') {
            out += "\\r";
        } else if (cp == '\t') {
            out += "\\t";
        } else if (!printable(cp)) {
            char buf[16];
            std::snprintf(buf, sizeof buf,
                          cp < 0x100     ? "\\x%02x"
                          : cp < 0x10000 ? "\\u%04x"
                                         : "\\U%08x",
                          static_cast<unsigned>(cp));
            out += buf;
        } else {
            out += encode(std::u32string(1, cp));
        }
    }
    out += quote;
}

void repr_into(const value& v, std::string& out) {
    if (v.lazy) {
        out += "<generator object>";
        return;
    }
    switch (v.k) {
    case kind::string:
        repr_string(v.s, out);
        return;
    case kind::list:
        out += v.tuple ? '(' : '[';
        for (std::size_t n = 0; n < v.l->size(); ++n) {
            out += n ? ", " : "";
            repr_into((*v.l)[n], out);
        }
        out += v.tuple ? (v.l->size() == 1 ? ",)" : ")") : "]";
        return;
    case kind::dict:
        out += '{';
        for (std::size_t n = 0; n < v.d->items.size(); ++n) {
            out += n ? ", " : "";
            repr_string(v.d->items[n].first, out);
            out += ": ";
            repr_into(v.d->items[n].second, out);
        }
        out += '}';
        return;
    case kind::undefined:
        out += "Undefined";
        return;
    default:
        out += to_str(v);
    }
}

void json_string(const std::string& s, std::string& out) {
    out += '"';
    for (const char c : s) {
        const auto u = static_cast<unsigned char>(c);
        switch (c) {
        case '"':
            out += "\\\"";
            break;
        case '\\':
            out += "\\\\";
            break;
        case '\n':
            out += "\\n";
            break;
        case '\r':
            out += "\\r";
            break;
        case '\t':
            out += "\\t";
            break;
        case '\b':
            out += "\\b";
            break;
        case '\f':
            out += "\\f";
            break;
        default:
            if (u < 0x20) {
                char buf[8];
                std::snprintf(buf, sizeof buf, "\\u%04x", u);
                out += buf;
            } else {
                out += c;
            }
        }
    }
    out += '"';
}

void json_into(const value& v, int indent, int level, std::string& out) {
    const auto newline = [&](int depth) {
        out += '\n';
        out.append(static_cast<std::size_t>(indent * depth), ' ');
    };
    switch (v.k) {
    case kind::none:
        out += "null";
        return;
    case kind::boolean:
        out += v.b ? "true" : "false";
        return;
    case kind::integer:
        out += std::to_string(v.i);
        return;
    case kind::floating:
        out += std::isnan(v.f)   ? "NaN"
               : std::isinf(v.f) ? (v.f < 0 ? "-Infinity" : "Infinity")
                                 : float_repr(v.f);
        return;
    case kind::string:
        json_string(v.s, out);
        return;
    case kind::list:
    case kind::dict: {
        if (v.lazy) {
            fail("Object of type generator is not JSON serializable");
        }
        const bool is_list = v.k == kind::list;
        const std::size_t size = is_list ? v.l->size() : v.d->items.size();
        out += is_list ? '[' : '{';
        if (size == 0) {
            out += is_list ? ']' : '}';
            return;
        }
        for (std::size_t n = 0; n < size; ++n) {
            if (n) {
                out += indent < 0 ? ", " : ",";
            }
            if (indent >= 0) {
                newline(level + 1);
            }
            if (is_list) {
                json_into((*v.l)[n], indent, level + 1, out);
            } else {
                json_string(v.d->items[n].first, out);
                out += ": ";
                json_into(v.d->items[n].second, indent, level + 1, out);
            }
            check_size(out.size());
        }
        if (indent >= 0) {
            newline(level);
        }
        out += is_list ? ']' : '}';
        return;
    }
    default:
        fail(std::string("Object of type ") + type_name(v) + " is not JSON serializable");
    }
}

} // namespace

std::string to_str(const value& v) {
    switch (v.k) {
    case kind::undefined:
        return "";
    case kind::none:
        return "None";
    case kind::boolean:
        return v.b ? "True" : "False";
    case kind::integer:
        return std::to_string(v.i);
    case kind::floating:
        return float_repr(v.f);
    case kind::string:
        return v.s;
    case kind::list:
    case kind::dict: {
        std::string out;
        repr_into(v, out);
        return out;
    }
    case kind::ns:
        return "<Namespace>";
    case kind::function:
        return "<function " + v.fn->name + ">";
    }
    return "";
}

std::string to_repr(const value& v) {
    std::string out;
    repr_into(v, out);
    return out;
}

std::string percent_format(const std::string& format, const value& args) {
    const list_t items = args.k == kind::list && args.tuple ? *args.l : list_t{args};
    std::size_t next = 0;
    std::string out;
    for (std::size_t n = 0; n < format.size(); ++n) {
        if (format[n] != '%') {
            out += format[n];
            continue;
        }
        // %[flags][width][.precision]type, kept for snprintf (numbers are ASCII)
        std::string spec = "%";
        while (++n < format.size() && std::string_view("-+ 0#").find(format[n]) != npos) {
            spec += format[n];
        }
        const bool left = spec.find('-') != std::string::npos;
        std::size_t width = 0;
        for (; n < format.size() && std::isdigit(static_cast<unsigned char>(format[n])); ++n) {
            width =
                std::min<std::size_t>(width * 10 + static_cast<std::size_t>(format[n] - '0'), 999);
        }
        std::size_t precision = npos;
        if (n < format.size() && format[n] == '.') {
            precision = 0;
            for (++n; n < format.size() && std::isdigit(static_cast<unsigned char>(format[n]));
                 ++n) {
                precision = std::min<std::size_t>(
                    precision * 10 + static_cast<std::size_t>(format[n] - '0'), 99);
            }
        }
        if (n >= format.size()) {
            fail("incomplete format");
        }
        const char type = format[n];
        if (type == '%') {
            out += '%';
            continue;
        }
        if (next >= items.size()) {
            fail("not enough arguments for format string");
        }
        const value& v = items[next++];
        std::string text;
        if (type == 's' || type == 'r') {
            const std::u32string cps = code_points(type == 's' ? to_str(v) : to_repr(v));
            text = encode(cps.substr(0, precision));
            const std::size_t length = std::min(cps.size(), precision);
            const std::string pad(width > length ? width - length : 0, ' ');
            text = left ? text + pad : pad + text;
        } else {
            spec += std::to_string(width);
            if (precision != npos) {
                spec += "." + std::to_string(precision);
            }
            char buf[1200];
            if (std::string_view("dixXo").find(type) != npos) {
                const double d = as_double(v);
                const auto whole = v.k == kind::floating
                                       ? static_cast<long long>(std::trunc(d))
                                       : static_cast<long long>(v.k == kind::boolean ? v.b : v.i);
                std::snprintf(buf, sizeof buf, (spec + "ll" + (type == 'i' ? 'd' : type)).c_str(),
                              whole);
            } else if (std::string_view("fFeEgG").find(type) != npos) {
                std::snprintf(buf, sizeof buf, (spec + type).c_str(), as_double(v));
            } else {
                fail(std::string("unsupported format character '") + type + "'");
            }
            text = buf;
        }
        out += text;
        check_size(out.size());
    }
    if (next < items.size() && args.k != kind::dict) {
        fail("not all arguments converted during string formatting");
    }
    return out;
}

std::string to_json(const value& v, int indent) {
    std::string out;
    json_into(v, indent, 0, out);
    return out;
}

} // namespace lanes::common::jinja_detail
