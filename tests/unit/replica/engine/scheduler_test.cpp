#include "replica/engine/scheduler.hpp"

#include <catch2/catch.hpp>

#include <memory>

using namespace lanes::replica;

namespace {

std::unique_ptr<sequence> make_seq(std::uint64_t id, std::size_t prompt_len, unsigned salt = 0) {
    auto s = std::make_unique<sequence>();
    s->id = id;
    for (std::size_t i = 0; i < prompt_len; ++i)
        s->tokens.push_back(static_cast<lanes::common::token_id>((i * 7 + salt) % 250));
    s->num_prompt = prompt_len;
    return s;
}

// Runs one step the way the engine does: compute every chunk, append a token where a chunk
// reaches the end of the sequence.
schedule_output step(scheduler& sched) {
    auto out = sched.schedule();
    for (const auto& c : out.chunks) {
        sched.on_computed(c.seq, c.num_tokens);
        if (c.seq->num_computed == c.seq->tokens.size())
            c.seq->tokens.push_back(65);
    }
    return out;
}

} // namespace

TEST_CASE("the second identical prompt hits every full block but the capped last token",
          "[scheduler]") {
    block_manager bm(256);
    scheduler sched(bm, {16, 8, 4096});
    auto a = make_seq(1, 1000);
    sched.add(a.get());
    auto first = step(sched);
    REQUIRE(first.admitted.size() == 1);
    CHECK(first.admitted[0].hit_tokens == 0);
    CHECK(first.admitted[0].query_tokens == 1000);
    sched.remove(a.get()); // finished: blocks go to the free list with their hashes

    auto b = make_seq(2, 1000);
    sched.add(b.get());
    auto second = step(sched);
    REQUIRE(second.admitted.size() == 1);
    CHECK(second.admitted[0].hit_tokens == 992); // 62 full blocks of 16
    CHECK(second.chunks[0].num_tokens == 8);     // only the partial tail is computed

    // A prompt of exactly 64 tokens can reuse only 3 of its 4 blocks (one token must be computed).
    sched.remove(b.get());
    auto c = make_seq(3, 64);
    sched.add(c.get());
    step(sched);
    sched.remove(c.get());
    auto d = make_seq(4, 64);
    sched.add(d.get());
    auto again = step(sched);
    CHECK(again.admitted[0].hit_tokens == 48);
    CHECK(bm.check_invariants().empty());
}

TEST_CASE("long prompts are prefilled in chunks within the token budget", "[scheduler]") {
    block_manager bm(256);
    scheduler sched(bm, {16, 8, 256});
    auto a = make_seq(1, 600);
    sched.add(a.get());
    std::vector<std::size_t> chunks;
    while (a->num_generated() == 0) {
        auto out = step(sched);
        REQUIRE(out.chunks.size() == 1);
        chunks.push_back(out.chunks[0].num_tokens);
    }
    CHECK(chunks == std::vector<std::size_t>{256, 256, 88});
    auto out = step(sched); // decode: one token
    CHECK(out.chunks[0].num_tokens == 1);
}

TEST_CASE("running out of blocks preempts the newest sequence, which later resumes",
          "[scheduler]") {
    block_manager bm(8); // 128 tokens of KV
    scheduler sched(bm, {16, 8, 1024});
    auto a = make_seq(1, 40, 1);
    auto b = make_seq(2, 40, 2);
    sched.add(a.get());
    sched.add(b.get());
    step(sched); // both admitted: 3 + 3 blocks
    CHECK(sched.num_running() == 2);
    std::size_t preemptions = 0;
    for (int i = 0; i < 60 && (a->num_generated() < 60); ++i)
        preemptions += step(sched).preempted.size();
    CHECK(preemptions >= 1);
    CHECK(a->num_generated() >= 60); // the oldest kept going: no starvation
    sched.remove(a.get());
    for (int i = 0; i < 40; ++i)
        step(sched);
    CHECK(b->num_generated() > 1); // the preempted one was re-admitted and progressed
    CHECK(bm.check_invariants().empty());
}

TEST_CASE("removing a sequence frees its blocks at once", "[scheduler]") {
    block_manager bm(32);
    scheduler sched(bm, {16, 8, 1024});
    auto a = make_seq(1, 100);
    sched.add(a.get());
    step(sched);
    CHECK(bm.num_used() == 7);
    sched.remove(a.get());
    CHECK(bm.num_used() == 0);
    CHECK(sched.idle());
}

TEST_CASE("admission respects max_num_seqs and is FCFS", "[scheduler]") {
    block_manager bm(256);
    scheduler sched(bm, {16, 2, 4096});
    std::vector<std::unique_ptr<sequence>> seqs;
    for (int i = 0; i < 4; ++i) {
        seqs.push_back(make_seq(static_cast<std::uint64_t>(i), 20, static_cast<unsigned>(i)));
        sched.add(seqs.back().get());
    }
    auto out = step(sched);
    REQUIRE(out.admitted.size() == 2);
    CHECK(out.admitted[0].seq == seqs[0].get());
    CHECK(out.admitted[1].seq == seqs[1].get());
    CHECK(sched.num_waiting() == 2);
}
