#include "common/allocator.hpp"

#ifdef LANES_MIMALLOC
#include <mimalloc.h>
#endif

namespace lanes::common {

std::string allocator_name() {
#ifdef LANES_MIMALLOC
    // Calling into the library also keeps the linker from dropping it as unused: its malloc and
    // free replace glibc's for the whole process only while it is loaded.
    const int v = mi_version();
    return "mimalloc " + std::to_string(v / 100) + "." + std::to_string(v / 10 % 10) + "." +
           std::to_string(v % 10);
#else
    return "glibc malloc";
#endif
}

void return_free_memory() {
#ifdef LANES_MIMALLOC
    // Forced: mimalloc decommits a freed span only after a delay (25 ms), and a thread that
    // has nothing else to do never comes back to it.
    mi_collect(true);
#endif
}

} // namespace lanes::common
