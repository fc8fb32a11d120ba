// Which malloc the process runs on. The servers link mimalloc when the build finds it (Debian's
// libmimalloc-dev; CMake option LANES_MIMALLOC): a proxied request makes a few dozen small
// allocations (Beast's header fields, coroutine frames too large for Asio's recycling cache), which
// glibc's malloc serves with more work per call than mimalloc's per-thread pages.
#pragma once

#include <chrono>
#include <cstddef>
#include <string>

namespace lanes::common {

// "mimalloc 2.0.9" or "glibc malloc"; for the startup log line.
std::string allocator_name();

// Buffers at least this large are worth handing back to the system as soon as they are freed.
inline constexpr std::size_t large_buffer_bytes = 1024 * 1024;
// After handing one back, a session does so once more this much later, for what the rest of its
// request frees after (its handler's frame, the connection's buffers as it closes).
inline constexpr std::chrono::milliseconds return_again_after{100};

// Hands what the calling thread has freed back to the system now. mimalloc keeps a thread's freed
// pages for its next allocations and returns them only as that thread goes on allocating: an I/O
// thread that goes quiet after a request with a large body would keep the body's pages resident.
// (glibc's malloc unmaps a large block when it is freed: nothing to do there.)
void return_free_memory();

} // namespace lanes::common
