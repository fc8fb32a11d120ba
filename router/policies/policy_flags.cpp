#include "router/policies/policy_flags.hpp"

namespace lanes::router {

void add_policy_flags(common::flag_set& f, policy_options& o) {
    f.add("load-factor", o.session.load_factor,
          "session: bounded-load cap, a replica takes at most this times the mean in-flight load");
    f.add("prefix-load-factor", o.prefix.load_factor,
          "prefix: the bounded-load cap's factor for leaving the replica that caches a prefix");
    f.add("prefix-long-match-load-factor", o.prefix.long_match_load_factor,
          "prefix: added to --prefix-load-factor times the share of the prompt a replica caches, "
          "for leaving that replica (0: the load factor alone)");
    f.add("load-cap-floor", o.load.cap_floor,
          "in-flight requests below which no replica counts as over the load cap");
    f.add("balance-abs-threshold", o.prefix.balance_abs_threshold,
          "prefix: load gap (requests) above which routing ignores the cache ...");
    f.add("balance-rel-threshold", o.prefix.balance_rel_threshold,
          "... and max load above this times min load (both must hold)");
    f.add("min-match-ratio", o.prefix.min_match_ratio,
          "prefix: matched share of the prompt below which the request is a miss (to the "
          "least full index)");
    f.add("miss-prefill-weight", o.prefix.miss_prefill_weight,
          "prefix: between equally full indexes, a miss goes to the lowest load plus this times "
          "the prefill pending there (uncached blocks routed, no first byte yet) over its own "
          "blocks; 0: load alone");
    f.add("match-prefill-blocks", o.prefix.match_prefill_blocks,
          "prefix: between equally long matches, this many blocks of prefill pending at a "
          "replica count as one more request there; 0: load alone");
    f.add("index-capacity", o.index.capacity,
          "prefix/kv_aware: blocks remembered per replica when it does not report num_gpu_blocks");
    f.add("index-capacity-factor", o.index.capacity_factor,
          "prefix/kv_aware: blocks remembered per replica, times its num_gpu_blocks");
    f.add("index-max-request-share", o.index.max_request_share,
          "prefix/kv_aware: most of a replica's index one request may fill (its leading blocks); "
          "a prompt longer than the whole index adds none");
    f.add("hash-prefix-blocks", o.index.hash_prefix_blocks,
          "prefix: leading blocks hashed when the index is empty (agreement across routers)");
    f.add("kv-weight", o.load.kv_weight, "load score: queued requests a full KV cache counts as");
    f.add("overlap-weight", o.kv_aware.overlap_weight,
          "kv_aware: cost of one uncached prompt block against one active KV block");
    f.add("session-ttl", o.session.ttl, "session: idle time before a session is forgotten");
    f.add("session-capacity", o.session.capacity, "session: sessions remembered");
}

void check_policy_options(const policy_options& o, std::vector<std::string>& errors) {
    const auto need = [&](bool ok, const char* message) {
        if (!ok)
            errors.emplace_back(message);
    };
    need(o.session.load_factor >= 1.0, "--load-factor must be at least 1");
    need(o.prefix.load_factor >= 1.0, "--prefix-load-factor must be at least 1");
    need(o.prefix.long_match_load_factor >= 0 && o.prefix.long_match_load_factor <= 16,
         "--prefix-long-match-load-factor must be in 0..16");
    need(o.prefix.miss_prefill_weight >= 0 && o.prefix.miss_prefill_weight <= 1000,
         "--miss-prefill-weight must be in 0..1000");
    need(o.prefix.match_prefill_blocks >= 0, "--match-prefill-blocks must not be negative");
    need(o.index.capacity_factor > 0 && o.index.capacity_factor <= 64,
         "--index-capacity-factor must be above 0 and at most 64");
    need(o.index.max_request_share > 0 && o.index.max_request_share <= 1,
         "--index-max-request-share must be above 0 and at most 1");
    need(o.prefix.min_match_ratio >= 0 && o.prefix.min_match_ratio <= 1,
         "--min-match-ratio must be in 0..1");
}

} // namespace lanes::router
