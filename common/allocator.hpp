// Which malloc the process runs on. The servers link mimalloc when the build finds it (Debian's
// libmimalloc-dev; CMake option LANES_MIMALLOC): a proxied request makes a few dozen small
// allocations (Beast's header fields, coroutine frames too large for Asio's recycling cache), which
// glibc's malloc serves with more work per call than mimalloc's per-thread pages.
#pragma once

#include <string>

namespace lanes::common {

// "mimalloc 2.0.9" or "glibc malloc"; for the startup log line.
std::string allocator_name();

} // namespace lanes::common
