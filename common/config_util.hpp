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
    struct flag;

public:
    // What add() returns: refines how the flag just declared is shown in --help.
    class flag_ref {
    public:
        // The placeholder of its value where its type does not say it: PATH, URL, BYTES, ...
        flag_ref& value_name(std::string name);
        // The values it takes, listed in --help (checking them stays with the config's checks).
        flag_ref& choices(std::vector<std::string> names);

    private:
        friend class flag_set;
        flag_ref(flag_set& set, std::size_t index)
            : set_(set)
            , index_(index) {}
        flag& get() const;
        flag_set& set_;
        std::size_t index_;
    };

    flag_set(std::string program, std::string summary);

    // The flags declared from here on are listed under `title` in --help. Naming a section again
    // adds to it: sections are listed in the order they were first named.
    void section(std::string title);

    // Each type has its placeholder in --help, and value_name() overrides it: a string is TEXT,
    // an integer COUNT, a double NUMBER, a port PORT, a duration DURATION; a bool is [=BOOL].
    flag_ref add(std::string name, std::string& target, std::string help);
    flag_ref add(std::string name, std::int64_t& target, std::string help);
    flag_ref add(std::string name, std::size_t& target, std::string help);
    flag_ref add(std::string name, unsigned short& target, std::string help);
    flag_ref add(std::string name, double& target, std::string help);
    // true/false, yes/no, on/off, 1/0, as --name=VALUE or --name VALUE; a bare --name is true.
    flag_ref add(std::string name, bool& target, std::string help);
    // Durations take a number with a unit: 250ms, 2s, 1m, 1h (a bare number means milliseconds).
    flag_ref add(std::string name, std::chrono::milliseconds& target, std::string help);
    // Repeatable: each occurrence appends.
    flag_ref add(std::string name, std::vector<std::string>& target, std::string help);

    // A flag that no longer exists: given (with or without a value), it is refused with
    // "--name was retired: " + why, which names what replaces it. Not listed in usage().
    void retire(std::string name, std::string why);

    // Returns every problem found (empty when all is well). "--help" / "-h", "--version" and
    // the hidden "--help-markdown" are noted for requested_text().
    std::vector<std::string> parse(int argc, const char* const* argv);
    // Applies one flag by name (also used for values read from a config file).
    std::string apply(std::string_view name, std::string_view value);
    bool has(std::string_view name) const;
    bool help_requested() const { return help_requested_; }
    bool version_requested() const { return version_requested_; }
    // What --help, --help-markdown or --version asked for (empty when none was given): the
    // program prints it and exits 0.
    std::string requested_text() const;
    // Prints requested_text() to stdout and returns true when there is one.
    bool print_if_requested() const;

    // --help: the sections, each flag with its placeholder, what it does, the values it takes and
    // its default, wrapped to usage_width columns.
    std::string usage() const;
    // The same table as markdown (docs/configuration.md): a table a section, "flag | default |
    // meaning".
    std::string usage_markdown() const;
    static constexpr std::size_t usage_width = 100;

private:
    struct flag {
        std::string name;
        std::string help;
        std::string shown_default;
        std::string value_name; // empty for booleans
        bool is_bool = false;
        bool repeatable = false;
        std::vector<std::string> choices;
        std::size_t section = 0;
        std::function<std::string(std::string_view)> set; // returns an error message or ""
        bool retired = false;
    };
    // One line of --help: a flag, or --help and --version, which are no flags of the table.
    struct row {
        std::string label; // "--name PLACEHOLDER"
        std::string help;
        std::vector<std::string> notes; // "one of: ...", "repeatable"
        std::string shown_default;
    };
    flag_ref add_flag(flag f);
    flag_ref add_value(std::string name, std::string help, std::string shown_default,
                       std::string value_name, std::function<std::string(std::string_view)> set);
    const flag* find(std::string_view name) const;
    std::string closest_flag(std::string_view name) const; // "" when none is close
    std::string unknown_option(std::string_view name) const;
    std::vector<std::pair<std::string, std::vector<row>>> rows() const;
    std::string notes() const;

    std::string program_;
    std::string summary_;
    std::vector<std::string> sections_{""}; // the first one holds flags named before any section
    std::size_t current_section_ = 0;
    std::vector<flag> flags_;
    bool help_requested_ = false;
    bool markdown_requested_ = false;
    bool version_requested_ = false;
};

// "250ms", "2s", "1.5s", "1m", "1h", "100" (ms) -> milliseconds; false when malformed or negative.
bool parse_duration(std::string_view text, std::chrono::milliseconds& out);
// The largest whole unit: 30m, 5s, 1h, 250ms ("0s" for zero); parse_duration reads it back.
std::string format_duration(std::chrono::milliseconds d);
// `text` broken at spaces into lines of at most `width` columns, each ending with '\n': the first
// continues a line whose first `first_column` columns are already written, the others start
// with `indent` spaces. A word longer than a line stays whole.
std::string wrap_text(std::string_view text, std::size_t width, std::size_t indent,
                      std::size_t first_column);
// Edits (insertions, deletions, substitutions, swaps of neighbours) that turn `a` into `b`.
std::size_t edit_distance(std::string_view a, std::string_view b);

// Prints "<program>: configuration error: ..." lines to stderr; returns the exit code to use (2).
int report_config_errors(std::string_view program, const std::vector<std::string>& errors);

} // namespace lanes::common
