// What one replica's KV-event sequence numbers say to do with each batch, as a pure state
// machine (no sockets, no index): the next batch in order is applied; a gap is caught up from
// the replica's replay socket (or its block dump); a stream that starts again (the engine
// restarted) or a first batch after joining mid-stream starts the replica over; batches a replay
// or a dump already covered are skipped. The subscriber (kv_subscriber) does what it is told and
// reports back what the index then reflects.
#pragma once

#include <cstdint>
#include <optional>

namespace lanes::router {

class sequence_tracker {
public:
    enum class action {
        apply,    // the next batch in order
        skip,     // a replay or a dump already covered it
        catch_up, // batches [from, upto) are missing: fetch them, then this one
        restart,  // the stream starts at batch 0 here: the index starts over with it
    };
    struct step {
        action what = action::apply;
        std::int64_t from = 0; // catch_up only
        std::int64_t upto = 0; // catch_up only: the batch in hand
        // Whether the index starts over (nothing kept of the replica): a restart, or a
        // catch-up from batch 0 (a first batch after joining mid-stream).
        bool from_start = false;
        // The stream started again after batches were seen: the replica's cache is a new one.
        bool cache_lost = false;
    };

    // What to do with batch `seq` (>= 0) as it arrives on the live socket.
    step next(std::int64_t seq);
    // After next(seq) was carried out: `known` is the last sequence number the index reflects
    // when a catch-up or dump reached that far, nullopt when it did not (the batch in hand was
    // then applied, or the replica is left not live).
    void done(std::int64_t seq, std::optional<std::int64_t> known);
    // On joining: the replay or dump read then reflects batches up to `known` (nullopt: none).
    void joined(std::optional<std::int64_t> known);

    std::optional<std::int64_t> last() const { return last_; }

private:
    std::optional<std::int64_t> last_;      // the last batch the index reflects
    std::optional<std::int64_t> skip_upto_; // batches up to this one came by replay or dump
};

} // namespace lanes::router
