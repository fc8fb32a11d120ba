#include "router/policies/policy_flags.hpp"

namespace lanes::router {

void add_policy_flags(common::flag_set& f, policy_options& o) {
    f.add("load-factor", o.session.load_factor,
          "session: bounded-load cap, a replica takes at most this times the mean in-flight load");
    f.add("prefix-load-factor", o.prefix.load_factor,
          "prefix: the bounded-load cap; no replica takes more than this times the mean "
          "in-flight load, whatever its estimate");
    f.add("prefix-recompute-weight", o.prefix.recompute_weight,
          "prefix: queued prefill tokens that one uncached prompt token weighs in the estimate "
          "(its prefill now, and the cached blocks its copy evicts)");
    f.add("load-cap-floor", o.load.cap_floor,
          "in-flight requests below which no replica counts as over the load cap");
    // The prefix policy's thresholds, which its time-to-first-token estimate replaced.
    const std::string estimate =
        "prefix routes on each replica's estimated time to first token (docs/router.md, "
        "\"The estimate\")";
    f.retire("balance-abs-threshold", estimate + "; --prefix-load-factor bounds the load");
    f.retire("balance-rel-threshold", estimate + "; --prefix-load-factor bounds the load");
    f.retire("min-match-ratio", estimate + ", where a match counts for the prefill it saves");
    f.retire("miss-prefill-weight", estimate + ", which counts queued prefill in tokens");
    f.retire("match-prefill-blocks", estimate + ", which counts queued prefill in tokens");
    f.retire("prefix-long-match-load-factor",
             estimate + "; --prefix-load-factor alone bounds the load");
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
    need(o.prefix.recompute_weight >= 1.0 && o.prefix.recompute_weight <= 1000,
         "--prefix-recompute-weight must be in 1..1000");
    need(o.index.capacity_factor > 0 && o.index.capacity_factor <= 64,
         "--index-capacity-factor must be above 0 and at most 64");
    need(o.index.max_request_share > 0 && o.index.max_request_share <= 1,
         "--index-max-request-share must be above 0 and at most 1");
}

} // namespace lanes::router
