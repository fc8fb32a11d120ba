#include "router/fleet/sequence_tracker.hpp"

namespace lanes::router {

sequence_tracker::step sequence_tracker::next(std::int64_t seq) {
    // Batches a replay or a dump already covered, queued on the live socket meanwhile (a batch 0
    // is never one: it is a stream starting again).
    if (skip_upto_) {
        if (seq > 0 && seq <= *skip_upto_)
            return {action::skip};
        skip_upto_.reset();
    }
    if (last_ && seq == *last_ + 1)
        return {action::apply};
    if (last_ && seq > *last_ + 1)
        return {action::catch_up, *last_ + 1, seq};
    // The first batch since joining, or a sequence that started again (the engine restarted):
    // from its first batch, the stream says everything.
    const bool lost = last_.has_value();
    if (seq == 0)
        return {action::restart, 0, 0, true, lost};
    return {action::catch_up, 0, seq, true, lost};
}

void sequence_tracker::done(std::int64_t seq, std::optional<std::int64_t> known) {
    if (known && *known >= seq) { // a dump reached past this batch
        last_ = known;
        skip_upto_ = known;
        return;
    }
    last_ = seq;
}

void sequence_tracker::joined(std::optional<std::int64_t> known) {
    if (known) {
        last_ = known;
        skip_upto_ = known;
    }
}

} // namespace lanes::router
