// The hand-off between the engine thread and an HTTP session: the engine pushes events (text
// deltas, then one final event) from its own thread; the session awaits them on its executor. A
// session that loses its client calls cancel(), and the engine drops the request at its next step.
#pragma once

#include "common/openai/response.hpp"

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include <atomic>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace lanes::replica {

// Why a request ended, as OpenAI's finish_reason and vLLM's finished_reason label name it.
enum class finish_reason { none, stop, length, abort, error };

constexpr std::string_view to_string(finish_reason r) {
    switch (r) {
    case finish_reason::stop:
        return "stop";
    case finish_reason::length:
        return "length";
    case finish_reason::abort:
        return "abort";
    case finish_reason::error:
        return "error";
    case finish_reason::none:
        break;
    }
    return "";
}

struct stream_event {
    std::string text; // new output text (may be empty on the final event)
    // When the request asked for logprobs: those of the tokens generated since the last event
    // (a stop string held back may put a token's text in a later event than its logprobs).
    std::vector<common::openai::token_logprob> logprobs;
    bool finished = false;
    finish_reason finish = finish_reason::none; // final event only
    // The stop string or stop_token_ids id that ended it (final event only).
    common::openai::stop_reason stop_reason;
    std::int64_t prompt_tokens = 0;
    std::int64_t completion_tokens = 0;
    std::int64_t cached_tokens = 0;
    std::string error; // non-empty when the engine failed the request
};

class request_stream : public std::enable_shared_from_this<request_stream> {
public:
    explicit request_stream(boost::asio::any_io_executor session_executor);

    // Engine thread.
    void push(stream_event ev);
    bool cancelled() const { return cancelled_.load(std::memory_order_acquire); }

    // Session side: the next event, waiting as long as needed.
    boost::asio::awaitable<stream_event> next();
    // Marks the request abandoned and runs the engine's wake-up hook so it is freed promptly.
    void cancel();
    void set_cancel_hook(std::function<void()> hook) { cancel_hook_ = std::move(hook); }

private:
    boost::asio::any_io_executor executor_;
    boost::asio::steady_timer ready_; // cancelled to wake the waiting session
    std::mutex mutex_;
    std::deque<stream_event> events_;
    std::atomic<bool> cancelled_{false};
    std::function<void()> cancel_hook_;
};

} // namespace lanes::replica
