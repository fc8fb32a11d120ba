// Tells the policy an attempt ended when it goes out of scope, however the attempt ended: by its
// answer, a failure, an exception, or the coroutine's frame being destroyed at shutdown. Unless
// taken() said the replica took the request, what the policy recorded as pending is dropped.
#pragma once

#include "router/proxy/chooser.hpp"

namespace lanes::router {

class attempt_notice {
public:
    attempt_notice(chooser& c, const pick_result& pick, const route_request& rr)
        : chooser_(c)
        , pick_(pick)
        , rr_(rr) {}
    ~attempt_notice() { finish(); }
    attempt_notice(const attempt_notice&) = delete;
    attempt_notice& operator=(const attempt_notice&) = delete;

    void taken(bool yes) { taken_ = yes; }
    // The replica's answer began: the policy hears it now (else at the end).
    void first_byte();
    // The policy hears the end now (the replica is done before the client is); once.
    void finish();

private:
    chooser& chooser_;
    const pick_result& pick_;
    const route_request& rr_;
    bool taken_ = false;
    bool first_byte_ = false;
    bool finished_ = false;
};

} // namespace lanes::router
