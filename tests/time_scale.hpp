// Time limits in tests, scaled under a sanitizer: the build sets LANES_TIME_SCALE (1 plain, 4
// under AddressSanitizer, 8 under ThreadSanitizer), and a test that waits for something with a
// deadline waits scaled(deadline). Thresholds that measure speed itself say why they skip there.
#pragma once

#ifndef LANES_TIME_SCALE
#define LANES_TIME_SCALE 1
#endif

namespace lanes::test {

inline constexpr int time_scale = LANES_TIME_SCALE;
inline constexpr bool under_sanitizer = LANES_TIME_SCALE > 1;

template <class Duration>
constexpr Duration scaled(Duration d) {
    return d * time_scale;
}

} // namespace lanes::test
