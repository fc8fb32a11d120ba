#include "common/metrics/exposition.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <numeric>

namespace lanes::common::metrics {

namespace {

// Label pairs of one sample, sorted by label name; `extra` (e.g. le) is merged in.
struct label_writer {
    const std::vector<std::string>& names;
    std::vector<std::size_t> order; // indices into names, sorted by name

    explicit label_writer(const std::vector<std::string>& label_names)
        : names(label_names) {
        order.resize(names.size());
        std::iota(order.begin(), order.end(), std::size_t{0});
        std::sort(order.begin(), order.end(),
                  [&](std::size_t a, std::size_t b) { return names[a] < names[b]; });
    }

    void write(std::string& out, const label_values& values, std::string_view extra_name = {},
               std::string_view extra_value = {}) const {
        if (order.empty() && extra_name.empty())
            return;
        out += '{';
        bool first = true;
        bool extra_done = extra_name.empty();
        auto put = [&](std::string_view n, std::string_view v) {
            if (!first)
                out += ',';
            first = false;
            out.append(n).append("=\"").append(escape_label_value(v)).append("\"");
        };
        for (std::size_t i : order) {
            if (!extra_done && extra_name < names[i]) {
                put(extra_name, extra_value);
                extra_done = true;
            }
            put(names[i], values[i]);
        }
        if (!extra_done)
            put(extra_name, extra_value);
        out += '}';
    }
};

void write_header(std::string& out, const std::string& name, const std::string& help,
                  std::string_view type) {
    out.append("# HELP ").append(name).append(" ").append(escape_help(help)).append("\n");
    out.append("# TYPE ").append(name).append(" ").append(type).append("\n");
}

template <class T>
void write_simple(std::string& out, const family<T>& f, std::string_view type) {
    write_header(out, f.name(), f.help(), type);
    const label_writer labels(f.label_names());
    f.for_each([&](const label_values& values, const T& child) {
        out.append(f.name());
        labels.write(out, values);
        out.append(" ").append(format_value(child.value())).append("\n");
    });
}

} // namespace

void write_family(std::string& out, const family<histogram>& f) {
    write_header(out, f.name(), f.help(), "histogram");
    const label_writer labels(f.label_names());
    f.for_each([&](const label_values& values, const histogram& h) {
        const std::vector<std::uint64_t> counts = h.bucket_counts();
        std::uint64_t cumulative = 0;
        for (std::size_t i = 0; i < counts.size(); ++i) {
            cumulative += counts[i];
            const bool inf = i == h.upper_bounds().size();
            const std::string le = inf ? "+Inf" : format_value(h.upper_bounds()[i]);
            out.append(f.name()).append("_bucket");
            labels.write(out, values, "le", le);
            out.append(" ").append(format_value(static_cast<double>(cumulative))).append("\n");
        }
        // _count is the +Inf bucket, so the two always agree even while observations race.
        out.append(f.name()).append("_count");
        labels.write(out, values);
        out.append(" ").append(format_value(static_cast<double>(cumulative))).append("\n");
        out.append(f.name()).append("_sum");
        labels.write(out, values);
        out.append(" ").append(format_value(h.sum())).append("\n");
    });
}

void write_family(std::string& out, const family<counter>& f) {
    write_simple(out, f, "counter");
}

void write_family(std::string& out, const family<gauge>& f) {
    write_simple(out, f, "gauge");
}

std::string format_value(double v) {
    if (std::isnan(v))
        return "NaN";
    if (std::isinf(v))
        return v > 0 ? "+Inf" : "-Inf";
    // Shortest round-trip digits in scientific form, e.g. "5.2311e+04", "1e+00", "-2.5e-05".
    char buf[64];
    const auto res = std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::scientific);
    std::string_view sci(buf, static_cast<std::size_t>(res.ptr - buf));
    const std::size_t e_pos = sci.find('e');
    int exp = 0;
    std::string_view exp_text = sci.substr(e_pos + 1);
    if (exp_text.front() == '+')
        exp_text.remove_prefix(1);
    std::from_chars(exp_text.data(), exp_text.data() + exp_text.size(), exp);
    // Go switches to exponent form from 1e+06 up and below 1e-04.
    if (exp < -4 || exp >= 6)
        return std::string(sci);

    std::string out;
    std::string_view mantissa = sci.substr(0, e_pos);
    if (mantissa.front() == '-') {
        out += '-';
        mantissa.remove_prefix(1);
    }
    std::string digits;
    for (char c : mantissa)
        if (c != '.')
            digits += c;
    if (exp < 0)
        return out + "0." + std::string(static_cast<std::size_t>(-exp - 1), '0') + digits;
    const auto int_len = static_cast<std::size_t>(exp) + 1;
    if (digits.size() <= int_len)
        return out + digits + std::string(int_len - digits.size(), '0') + ".0";
    return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string escape_label_value(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '"')
            out += "\\\"";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

std::string escape_help(std::string_view v) {
    std::string out;
    out.reserve(v.size());
    for (char c : v) {
        if (c == '\\')
            out += "\\\\";
        else if (c == '\n')
            out += "\\n";
        else
            out += c;
    }
    return out;
}

} // namespace lanes::common::metrics
