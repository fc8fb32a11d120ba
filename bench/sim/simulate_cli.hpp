// `lanes-bench simulate`: the offline simulator's command line (bench/sim/simulator.hpp).
#pragma once

namespace lanes::bench::sim {

// argv[0] is "simulate". Returns the process's exit status.
int simulate_main(int argc, const char* const* argv);

} // namespace lanes::bench::sim
