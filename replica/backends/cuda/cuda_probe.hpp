// Asks the CUDA runtime whether a device is usable (only in builds with LANES_CUDA).
#pragma once

#include <string>

namespace lanes::replica {

// True when device 0 can be used; `why` gets the device name or the reason it cannot.
bool cuda_device_usable(std::string* why);

} // namespace lanes::replica
