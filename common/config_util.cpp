#include "common/config_util.hpp"

#include <charconv>
#include <cstdio>
#include <sstream>

namespace lanes::common {
namespace {

template <class Int>
bool parse_int(std::string_view text, Int& out) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

bool parse_double(std::string_view text, double& out) {
    auto [p, ec] = std::from_chars(text.data(), text.data() + text.size(), out);
    return ec == std::errc{} && p == text.data() + text.size() && !text.empty();
}

std::string bad_value(std::string_view name, std::string_view value, std::string_view expected) {
    return "--" + std::string(name) + ": '" + std::string(value) + "' is not " +
           std::string(expected);
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
    }
    double value = 0;
    // Finite and under about 30 years: the milliseconds must fit their integer.
    if (!parse_double(number, value) || !(value >= 0) || value * scale > 1e12)
        return false;
    out = std::chrono::milliseconds(static_cast<std::int64_t>(value * scale + 0.5));
    return true;
}

flag_set::flag_set(std::string program, std::string summary)
    : program_(std::move(program))
    , summary_(std::move(summary)) {}

void flag_set::add_flag(flag f) {
    flags_.push_back(std::move(f));
}

void flag_set::add(std::string name, std::string& target, std::string help) {
    add_flag({name, std::move(help), target, false, [&target](std::string_view v) {
                  target = std::string(v);
                  return std::string();
              }});
}

void flag_set::add(std::string name, std::int64_t& target, std::string help) {
    add_flag(
        {name, std::move(help), std::to_string(target), false, [&target, name](std::string_view v) {
             return parse_int(v, target) ? std::string() : bad_value(name, v, "an integer");
         }});
}

void flag_set::add(std::string name, std::size_t& target, std::string help) {
    add_flag(
        {name, std::move(help), std::to_string(target), false, [&target, name](std::string_view v) {
             return parse_int(v, target) ? std::string()
                                         : bad_value(name, v, "a non-negative integer");
         }});
}

void flag_set::add(std::string name, unsigned short& target, std::string help) {
    add_flag(
        {name, std::move(help), std::to_string(target), false, [&target, name](std::string_view v) {
             return parse_int(v, target) ? std::string()
                                         : bad_value(name, v, "a port number (0-65535)");
         }});
}

void flag_set::add(std::string name, double& target, std::string help) {
    std::ostringstream shown;
    shown << target;
    add_flag({name, std::move(help), shown.str(), false, [&target, name](std::string_view v) {
                  return parse_double(v, target) ? std::string() : bad_value(name, v, "a number");
              }});
}

void flag_set::add(std::string name, bool& target, std::string help) {
    add_flag({name, std::move(help), target ? "true" : "false", true,
              [&target, name](std::string_view v) {
                  if (v == "true" || v == "1" || v == "yes" || v == "on")
                      target = true;
                  else if (v == "false" || v == "0" || v == "no" || v == "off")
                      target = false;
                  else
                      return bad_value(name, v, "true or false");
                  return std::string();
              }});
}

void flag_set::add(std::string name, std::chrono::milliseconds& target, std::string help) {
    add_flag({name, std::move(help), std::to_string(target.count()) + "ms", false,
              [&target, name](std::string_view v) {
                  return parse_duration(v, target)
                             ? std::string()
                             : bad_value(name, v, "a duration such as 250ms, 2s or 1m");
              }});
}

void flag_set::add(std::string name, std::vector<std::string>& target, std::string help) {
    add_flag({name, std::move(help), "", false, [&target](std::string_view v) {
                  target.emplace_back(v);
                  return std::string();
              }});
}

bool flag_set::has(std::string_view name) const {
    for (const auto& f : flags_)
        if (f.name == name)
            return true;
    return false;
}

void flag_set::retire(std::string name, std::string why) {
    flag f;
    f.name = name;
    f.retired = true;
    f.set = [message = "--" + name + " was retired: " + why](std::string_view) { return message; };
    add_flag(std::move(f));
}

std::string flag_set::apply(std::string_view name, std::string_view value) {
    for (const auto& f : flags_)
        if (f.name == name)
            return f.set(value);
    return "unknown option --" + std::string(name);
}

std::vector<std::string> flag_set::parse(int argc, const char* const* argv) {
    std::vector<std::string> errors;
    for (int i = 1; i < argc; ++i) {
        std::string_view arg = argv[i];
        if (arg == "--help" || arg == "-h") {
            help_requested_ = true;
            continue;
        }
        if (!arg.starts_with("--")) {
            errors.push_back("unexpected argument '" + std::string(arg) + "'");
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
        const flag* found = nullptr;
        for (const auto& f : flags_)
            if (f.name == name)
                found = &f;
        if (!found) {
            errors.push_back("unknown option --" + std::string(name));
            continue;
        }
        if (found->retired) {
            // Its value, if it was given one, goes with it.
            if (!has_value && i + 1 < argc && !std::string_view(argv[i + 1]).starts_with("--"))
                ++i;
            errors.push_back(found->set(value));
            continue;
        }
        if (!has_value) {
            const bool next_is_bool_literal =
                i + 1 < argc && (std::string_view(argv[i + 1]) == "true" ||
                                 std::string_view(argv[i + 1]) == "false");
            if (found->is_bool && !next_is_bool_literal) {
                value = "true";
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

std::string flag_set::usage() const {
    std::ostringstream out;
    out << "usage: " << program_ << " [options]\n" << summary_ << "\n\noptions:\n";
    for (const auto& f : flags_) {
        if (f.retired)
            continue;
        out << "  --" << f.name;
        if (!f.is_bool)
            out << " VALUE";
        out << "\n      " << f.help;
        if (!f.shown_default.empty())
            out << " (default: " << f.shown_default << ")";
        out << "\n";
    }
    out << "  --help\n      print this help\n";
    return out.str();
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
