// The engine-to-session hand-off: events pushed from another thread arrive in order on the
// session's executor, a waiting next() wakes for each push, cancel() runs the engine's hook once.
#include "replica/engine/request_stream.hpp"

#include <boost/asio.hpp>
#include <catch2/catch.hpp>

#include <thread>

using namespace lanes::replica;
namespace asio = boost::asio;
using namespace std::chrono_literals;

namespace {

stream_event text_event(std::string text) {
    stream_event ev;
    ev.text = std::move(text);
    return ev;
}

stream_event final_event(finish_reason reason) {
    stream_event ev;
    ev.finished = true;
    ev.finish = reason;
    ev.prompt_tokens = 6;
    ev.completion_tokens = 2;
    return ev;
}

// Runs `io` until `body` finishes or 10 s pass; false when the deadline came first.
template <class F>
bool run_with_deadline(asio::io_context& io, F body) {
    asio::steady_timer deadline(io, 10s);
    bool finished = false;
    asio::co_spawn(
        io,
        [&]() -> asio::awaitable<void> {
            co_await body();
            finished = true;
            deadline.cancel();
        },
        asio::detached);
    deadline.async_wait([&](boost::system::error_code ec) {
        if (!ec)
            io.stop();
    });
    io.run();
    return finished;
}

} // namespace

TEST_CASE("request_stream: events from another thread arrive in order on the executor",
          "[request_stream]") {
    asio::io_context io;
    auto stream = std::make_shared<request_stream>(io.get_executor());
    constexpr int n = 2000;
    std::vector<std::string> got;
    std::thread::id reader;
    stream_event last;
    std::thread engine([stream] {
        for (int i = 0; i < n; ++i)
            stream->push(text_event(std::to_string(i)));
        stream->push(final_event(finish_reason::length));
    });
    const bool done = run_with_deadline(io, [&]() -> asio::awaitable<void> {
        for (;;) {
            stream_event ev = co_await stream->next();
            reader = std::this_thread::get_id();
            if (ev.finished) {
                last = std::move(ev);
                co_return;
            }
            got.push_back(std::move(ev.text));
        }
    });
    engine.join();
    REQUIRE(done);
    CHECK(reader == std::this_thread::get_id()); // the thread running io, not the engine's
    REQUIRE(got.size() == static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i)
        REQUIRE(got[static_cast<std::size_t>(i)] == std::to_string(i));
    CHECK(last.finish == finish_reason::length);
    CHECK(last.prompt_tokens == 6);
    CHECK(last.completion_tokens == 2);
    CHECK(last.text.empty());
}

TEST_CASE("request_stream: events pushed before anyone waits are kept", "[request_stream]") {
    asio::io_context io;
    auto stream = std::make_shared<request_stream>(io.get_executor());
    stream->push(text_event("a"));
    stream->push(text_event("b"));
    stream->push(final_event(finish_reason::stop));
    std::string text;
    std::string reason;
    CHECK(run_with_deadline(io, [&]() -> asio::awaitable<void> {
        for (;;) {
            const stream_event ev = co_await stream->next();
            text += ev.text;
            if (ev.finished) {
                reason = to_string(ev.finish);
                co_return;
            }
        }
    }));
    CHECK(text == "ab");
    CHECK(reason == "stop");
}

TEST_CASE("request_stream: next() after the final event waits for the next push",
          "[request_stream]") {
    asio::io_context io;
    auto stream = std::make_shared<request_stream>(io.get_executor());
    stream->push(final_event(finish_reason::stop));
    bool pushed = false;
    stream_event after;
    CHECK(run_with_deadline(io, [&]() -> asio::awaitable<void> {
        const stream_event first = co_await stream->next();
        CHECK(first.finished);
        // The push runs only once this coroutine is suspended inside next(): if next() did not wait
        // (returned the final event again, or an empty one), `pushed` would still be false.
        asio::post(io, [&] {
            pushed = true;
            stream->push(text_event("late"));
        });
        after = co_await stream->next();
        CHECK(pushed);
    }));
    CHECK(after.text == "late");
    CHECK_FALSE(after.finished);
}

TEST_CASE("request_stream: cancel() marks the stream and runs the hook once", "[request_stream]") {
    asio::io_context io;
    auto stream = std::make_shared<request_stream>(io.get_executor());
    int hook_runs = 0;
    stream->set_cancel_hook([&] { ++hook_runs; });
    CHECK_FALSE(stream->cancelled());
    CHECK(hook_runs == 0);
    stream->cancel();
    CHECK(stream->cancelled());
    CHECK(hook_runs == 1);
    stream->cancel(); // already cancelled: the engine is not woken again
    CHECK(hook_runs == 1);
    CHECK(stream->cancelled());
    // Without a hook (not yet submitted) cancel() only marks it.
    auto bare = std::make_shared<request_stream>(io.get_executor());
    bare->cancel();
    CHECK(bare->cancelled());
}
