// Asks the CUDA runtime whether a device is usable, and its free memory (only in builds with
// LANES_CUDA).
#pragma once

#include <cstddef>
#include <string>

namespace lanes::replica {

// True when device 0 can be used; `why` gets the device name or the reason it cannot.
bool cuda_device_usable(std::string* why);

// Free and total memory of device 0; false (with `why`) when the runtime cannot say.
bool cuda_memory(std::size_t& free_bytes, std::size_t& total_bytes, std::string* why);

} // namespace lanes::replica
