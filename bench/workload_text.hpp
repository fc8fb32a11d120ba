// The random text lanes-bench's workloads are made of (byte tokens: one character, one token).
#pragma once

#include <random>
#include <string>

namespace lanes::bench {

std::string random_text(std::mt19937_64& rng, std::size_t n);

} // namespace lanes::bench
