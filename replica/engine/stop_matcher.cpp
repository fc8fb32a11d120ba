#include "replica/engine/stop_matcher.hpp"

#include <algorithm>

namespace lanes::replica {

stop_matcher::stop_matcher(std::vector<std::string> stops)
    : stops_(std::move(stops)) {
    std::erase_if(stops_, [](const std::string& s) { return s.empty(); });
}

bool stop_matcher::append(std::string_view text, bool check) {
    if (stopped_)
        return true;
    const std::size_t old_size = output_.size();
    output_.append(text);
    if (!check)
        return false;
    for (const auto& stop : stops_) {
        // A match must end inside the new text, so start looking just before it.
        const std::size_t from = old_size >= stop.size() ? old_size - stop.size() + 1 : 0;
        const auto pos = output_.find(stop, from);
        if (pos != std::string::npos) {
            output_.resize(pos);
            stopped_ = true;
            matched_ = stop; // a later one that matched earlier in the text replaces it
        }
    }
    return stopped_;
}

std::string stop_matcher::take_ready() {
    // Hold back the longest tail of the output that is a proper prefix of some stop string.
    std::size_t hold = 0;
    if (!stopped_) {
        for (const auto& stop : stops_) {
            const std::size_t max_len = std::min(stop.size() - 1, output_.size());
            for (std::size_t len = max_len; len > hold; --len) {
                if (std::string_view(output_).substr(output_.size() - len) ==
                    std::string_view(stop).substr(0, len)) {
                    hold = len;
                    break;
                }
            }
        }
    }
    const std::size_t ready_end = std::max(released_, output_.size() - hold);
    std::string ready = output_.substr(released_, ready_end - released_);
    released_ = ready_end;
    return ready;
}

std::string stop_matcher::take_all() {
    std::string rest = output_.substr(std::min(released_, output_.size()));
    released_ = output_.size();
    return rest;
}

} // namespace lanes::replica
