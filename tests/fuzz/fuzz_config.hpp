#pragma once
// The round-trip oracle of the two configuration targets (fuzz_deck, fuzz_overrides): a configuration that
// validates is written by to_toml() (what a run stores in config.toml and in its checkpoints, and what the
// configuration agreement hashes) and must load again, through the deck parser, to the same key -> value map.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "tests/fuzz/fuzz_util.hpp"

namespace gt::fuzz {

inline void check_round_trip(const Config& cfg, const char* tag) {
  const std::string toml = cfg.to_toml();
  const std::string& path = write_input(tag, reinterpret_cast<const uint8_t*>(toml.data()), toml.size());
  Config again;
  try {
    again.load_file(path);
  } catch (const Error& e) {
    std::fprintf(stderr, "round trip: to_toml() of a valid configuration does not load: %s\n", e.what());
    std::abort();
  }
  if (again.to_map() != cfg.to_map()) {
    std::fprintf(stderr, "round trip: to_toml() loads to another configuration\n");
    std::abort();
  }
}

}  // namespace gt::fuzz
