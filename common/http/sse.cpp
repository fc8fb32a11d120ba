#include "common/http/sse.hpp"

namespace lanes::common::http {

std::string sse_event(std::string_view payload) {
    std::string out = "data: ";
    return out.append(payload).append("\n\n");
}

std::optional<std::string> sse_parser::next() {
    for (;;) {
        // An event ends at a blank line; accept \n\n and \r\n\r\n.
        std::size_t end = buffer_.find("\n\n", pos_);
        std::size_t sep = 2;
        const std::size_t crlf = buffer_.find("\r\n\r\n", pos_);
        if (crlf != std::string::npos && (end == std::string::npos || crlf < end)) {
            end = crlf;
            sep = 4;
        }
        if (end == std::string::npos) {
            if (pos_ > 0 && pos_ == buffer_.size()) {
                buffer_.clear();
                pos_ = 0;
            }
            return std::nullopt;
        }
        std::string_view event(buffer_.data() + pos_, end - pos_);
        pos_ = end + sep;
        std::optional<std::string> data;
        while (!event.empty()) {
            const auto nl = event.find('\n');
            std::string_view line = event.substr(0, nl);
            event = nl == std::string_view::npos ? std::string_view{} : event.substr(nl + 1);
            if (line.ends_with('\r'))
                line.remove_suffix(1);
            if (!line.starts_with("data:"))
                continue;
            line.remove_prefix(5);
            if (line.starts_with(' '))
                line.remove_prefix(1);
            if (data)
                data->push_back('\n');
            else
                data.emplace();
            data->append(line);
        }
        if (pos_ > 64 * 1024) { // compact now and then
            buffer_.erase(0, pos_);
            pos_ = 0;
        }
        if (data)
            return data;
    }
}

} // namespace lanes::common::http
