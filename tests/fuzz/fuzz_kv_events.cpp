// KV-event payloads from replicas (any bytes a PUB socket can deliver): decode never reads past
// the input or allocates beyond its bounds, and whatever decodes encodes to bytes that decode to
// the same batch.
#include "common/kv_events/events.hpp"

#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    namespace ev = lanes::common::kv_events;
    const std::string_view payload(reinterpret_cast<const char*>(data), size);
    ev::batch b;
    std::string error;
    if (!ev::decode(payload, b, error)) {
        if (error.empty())
            std::abort(); // a refusal always says why
        return 0;
    }
    const std::string once = ev::encode(b);
    ev::batch again;
    if (!ev::decode(once, again, error) || ev::encode(again) != once)
        std::abort();
    return 0;
}
