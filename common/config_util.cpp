#include "common/config_util.hpp"

#include "common/version.hpp"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <optional>
#include <utility>

namespace lanes::common {
namespace {

constexpr std::string_view bool_spellings = "true/false/yes/no/on/off/1/0";

template <class Int>
bool parse_int(std::string_view text, Int& out) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

bool parse_double(std::string_view text, double& out) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

// The spellings of bool_spellings, in any case.
std::optional<bool> parse_bool(std::string_view text) {
    std::string lower(text);
    std::transform(lower.begin(), lower.end(), lower.begin(),
                   [](unsigned char c) { return static_cast<char>(c | 0x20); });
    if (lower == "true" || lower == "yes" || lower == "on" || lower == "1")
        return true;
    if (lower == "false" || lower == "no" || lower == "off" || lower == "0")
        return false;
    return std::nullopt;
}

std::string expects_bool(std::string_view name) {
    return "--" + std::string(name) + " expects " + std::string(bool_spellings) + " (or no value)";
}

std::string bad_value(std::string_view name, std::string_view value, std::string_view expected) {
    return "--" + std::string(name) + ": '" + std::string(value) + "' is not " +
           std::string(expected);
}

// Sets an integer flag from its text, or says what it should have been.
template <class Int>
std::function<std::string(std::string_view)> integer_setter(const std::string& name, Int& target,
                                                            const char* expected) {
    return [&target, name, expected](std::string_view v) {
        return parse_int(v, target) ? std::string() : bad_value(name, v, expected);
    };
}

std::string shortest(double value) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof buf, value);
    return ec == std::errc{} ? std::string(buf, end) : std::string("?");
}

} // namespace

bool parse_duration(std::string_view text, std::chrono::milliseconds& out) {
    double scale = 1.0;
    std::string_view number = text;
    if (text.ends_with("ms")) {
        number = text.substr(0, text.size() - 2);
    } else if (text.ends_with('s')) {
        number = text.substr(0, text.size() - 1);
        scale = 1000.0;
    } else if (text.ends_with('m')) {
        number = text.substr(0, text.size() - 1);
        scale = 60'000.0;
    } else if (text.ends_with('h')) {
        number = text.substr(0, text.size() - 1);
        scale = 3'600'000.0;
    }
    double value = 0;
    // Finite and under about 30 years: the milliseconds must fit their integer.
    if (!parse_double(number, value) || !(value >= 0) || value * scale > 1e12)
        return false;
    out = std::chrono::milliseconds(static_cast<std::int64_t>(value * scale + 0.5));
    return true;
}

std::string format_duration(std::chrono::milliseconds d) {
    const std::int64_t ms = d.count();
    if (ms == 0)
        return "0s";
    constexpr std::pair<std::int64_t, const char*> units[] = {
        {3'600'000, "h"}, {60'000, "m"}, {1000, "s"}};
    for (const auto& [size, suffix] : units)
        if (ms % size == 0)
            return std::to_string(ms / size) + suffix;
    return std::to_string(ms) + "ms";
}

std::size_t edit_distance(std::string_view a, std::string_view b) {
    // Optimal string alignment: three rows of the Levenshtein table, with swaps.
    std::vector<std::size_t> before(b.size() + 1), prev(b.size() + 1), cur(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j)
        prev[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        cur[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
            cur[j] = std::min({prev[j] + 1, cur[j - 1] + 1, prev[j - 1] + cost});
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
                cur[j] = std::min(cur[j], before[j - 2] + 1);
        }
        std::swap(before, prev);
        std::swap(prev, cur);
    }
    return prev[b.size()];
}

flag_set::flag& flag_set::flag_ref::get() const {
    return set_.flags_[index_];
}

flag_set::flag_ref& flag_set::flag_ref::value_name(std::string name) {
    get().value_name = std::move(name);
    return *this;
}

flag_set::flag_ref& flag_set::flag_ref::choices(std::vector<std::string> names) {
    get().choices = std::move(names);
    return *this;
}

flag_set::flag_set(std::string program, std::string summary)
    : program_(std::move(program))
    , summary_(std::move(summary)) {}

void flag_set::section(std::string title) {
    const auto it = std::find(sections_.begin(), sections_.end(), title);
    current_section_ = static_cast<std::size_t>(it - sections_.begin());
    if (it == sections_.end())
        sections_.push_back(std::move(title));
}

flag_set::flag_ref flag_set::add_flag(flag f) {
    f.section = current_section_;
    flags_.push_back(std::move(f));
    return flag_ref(*this, flags_.size() - 1);
}

flag_set::flag_ref flag_set::add_value(std::string name, std::string help,
                                       std::string shown_default, std::string value_name,
                                       std::function<std::string(std::string_view)> set) {
    return add_flag({.name = std::move(name),
                     .help = std::move(help),
                     .shown_default = std::move(shown_default),
                     .value_name = std::move(value_name),
                     .set = std::move(set)});
}

flag_set::flag_ref flag_set::add(std::string name, std::string& target, std::string help) {
    return add_value(name, std::move(help), target, "TEXT", [&target](std::string_view v) {
        target = std::string(v);
        return std::string();
    });
}

flag_set::flag_ref flag_set::add(std::string name, std::int64_t& target, std::string help) {
    return add_value(name, std::move(help), std::to_string(target), "COUNT",
                     integer_setter(name, target, "an integer"));
}

flag_set::flag_ref flag_set::add(std::string name, std::size_t& target, std::string help) {
    return add_value(name, std::move(help), std::to_string(target), "COUNT",
                     integer_setter(name, target, "a non-negative integer"));
}

flag_set::flag_ref flag_set::add(std::string name, unsigned short& target, std::string help) {
    return add_value(name, std::move(help), std::to_string(target), "PORT",
                     integer_setter(name, target, "a port number (0-65535)"));
}

flag_set::flag_ref flag_set::add(std::string name, double& target, std::string help) {
    return add_value(
        name, std::move(help), shortest(target), "NUMBER", [&target, name](std::string_view v) {
            return parse_double(v, target) ? std::string() : bad_value(name, v, "a number");
        });
}

flag_set::flag_ref flag_set::add(std::string name, bool& target, std::string help) {
    auto ref = add_value(name, std::move(help), target ? "true" : "false", "",
                         [&target, name](std::string_view v) {
                             const auto value = parse_bool(v);
                             if (!value)
                                 return expects_bool(name) + ", not '" + std::string(v) + "'";
                             target = *value;
                             return std::string();
                         });
    ref.get().is_bool = true;
    return ref;
}

flag_set::flag_ref flag_set::add(std::string name, std::chrono::milliseconds& target,
                                 std::string help) {
    return add_value(name, std::move(help), format_duration(target), "DURATION",
                     [&target, name](std::string_view v) {
                         return parse_duration(v, target)
                                    ? std::string()
                                    : bad_value(name, v, "a duration such as 250ms, 2s or 1m");
                     });
}

flag_set::flag_ref flag_set::add(std::string name, std::vector<std::string>& target,
                                 std::string help) {
    std::string shown;
    for (const auto& v : target)
        shown += (shown.empty() ? "" : ", ") + v;
    auto ref = add_value(name, std::move(help), shown, "TEXT", [&target](std::string_view v) {
        target.emplace_back(v);
        return std::string();
    });
    ref.get().repeatable = true;
    return ref;
}

const flag_set::flag* flag_set::find(std::string_view name) const {
    for (const auto& f : flags_)
        if (f.name == name)
            return &f;
    return nullptr;
}

bool flag_set::has(std::string_view name) const {
    return find(name) != nullptr;
}

void flag_set::retire(std::string name, std::string why) {
    flag f;
    f.name = name;
    f.retired = true;
    f.set = [message = "--" + name + " was retired: " + why](std::string_view) { return message; };
    add_flag(std::move(f));
}

std::string flag_set::closest_flag(std::string_view name) const {
    // Near enough to be a slip of the keyboard rather than another word.
    std::string_view best;
    std::size_t best_distance = 3;
    const auto consider = [&](std::string_view known) {
        const std::size_t d = edit_distance(name, known);
        if (d < best_distance && 2 * d < name.size()) {
            best = known;
            best_distance = d;
        }
    };
    for (const auto& f : flags_)
        if (!f.retired)
            consider(f.name);
    consider("help");
    consider("version");
    return std::string(best);
}

std::string flag_set::unknown_option(std::string_view name) const {
    const std::string closest = closest_flag(name);
    return "unknown option --" + std::string(name) +
           (closest.empty() ? "" : " (did you mean --" + closest + "?)");
}

std::string flag_set::apply(std::string_view name, std::string_view value) {
    if (const flag* f = find(name))
        return f->set(value);
    return unknown_option(name);
}

std::vector<std::string> flag_set::parse(int argc, const char* const* argv) {
    std::vector<std::string> errors;
    std::string_view bare_bool; // the boolean flag just given without a value, if any
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        const std::string_view after_bool = std::exchange(bare_bool, {});
        if (arg == "--help" || arg == "-h") {
            help_requested_ = true;
            continue;
        }
        if (arg == "--version") {
            version_requested_ = true;
            continue;
        }
        if (arg == "--help-markdown") {
            markdown_requested_ = true;
            continue;
        }
        if (!arg.starts_with("--")) {
            std::string e = "unexpected argument '" + std::string(arg) + "'";
            if (!after_bool.empty())
                e += ": " + expects_bool(after_bool);
            errors.push_back(std::move(e));
            continue;
        }
        arg.remove_prefix(2);
        std::string_view name = arg, value;
        bool has_value = false;
        if (const auto eq = arg.find('='); eq != std::string_view::npos) {
            name = arg.substr(0, eq);
            value = arg.substr(eq + 1);
            has_value = true;
        }
        const bool next_is_value = i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--");
        const flag* found = find(name);
        if (!found) {
            errors.push_back(unknown_option(name));
            // "--polcy prefix": the value goes with the misspelt flag, not a second complaint.
            if (!has_value && next_is_value && !closest_flag(name).empty())
                ++i;
            continue;
        }
        if (found->retired) {
            // Its value, if it was given one, goes with it.
            if (!has_value && next_is_value)
                ++i;
            errors.push_back(found->set(value));
            continue;
        }
        if (!has_value) {
            if (found->is_bool) {
                const bool next_is_bool = i + 1 < argc && parse_bool(argv[i + 1]).has_value();
                value = next_is_bool ? std::string_view(argv[++i]) : "true";
                if (!next_is_bool)
                    bare_bool = found->name;
            } else if (i + 1 < argc) {
                value = argv[++i];
            } else {
                errors.push_back("--" + std::string(name) + " needs a value");
                continue;
            }
        }
        if (auto e = found->set(value); !e.empty())
            errors.push_back(std::move(e));
    }
    return errors;
}

std::string flag_set::requested_text() const {
    if (version_requested_)
        return version_line(program_) + "\n";
    if (markdown_requested_)
        return usage_markdown();
    if (help_requested_)
        return usage();
    return {};
}

bool flag_set::print_if_requested() const {
    const std::string text = requested_text();
    if (text.empty())
        return false;
    std::fputs(text.c_str(), stdout);
    return true;
}

int report_config_errors(std::string_view program, const std::vector<std::string>& errors) {
    for (const auto& e : errors)
        std::fprintf(stderr, "%.*s: configuration error: %s\n", int(program.size()), program.data(),
                     e.c_str());
    std::fprintf(stderr, "%.*s: run with --help for the list of options\n", int(program.size()),
                 program.data());
    return 2;
}

} // namespace lanes::common
