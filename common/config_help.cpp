// flag_set's --help and its markdown twin: the sections in the order they were named, each flag
// with its placeholder, its meaning, the values it takes and its default.
#include "common/config_util.hpp"

#include <algorithm>
#include <sstream>

namespace lanes::common {
namespace {

// Where a flag's meaning starts on its line of --help: two columns past the longest flag, or
// this far at most (a longer flag puts its meaning on the next line).
constexpr std::size_t max_meaning_column = 36;

std::string joined(const std::vector<std::string>& items, std::string_view separator) {
    std::string out;
    for (const auto& item : items)
        out += (out.empty() ? "" : std::string(separator)) + item;
    return out;
}

// Joins "default:" to its value in --help; wrap_text does not break there.
constexpr char unbreakable_space = '\x01';

// The help, then what the table knows besides: "(one of: ...; repeatable; default: ...)".
std::string meaning(const std::string& help, std::vector<std::string> notes,
                    const std::string& shown_default) {
    if (!shown_default.empty())
        notes.push_back(std::string("default:") + unbreakable_space + shown_default);
    if (notes.empty())
        return help;
    return help + (help.empty() ? "(" : " (") + joined(notes, "; ") + ")";
}

std::string markdown_cell(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '|')
            out += '\\';
        out += c;
    }
    return out;
}

} // namespace

std::string wrap_text(std::string_view text, std::size_t width, std::size_t indent,
                      std::size_t first_column) {
    std::string out;
    std::size_t column = first_column;
    bool line_empty = true;
    while (!text.empty()) {
        const auto start = text.find_first_not_of(' ');
        if (start == std::string_view::npos)
            break;
        text.remove_prefix(start);
        const auto end = std::min(text.find(' '), text.size());
        const std::string_view word = text.substr(0, end);
        text.remove_prefix(end);
        if (!line_empty && column + 1 + word.size() > width) {
            out += '\n';
            out.append(indent, ' ');
            column = indent;
            line_empty = true;
        }
        if (!line_empty) {
            out += ' ';
            ++column;
        }
        out += word;
        column += word.size();
        line_empty = false;
    }
    return out + '\n';
}

std::vector<std::pair<std::string, std::vector<flag_set::row>>> flag_set::rows() const {
    std::vector<std::pair<std::string, std::vector<row>>> out;
    for (std::size_t s = 0; s < sections_.size(); ++s) {
        std::vector<row> rows;
        for (const auto& f : flags_) {
            if (f.retired || f.section != s)
                continue;
            std::vector<std::string> notes;
            if (!f.choices.empty())
                notes.push_back("one of: " + joined(f.choices, ", "));
            if (f.repeatable)
                notes.push_back("repeatable");
            rows.push_back({"--" + f.name + (f.is_bool ? "[=BOOL]" : " " + f.value_name), f.help,
                            std::move(notes), f.shown_default});
        }
        out.emplace_back(sections_[s], std::move(rows));
    }
    // --help and --version go with the flags of no section when there are only those, else
    // under "General", named by the program or not.
    const bool sectioned = sections_.size() > 1;
    auto general = sectioned ? std::find_if(out.begin(), out.end(),
                                            [](const auto& s) { return s.first == "General"; })
                             : out.begin();
    if (general == out.end())
        general = out.emplace(out.end(), "General", std::vector<row>{});
    general->second.push_back({"--help, -h", "print this help and exit", {}, ""});
    general->second.push_back({"--version", "print the version and exit", {}, ""});
    std::erase_if(out, [](const auto& s) { return s.second.empty(); });
    if (out.size() == 1 || (sectioned && out.front().first.empty()))
        out.front().first = out.size() == 1 ? "Options" : "Other options";
    return out;
}

std::string flag_set::notes() const {
    const auto any = [&](auto pred) { return std::any_of(flags_.begin(), flags_.end(), pred); };
    std::string out = "Give a flag's value as --name VALUE or --name=VALUE.";
    if (any([](const flag& f) { return !f.retired && f.value_name == "DURATION"; }))
        out += " A DURATION is a number with a unit: 250ms, 2s, 5m, 1h (a bare number is "
               "milliseconds).";
    if (any([](const flag& f) { return !f.retired && f.is_bool; }))
        out += " A BOOL is true/false, yes/no, on/off or 1/0; a boolean flag given alone means "
               "true.";
    return out;
}

std::string flag_set::usage() const {
    std::string out =
        "usage: " + program_ + " [options]\n" + wrap_text(summary_, usage_width, 0, 0);
    out += "\n" + wrap_text(notes(), usage_width, 0, 0);
    const auto sections = rows();
    std::size_t meaning_column = 0;
    for (const auto& section : sections)
        for (const auto& r : section.second)
            meaning_column = std::max(meaning_column, 2 + r.label.size() + 2);
    meaning_column = std::min(meaning_column, max_meaning_column);
    for (const auto& [title, rows] : sections) {
        out += "\n" + title + ":\n";
        for (const auto& r : rows) {
            std::string line = "  " + r.label;
            if (line.size() + 2 > meaning_column) {
                out += line + "\n";
                line.clear();
            }
            line.resize(meaning_column, ' ');
            std::string text = wrap_text(meaning(r.help, r.notes, r.shown_default), usage_width,
                                         meaning_column, meaning_column);
            std::replace(text.begin(), text.end(), unbreakable_space, ' ');
            out += line + text;
        }
    }
    return out;
}

std::string flag_set::usage_markdown() const {
    std::ostringstream out;
    for (const auto& [title, rows] : rows()) {
        out << "\n### " << title << "\n\n| Flag | Default | Meaning |\n|---|---|---|\n";
        for (const auto& r : rows)
            out << "| `" << r.label << "` | "
                << (r.shown_default.empty() ? "" : "`" + markdown_cell(r.shown_default) + "`")
                << " | " << markdown_cell(meaning(r.help, r.notes, "")) << " |\n";
    }
    return out.str();
}

} // namespace lanes::common
