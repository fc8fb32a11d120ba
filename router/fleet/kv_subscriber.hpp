// The router's side of KV-cache events: a thread that subscribes (ZeroMQ SUB) to every replica
// that has an event endpoint (announced in its metrics as lanes replicas do, else
// --kv-events-port on the replica's host), decodes vLLM's batches (common/kv_events) and keeps
// the precise index. Sequence numbers are followed per replica: a gap asks the replica's replay
// socket for what was missed; a replay that cannot fill it (or no replay socket, or a batch that
// does not decode) resyncs: the replica's entries are dropped and, with a bootstrap token, the
// replica's block dump (GET /kv-events/blocks: every cached block and the sequence number the
// stream goes on from) starts it again at once; without one it is not live until an
// AllBlocksCleared. A sequence that starts again (the engine restarted) starts the replica over.
// A router that joins a running stream asks for a replay from the first batch, and reads the
// dump when the replay no longer reaches back that far.
#pragma once

#include "common/prompt/block_hash.hpp"
#include "router/fleet/replica_pool.hpp"
#include "router/index/precise_index.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace lanes::common::kv_events {
struct batch;
}

namespace lanes::router {

class router_metrics;

// Batches (sequence, payload) as a replay socket gives them (kv_sources.hpp).
using replayed_batches = std::vector<std::pair<std::int64_t, std::string>>;

struct kv_subscriber_config {
    unsigned short port = 0;        // tcp://<replica host>:port for replicas that announce none
    unsigned short replay_port = 0; // their replay socket's (0: none)
    std::string topic;              // subscription prefix ("" for every topic)
    std::chrono::milliseconds replay_timeout{500};
    std::chrono::milliseconds resubscribe_interval{200}; // how often the replica list is read
    std::string bootstrap_token; // the replicas' --kv-dump-token; "" reads no dumps
    std::chrono::milliseconds bootstrap_timeout{2'000};
    std::size_t bootstrap_max_bytes = 64u << 20;
    std::chrono::milliseconds bootstrap_retry{1'000}; // least time between two of one replica
    std::chrono::milliseconds warmup_timeout{2'000};  // see warmed()
    // Pacing of the subscriber's thread: how long one poll of the live sockets waits, once warm
    // and while warming up (when new replicas are also looked for every warming_resubscribe);
    // how many batches of one replica are read before the others get their turn.
    std::chrono::milliseconds poll_interval{50};
    std::chrono::milliseconds warming_poll_interval{10};
    std::chrono::milliseconds warming_resubscribe{20};
    int max_batches_per_turn = 256;
};

class kv_subscriber {
public:
    // `root_for(replica, lora_name, salt_hash)`: block 0's parent, in the router's hashes, of
    // that replica's runs with no parent (salt_hash: the run's cache_salt_hash, 0 for none).
    using root_fn =
        std::function<common::block_hash(const replica&, const std::string&, std::uint64_t)>;
    kv_subscriber(replica_pool& pool, precise_index& index, router_metrics& metrics,
                  kv_subscriber_config cfg, root_fn root_for);
    ~kv_subscriber();
    kv_subscriber(const kv_subscriber&) = delete;
    kv_subscriber& operator=(const kv_subscriber&) = delete;

    void start();
    void stop();
    // Whether the index has had its first look at every healthy replica (what /readiness waits
    // for): every replica's first probe is back, and each healthy one has its models read and a
    // scrape answered (so its event port, if any, is known) and, if it has an event port, has
    // been joined; or warmup_timeout since start().
    bool warmed() const;

private:
    struct subscription; // one replica's sockets and sequence
    struct sockets;      // the ZeroMQ context and every subscription

    void run();
    // Subscribes to replicas that have an event endpoint now and drops those that have none.
    void sync();
    void join(const std::string& id, const std::string& endpoint, const std::string& replay);
    // Reads what arrived on the live sockets, waiting at most `wait`.
    void poll(std::chrono::milliseconds wait);
    void on_batch(subscription& s, std::int64_t seq, const std::string& payload);

    // What the replica's replay socket still has from `from` on (nullopt: no socket, no answer).
    std::optional<replayed_batches> replay(subscription& s, std::int64_t from);
    void apply_batch(const subscription& s, const common::kv_events::batch& b);
    bool apply(const subscription& s, const std::string& payload);
    // Applies the contiguous run of `got` that starts at `from` (below `upto`): the last sequence
    // number applied (from - 1 for none), or nullopt when a batch does not decode.
    std::optional<std::int64_t> apply_run(const subscription& s, const replayed_batches& got,
                                          std::int64_t from, std::int64_t upto);
    // The replica's block dump, then what its replay socket has from the dump on: the last
    // sequence number the index now reflects (the replica live), or nullopt when there is no
    // token, the last try was too recent, or the dump cannot be had.
    std::optional<std::int64_t> bootstrap(subscription& s);
    // Fills batches [from, upto) from the replay socket, else from the replica's block dump: the
    // last sequence number the index then reflects, or nullopt when neither could (the replica's
    // entries dropped, not live until its cache clears or a later dump). from_start: the index
    // starts over from batch `from` = 0.
    std::optional<std::int64_t> catch_up(subscription& s, std::int64_t from, std::int64_t upto,
                                         bool from_start);
    // The replica's stream started again: its cache is new, so what the router guessed of the
    // old one goes too (the epoch moves; the approximate index forgets it).
    void cache_lost(const std::string& id);
    void publish_live(const std::string& id);

    replica_pool& pool_;
    precise_index& index_;
    router_metrics& metrics_;
    kv_subscriber_config cfg_;
    root_fn root_for_;
    std::atomic<bool> stopping_{false};
    mutable std::atomic<bool> warmed_{false}; // once warm, warm for good
    std::chrono::steady_clock::time_point started_{};
    std::unique_ptr<sockets> z_; // the subscriber thread's alone
    std::thread thread_;
};

} // namespace lanes::router
