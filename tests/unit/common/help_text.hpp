// Reading a --help text in tests: its lines, and its text with wrapped lines joined, to find a
// phrase wherever the wrapping broke it.
#pragma once

#include <sstream>
#include <string>
#include <vector>

namespace lanes::test {

inline std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);)
        out.push_back(line);
    return out;
}

// Each line without its indent, joined by one space (a blank line stays a line break).
inline std::string unwrapped(const std::string& text) {
    std::string out;
    for (const auto& line : lines_of(text)) {
        const auto start = line.find_first_not_of(' ');
        out += start == std::string::npos ? "\n" : " " + line.substr(start);
    }
    return out;
}

} // namespace lanes::test
