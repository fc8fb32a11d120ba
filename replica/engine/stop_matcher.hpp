// Stop strings for a streamed output: text is released to the client only when it can no longer
// turn into a stop string, and a matched stop string is cut from the output (as vLLM does).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

class stop_matcher {
public:
    explicit stop_matcher(std::vector<std::string> stops);

    // Appends generated text; returns true when the output now contains a stop string ending in
    // `text` (the text from the stop string on is dropped). Unless `check`: text before
    // min_tokens, which vLLM's detokenizer never looks for stop strings in.
    bool append(std::string_view text, bool check = true);
    // Text that is safe to send now (removed from the pending part).
    std::string take_ready();
    // At the end of the request: everything not yet sent.
    std::string take_all();
    const std::string& output() const { return output_; }
    // The stop string that matched, once one has.
    const std::optional<std::string>& matched() const { return matched_; }

private:
    std::vector<std::string> stops_;
    std::string output_;       // the whole output so far (stop string removed)
    std::size_t released_ = 0; // bytes of output_ already handed out
    bool stopped_ = false;
    std::optional<std::string> matched_;
};

} // namespace lanes::replica
