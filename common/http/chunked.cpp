#include "common/http/chunked.hpp"

#include <algorithm>
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

// Control bytes other than tab: a bare LF or CR among them would let a peer that takes a bare LF
// as a line end frame the body differently from us.
bool has_control_bytes(std::string_view text) {
    for (const char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if ((u < 0x20 && u != '\t') || u == 0x7f)
            return true;
    }
    return false;
}

bool is_tchar(char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// Chunk extensions (RFC 9112 7.1.1): *( BWS ";" BWS name [ BWS "=" BWS ( token /
// quoted-string ) ] ), as Beast's parser reads them; anything else is broken framing.
bool valid_extensions(std::string_view ext) {
    std::size_t i = 0;
    const auto skip_ws = [&] {
        while (i < ext.size() && (ext[i] == ' ' || ext[i] == '\t'))
            ++i;
    };
    const auto token = [&] {
        const std::size_t start = i;
        while (i < ext.size() && is_tchar(ext[i]))
            ++i;
        return i > start;
    };
    for (;;) {
        const std::size_t before = i;
        skip_ws();
        if (i == ext.size())
            return i == before; // whitespace only ever comes before a ';'
        if (ext[i++] != ';')
            return false;
        skip_ws();
        if (!token())
            return false;
        const std::size_t after_name = i;
        skip_ws();
        if (i == ext.size() || ext[i] != '=') {
            i = after_name; // no value: what follows is judged from the name's end
            continue;
        }
        ++i;
        skip_ws();
        if (i < ext.size() && ext[i] == '"') { // quoted-string: qdtext and quoted-pairs
            for (++i;; ++i) {
                if (i >= ext.size())
                    return false;
                const auto u = static_cast<unsigned char>(ext[i]);
                if (ext[i] == '"')
                    break;
                if (ext[i] == '\\') {
                    if (++i >= ext.size())
                        return false;
                    continue;
                }
                if ((u < 0x20 && u != '\t') || u == 0x7f)
                    return false;
            }
            ++i;
        } else if (!token()) {
            return false;
        }
    }
}

// A trailer field line: a token, a colon, a value without control bytes (RFC 9110 5.1, as
// Beast's parser holds trailers to). It is checked and dropped, never used.
bool trailer_line(std::string_view line) {
    const auto colon = line.find(':');
    if (colon == 0 || colon == std::string_view::npos)
        return false;
    for (const char c : line.substr(0, colon))
        if (!is_tchar(c))
            return false;
    // Framing and connection fields have no place in trailers (RFC 9110 6.5.1); Beast reads them
    // there as it would in the header, and refuses what it would refuse there.
    const auto named = [name = line.substr(0, colon)](std::string_view wanted) {
        if (name.size() != wanted.size())
            return false;
        for (std::size_t k = 0; k < name.size(); ++k)
            if ((name[k] | 0x20) != wanted[k])
                return false;
        return true;
    };
    if (named("transfer-encoding") || named("content-length") || named("connection") ||
        named("proxy-connection") || named("upgrade"))
        return false;
    return !has_control_bytes(line.substr(colon + 1));
}

// A size line without its CRLF: hex digits, then nothing or chunk extensions.
bool parse_size_line(std::string_view line, std::size_t& size) {
    size = 0;
    std::size_t i = 0;
    for (; i < line.size(); ++i) {
        const int v = hex_value(line[i]);
        if (v < 0)
            break;
        if (size > (std::numeric_limits<std::size_t>::max() >> 4))
            return false;
        size = size << 4 | static_cast<std::size_t>(v);
    }
    if (i == 0 || (i < line.size() && line[i] != ';' && line[i] != ' ' && line[i] != '\t'))
        return false;
    return valid_extensions(line.substr(i));
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
        std::size_t size = 0;
        if (!parse_size_line(data.substr(pos, eol - pos), size)) {
            out.error = true;
            return out;
        }
        const std::size_t body = eol + crlf.size();
        if (size == 0) {
            // The last chunk, then trailer fields, each a line, up to an empty line.
            std::size_t t = body;
            for (;;) {
                if (t - body > chunk_trailer_limit) {
                    out.error = true;
                    return out;
                }
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
                if (!trailer_line(data.substr(t, end - t))) {
                    out.error = true;
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

std::size_t chunk_decoder::decode(std::string_view in, std::string& out, bool& error,
                                  std::size_t max_line) {
    error = false;
    std::size_t pos = 0;
    while (pos < in.size() && state_ != state::done) {
        switch (state_) {
        case state::size_line:
        case state::trailers: {
            std::size_t eol = 0;
            const line_result r = find_line(in, pos, max_line, eol);
            if (r == line_result::error) {
                error = true;
                return pos;
            }
            if (r == line_result::need_more)
                return pos;
            const std::string_view line = in.substr(pos, eol - pos);
            pos = eol + crlf.size();
            if (state_ == state::trailers) {
                if (line.empty()) {
                    state_ = state::done;
                } else if (!trailer_line(line)) {
                    error = true;
                    return pos;
                }
                break; // a trailer field is skipped
            }
            if (!parse_size_line(line, left_)) {
                error = true;
                return pos;
            }
            state_ = left_ == 0 ? state::trailers : state::data;
            break;
        }
        case state::data: {
            const std::size_t n = std::min(left_, in.size() - pos);
            out.append(in.substr(pos, n));
            pos += n;
            left_ -= n;
            if (left_ == 0)
                state_ = state::data_end;
            break;
        }
        case state::data_end:
            if (in.size() - pos < crlf.size())
                return pos;
            if (in.substr(pos, crlf.size()) != crlf) {
                error = true;
                return pos;
            }
            pos += crlf.size();
            state_ = state::size_line;
            break;
        case state::done:
            break;
        }
    }
    return pos;
}

} // namespace lanes::common::http
