#include "common/chunked.hpp"

#include <limits>

namespace lanes::common::http {

namespace {

constexpr std::string_view crlf = "\r\n";

int hex_value(char c) {
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

enum class line_result { ok, need_more, error };

// The line starting at `pos`: sets `end` to the position of its CRLF.
line_result find_line(std::string_view data, std::size_t pos, std::size_t max_line,
                      std::size_t& end) {
    end = data.find(crlf, pos);
    if (end == std::string_view::npos)
        return data.size() - pos > max_line ? line_result::error : line_result::need_more;
    return end - pos > max_line ? line_result::error : line_result::ok;
}

} // namespace

chunk_scan scan_chunks(std::string_view data, std::size_t max_line) {
    chunk_scan out;
    std::size_t pos = 0;
    while (pos < data.size()) {
        std::size_t eol = 0;
        switch (find_line(data, pos, max_line, eol)) {
        case line_result::error:
            out.error = true;
            return out;
        case line_result::need_more:
            return out;
        case line_result::ok:
            break;
        }
        // chunk-size [; extensions]
        std::size_t size = 0, digits = 0, i = pos;
        for (; i < eol; ++i, ++digits) {
            const int v = hex_value(data[i]);
            if (v < 0)
                break;
            if (size > (std::numeric_limits<std::size_t>::max() >> 4)) {
                out.error = true;
                return out;
            }
            size = size << 4 | static_cast<std::size_t>(v);
        }
        if (digits == 0 || (i < eol && data[i] != ';' && data[i] != ' ' && data[i] != '\t')) {
            out.error = true;
            return out;
        }
        const std::size_t body = eol + crlf.size();
        if (size == 0) {
            // The last chunk, then trailer fields, each a line, up to an empty line.
            std::size_t t = body;
            for (;;) {
                std::size_t end = 0;
                const line_result r = find_line(data, t, max_line, end);
                if (r == line_result::error) {
                    out.error = true;
                    return out;
                }
                if (r == line_result::need_more)
                    return out;
                if (end == t) {
                    out.last = true;
                    out.consumed = end + crlf.size();
                    return out;
                }
                t = end + crlf.size();
            }
        }
        if (data.size() - body < size || data.size() - body - size < crlf.size())
            return out; // the data or its CRLF has not all arrived
        if (data.substr(body + size, crlf.size()) != crlf) {
            out.error = true;
            return out;
        }
        pos = body + size + crlf.size();
        out.complete = out.consumed = pos;
    }
    return out;
}

} // namespace lanes::common::http
