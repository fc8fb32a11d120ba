// Everything the process writes to stderr while a function runs (stderr goes to a pipe
// meanwhile; the log's queue is flushed before it is put back).
#pragma once

#include "common/log.hpp"

#include <catch2/catch.hpp>

#include <string>
#include <unistd.h>

namespace lanes::test {

template <class F>
std::string capture_stderr(F f) {
    common::log::flush(); // lines from before are not this function's
    int fds[2];
    REQUIRE(::pipe(fds) == 0);
    const int saved = ::dup(STDERR_FILENO);
    REQUIRE(saved >= 0);
    ::dup2(fds[1], STDERR_FILENO);
    ::close(fds[1]);
    f();
    common::log::flush();
    ::dup2(saved, STDERR_FILENO); // the pipe's last writer is gone: reads end at its end
    ::close(saved);
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;)
        out.append(buf, static_cast<std::size_t>(n));
    ::close(fds[0]);
    return out;
}

} // namespace lanes::test
