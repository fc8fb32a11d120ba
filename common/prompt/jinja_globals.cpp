// The globals transformers gives chat templates (raise_exception, strftime_now) and Jinja's own
// that they use (namespace, range, dict).
#include "common/prompt/jinja_impl.hpp"

#include <algorithm>

namespace lanes::common::jinja_detail {

namespace {

constexpr std::string_view builtin_names[] = {"raise_exception", "strftime_now", "namespace",
                                              "range", "dict"};

} // namespace

void count_iteration(std::size_t& iterations) {
    if (++iterations > max_iterations) {
        fail("over " + std::to_string(max_iterations) + " loop iterations");
    }
}

bool is_global(const std::string& name) {
    return std::find(std::begin(builtin_names), std::end(builtin_names), name) !=
           std::end(builtin_names);
}

value call_global(const std::string& name, const std::vector<value>& args, const kwargs_t& kwargs,
                  std::time_t now, std::size_t& iterations) {
    if (name == "raise_exception") {
        throw template_raised(args.empty() ? "" : to_str(args[0]));
    }
    if (name == "strftime_now") {
        const std::string format = args.empty() ? "" : to_str(args[0]);
        std::tm tm{};
        gmtime_r(&now, &tm);
        char buf[512];
        const std::size_t len =
            format.size() < 128 ? std::strftime(buf, sizeof buf, format.c_str(), &tm) : 0;
        return value::string_v(std::string(buf, len));
    }
    if (name == "namespace" || name == "dict") {
        dict_t d;
        if (!args.empty() && args[0].k == kind::dict) {
            d = *args[0].d;
        }
        for (const auto& [key, v] : kwargs) {
            d.set(key, v);
        }
        value out = value::dict_v(std::move(d));
        out.k = name == "namespace" ? kind::ns : kind::dict;
        return out;
    }
    // range(stop) / range(start, stop[, step])
    std::int64_t bounds[3] = {0, 0, 1};
    for (std::size_t n = 0; n < args.size() && n < 3; ++n) {
        if (args[n].k != kind::integer) {
            fail("range() takes integers");
        }
        bounds[args.size() == 1 ? 1 : n] = args[n].i;
    }
    if (bounds[2] == 0) {
        fail("range() step must not be zero");
    }
    list_t items;
    for (std::int64_t x = bounds[0]; bounds[2] > 0 ? x < bounds[1] : x > bounds[1];) {
        count_iteration(iterations);
        items.push_back(value::integer_v(x));
        if (__builtin_add_overflow(x, bounds[2], &x)) {
            break;
        }
    }
    return value::list_v(std::move(items));
}

} // namespace lanes::common::jinja_detail
