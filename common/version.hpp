// The version the binaries print for --version: CMake's project version, and the git commit the
// build was configured from where there was one.
#pragma once

#include <string>
#include <string_view>

namespace lanes::common {

// "lanes-router 0.1.0 (git abc1234)", or "lanes-router 0.1.0" when built outside a git checkout.
std::string version_line(std::string_view program);

} // namespace lanes::common
