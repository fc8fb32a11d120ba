// Random draws for a policy whose choice must leave it unchanged (policy.hpp). The draws of one
// decision come from the seed and the count of decisions recorded so far: a peek sees the draws
// the next pick will see, and on_routed moves the policy on to fresh ones. splitmix64 (Steele,
// Lea and Flood 2014) turns the pair into a stream: cheap to start per decision, unlike a
// Mersenne Twister's 2.5 KB state.
#pragma once

#include <cstddef>
#include <cstdint>

namespace lanes::router {

class seeded_draws {
public:
    explicit seeded_draws(std::uint64_t seed)
        : seed_(seed) {}

    // One decision's draws.
    class stream {
    public:
        explicit stream(std::uint64_t state)
            : state_(state) {}
        std::uint64_t next();
        // Uniform over [0, n), n > 0, without the modulo's bias.
        std::size_t below(std::size_t n);

    private:
        std::uint64_t state_;
    };

    stream for_decision() const { return stream(seed_ ^ (recorded_ * 0xd1b54a32d192ed03ULL)); }
    // A decision was acted on: the next one draws afresh.
    void advance() { ++recorded_; }

private:
    std::uint64_t seed_;
    std::uint64_t recorded_ = 0;
};

} // namespace lanes::router
