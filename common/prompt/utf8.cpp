#include "common/prompt/utf8.hpp"

#include <cstdint>
#include <cstring>

namespace lanes::common {

namespace {

// Bytes a sequence starting with lead byte b needs in all (0: b cannot start one).
int sequence_length(std::uint8_t b) {
    if (b < 0x80) {
        return 1;
    }
    if (b >= 0xc2 && b <= 0xdf) {
        return 2;
    }
    if (b >= 0xe0 && b <= 0xef) {
        return 3;
    }
    if (b >= 0xf0 && b <= 0xf4) {
        return 4;
    }
    return 0;
}

// Whether c may follow lead byte b as the second byte (excludes overlongs, surrogates, > U+10FFFF).
bool second_byte_ok(std::uint8_t b, std::uint8_t c) {
    switch (b) {
    case 0xe0:
        return c >= 0xa0 && c <= 0xbf;
    case 0xed:
        return c >= 0x80 && c <= 0x9f;
    case 0xf0:
        return c >= 0x90 && c <= 0xbf;
    case 0xf4:
        return c >= 0x80 && c <= 0x8f;
    default:
        return c >= 0x80 && c <= 0xbf;
    }
}

// Length of the well-formed prefix of a sequence at bytes[i]: the whole sequence when complete and
// valid (returned as `full`), else how many bytes of it are a valid beginning.
struct sequence_scan {
    std::size_t valid = 0;
    bool full = false;
};

sequence_scan scan_sequence(std::string_view bytes, std::size_t i) {
    const auto b = static_cast<std::uint8_t>(bytes[i]);
    const int need = sequence_length(b);
    if (need == 0) {
        return {};
    }
    std::size_t k = 1;
    for (; k < static_cast<std::size_t>(need) && i + k < bytes.size(); ++k) {
        const auto c = static_cast<std::uint8_t>(bytes[i + k]);
        const bool ok = k == 1 ? second_byte_ok(b, c) : (c >= 0x80 && c <= 0xbf);
        if (!ok) {
            return {k, false};
        }
    }
    return {k, k == static_cast<std::size_t>(need)};
}

} // namespace

bool is_valid_utf8(std::string_view bytes) {
    std::size_t i = 0;
    while (i < bytes.size()) {
        // Eight ASCII bytes at a time: most prompt text is ASCII.
        std::uint64_t word = 0;
        while (i + sizeof word <= bytes.size() &&
               (std::memcpy(&word, bytes.data() + i, sizeof word), word & 0x8080808080808080ULL) ==
                   0) {
            i += sizeof word;
        }
        if (i == bytes.size()) {
            break;
        }
        if (static_cast<std::uint8_t>(bytes[i]) < 0x80) {
            ++i;
            continue;
        }
        const auto scan = scan_sequence(bytes, i);
        if (!scan.full) {
            return false;
        }
        i += scan.valid;
    }
    return true;
}

std::string utf8_lossy(std::string_view bytes) {
    std::string out;
    out.reserve(bytes.size());
    std::size_t i = 0;
    while (i < bytes.size()) {
        if (static_cast<std::uint8_t>(bytes[i]) < 0x80) {
            out.push_back(bytes[i++]);
            continue;
        }
        const auto scan = scan_sequence(bytes, i);
        if (scan.full) {
            out.append(bytes.substr(i, scan.valid));
            i += scan.valid;
        } else {
            out.append("\xef\xbf\xbd");
            i += scan.valid == 0 ? 1 : scan.valid;
        }
    }
    return out;
}

std::size_t utf8_complete_prefix(std::string_view bytes) {
    // Only a sequence starting in the last 3 bytes can still be waiting for more.
    const std::size_t from = bytes.size() > 3 ? bytes.size() - 3 : 0;
    for (std::size_t i = bytes.size(); i > from; --i) {
        const auto b = static_cast<std::uint8_t>(bytes[i - 1]);
        if (b >= 0x80 && b <= 0xbf) {
            continue;
        }
        const auto scan = scan_sequence(bytes, i - 1);
        const bool waiting = !scan.full && i - 1 + scan.valid == bytes.size() && scan.valid > 0;
        return waiting ? i - 1 : bytes.size();
    }
    return bytes.size();
}

void append_utf8(std::string& out, char32_t cp) {
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

} // namespace lanes::common
