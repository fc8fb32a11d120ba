// Command-line flags: each binary declares its flags against the fields of its one config struct,
// then parses argv once; every problem is collected so the user sees all of them at once.
// Accepted forms: --name value, --name=value, and for booleans a bare --name.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::common {

class flag_set {
public:
    flag_set(std::string program, std::string summary);

    void add(std::string name, std::string& target, std::string help);
    void add(std::string name, std::int64_t& target, std::string help);
    void add(std::string name, std::size_t& target, std::string help);
    void add(std::string name, unsigned short& target, std::string help);
    void add(std::string name, double& target, std::string help);
    void add(std::string name, bool& target, std::string help);
    // Durations take a number with a unit: 250ms, 2s, 1m (a bare number means milliseconds).
    void add(std::string name, std::chrono::milliseconds& target, std::string help);
    // Repeatable: each occurrence appends.
    void add(std::string name, std::vector<std::string>& target, std::string help);

    // A flag that no longer exists: given (with or without a value), it is refused with
    // "--name was retired: " + why, which names what replaces it. Not listed in usage().
    void retire(std::string name, std::string why);

    // Returns every problem found (empty when all is well). "--help" / "-h" set help_requested().
    std::vector<std::string> parse(int argc, const char* const* argv);
    // Applies one flag by name (also used for values read from a config file).
    std::string apply(std::string_view name, std::string_view value);
    bool has(std::string_view name) const;
    bool help_requested() const { return help_requested_; }
    std::string usage() const;

private:
    struct flag {
        std::string name;
        std::string help;
        std::string shown_default;
        bool is_bool = false;
        std::function<std::string(std::string_view)> set; // returns an error message or ""
        bool retired = false;
    };
    void add_flag(flag f);

    std::string program_;
    std::string summary_;
    std::vector<flag> flags_;
    bool help_requested_ = false;
};

// "250ms", "2s", "1.5s", "1m", "100" (ms) -> milliseconds; false when malformed or negative.
bool parse_duration(std::string_view text, std::chrono::milliseconds& out);

// Prints "<program>: configuration error: ..." lines to stderr; returns the exit code to use (2).
int report_config_errors(std::string_view program, const std::vector<std::string>& errors);

} // namespace lanes::common
