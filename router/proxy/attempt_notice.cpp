#include "router/proxy/attempt_notice.hpp"

namespace lanes::router {

void attempt_notice::first_byte() {
    if (first_byte_)
        return;
    first_byte_ = true;
    chooser_.first_byte(pick_, rr_);
}

void attempt_notice::finish() {
    if (finished_)
        return;
    finished_ = true;
    chooser_.finished(pick_, rr_, first_byte_, taken_);
    first_byte_ = true;
}

} // namespace lanes::router
