// libFuzzer target: the input deck parser (Config::load_file, src/core/config.cpp) on arbitrary bytes.
// Oracles: no crash or sanitizer report; no exception but gt::Error; a deck that loads and validates
// round-trips through to_toml() (fuzz_config.hpp).
#include <cstdint>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "tests/fuzz/fuzz_config.hpp"
#include "tests/fuzz/fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  gt::Config cfg;
  if (!gt::fuzz::accepted([&] {
        cfg.load_file(gt::fuzz::write_input("deck", data, size));
        cfg.validate();
      }))
    return 0;
  gt::fuzz::check_round_trip(cfg, "deck");
  return 0;
}
