// The upstream client's reading of an answer's status line and header (response_head).
#include "common/http/field_syntax.hpp"
#include "common/http/parse.hpp"

#include <boost/beast/http/error.hpp>

#include <algorithm>

namespace lanes::common::http {

using namespace syntax;

namespace {

namespace errc = boost::beast::http;

// Status line: HTTP/1.x SP 3DIGIT [SP reason]. A 101 is refused: we never ask to switch
// protocols, and what follows would not be HTTP. The reason phrase holds no control bytes but
// tabs (a bare CR or LF in it is malformed).
bool parse_status_line(std::string_view line, unsigned& version, int& status,
                       boost::system::error_code& ec) {
    if (line.size() < 12 || !line.starts_with("HTTP/1.") || (line[7] != '0' && line[7] != '1') ||
        line[8] != ' ') {
        ec = errc::error::bad_version;
        return false;
    }
    version = line[7] == '1' ? 11 : 10;
    // 100 to 599: RFC 9110 (15) leaves no other value a meaning a client could relay.
    if (!digit(line[9]) || !digit(line[10]) || !digit(line[11]) ||
        (line.size() > 12 && line[12] != ' ') || line[9] < '1' || line[9] > '5') {
        ec = errc::error::bad_status;
        return false;
    }
    status = (line[9] - '0') * 100 + (line[10] - '0') * 10 + (line[11] - '0');
    if (status == 101 || !plain_value(line.substr(std::min<std::size_t>(line.size(), 13)),
                                      line.data() + line.size())) {
        ec = errc::error::bad_status;
        return false;
    }
    return true;
}

} // namespace

std::string_view response_head::field(std::string_view wanted) const {
    for (const auto& f : fields_)
        if (iequals_ascii(slice(f.name), wanted))
            return slice(f.value);
    return {};
}

void response_head::decide_framing(const framing_fields& f, bool head_request) {
    keep_alive_ = version_ == 11 ? !f.close : f.keep && !f.close;
    // Transfer-Encoding in an HTTP/1.0 answer: framing a peer may read differently, so the
    // connection is not used again (RFC 9112, 6.1). (With a Content-Length too it was refused.)
    if (f.has_te && version_ == 10)
        keep_alive_ = false;
    content_length_ = 0;
    if (head_request || status_ < 200 || status_ == 204 || status_ == 304) {
        framing_ = body_framing::none;
    } else if (f.has_te) {
        framing_ = f.chunked_last ? body_framing::chunked : body_framing::until_close;
    } else if (f.has_length) {
        framing_ = body_framing::length;
        content_length_ = f.length;
    } else {
        framing_ = body_framing::until_close;
    }
    if (framing_ == body_framing::until_close)
        keep_alive_ = false;
}

std::size_t response_head::parse(std::string_view data, bool head_request, std::size_t limit,
                                 boost::system::error_code& ec, std::size_t* scanned) {
    ec = {};
    // Only what earlier calls have not seen, from the last 3 bytes they saw (a blank line split
    // across reads).
    const std::size_t from = scanned ? std::min(data.size(), *scanned) : 0;
    const auto blank = data.find("\r\n\r\n", from >= 3 ? from - 3 : 0);
    // (What follows the blank line is the body's: any bytes.)
    const std::size_t head_end = blank == std::string_view::npos ? data.size() : blank + 4;
    // Every LF ends a CRLF (found with memchr: a header holds a few line ends and many bytes).
    for (auto lf = data.find('\n', from); lf < head_end; lf = data.find('\n', lf + 1)) {
        if (lf == 0 || data[lf - 1] != '\r') {
            ec = errc::error::bad_line_ending;
            return 0;
        }
    }
    if (blank == std::string_view::npos) {
        if (scanned)
            *scanned = data.size();
        if (data.size() > limit)
            ec = errc::error::header_limit;
        return 0;
    }
    const std::size_t total = blank + 2 * crlf.size();
    if (total > limit || total > std::numeric_limits<std::uint32_t>::max()) {
        ec = errc::error::header_limit;
        return 0;
    }
    bytes_.assign(data.data(), total);
    fields_.clear();
    const std::string_view h = bytes_;

    const auto eol = h.find(crlf);
    if (!parse_status_line(h.substr(0, eol), version_, status_, ec))
        return 0;

    framing_fields f;
    connection_names_fields_ = false;
    bool bad_list = false;     // a Connection or Transfer-Encoding field that is not a list
    bool chunked_seen = false; // in this or an earlier Transfer-Encoding field
    const auto fields =
        for_each_field(h, eol + crlf.size(), [&](std::string_view name, std::string_view value) {
            const auto offset = [&](std::string_view part) {
                return static_cast<std::uint32_t>(part.data() - h.data());
            };
            fields_.push_back({{offset(name), static_cast<std::uint32_t>(name.size())},
                               {offset(value), static_cast<std::uint32_t>(value.size())}});
            // The three fields that frame the body (names of different lengths: cheap to tell
            // apart).
            if (name.size() == 14 && field_name_is(name, "content-length")) {
                std::uint64_t n = 0;
                if (!parse_length(value, n) || (f.has_length && n != f.length))
                    return false; // malformed, or two different lengths: no telling which is true
                f.has_length = true;
                f.length = n;
            } else if (name.size() == 17 && field_name_is(name, "transfer-encoding")) {
                if (!coding_list(value)) {
                    bad_list = true;
                    return false;
                }
                f.has_te = true;
                bool twice = false;
                for_each_item(value, [&](std::string_view coding) {
                    // The coding's name, without parameters (as Beast reads it).
                    twice = twice || chunked_seen; // a coding after chunked, chunked included
                    f.chunked_last = iequals(trim(coding.substr(0, coding.find(';'))), "chunked");
                    chunked_seen = chunked_seen || f.chunked_last;
                });
                if (twice) { // chunked is applied once, and last (RFC 9112 6.1), as Beast reads
                    bad_list = true;
                    return false;
                }
            } else if (name.size() == 10 && field_name_is(name, "connection")) {
                if (!token_list(value)) {
                    bad_list = true;
                    return false;
                }
                for_each_item(value, [&](std::string_view option) {
                    const bool close = iequals(option, "close");
                    const bool keep = iequals(option, "keep-alive");
                    f.close = f.close || close;
                    f.keep = f.keep || keep;
                    connection_names_fields_ = connection_names_fields_ || (!close && !keep);
                });
            }
            return true;
        });
    if (fields != fields_end::blank_line) {
        ec = fields == fields_end::bad_name                ? errc::error::bad_field
             : fields == fields_end::bad_value || bad_list ? errc::error::bad_value
                                                           : errc::error::bad_content_length;
        return 0;
    }

    if (f.has_length && f.has_te) {
        // Both frame the body: an answer that could be read two ways (RFC 9112 6.3 says to
        // drop the connection), refused as Beast refuses it.
        ec = errc::error::bad_content_length;
        return 0;
    }
    decide_framing(f, head_request);
    return total;
}

} // namespace lanes::common::http
