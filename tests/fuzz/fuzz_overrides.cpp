// libFuzzer target: the command-line override parser (Config::set, `section.key=value`), one override per
// line of the input, as the gridtrain command applies its arguments after the deck.
// Oracles: no crash or sanitizer report; no exception but gt::Error; a configuration the overrides produce
// (and that validates) round-trips through to_toml() (fuzz_config.hpp). Found: a value holding `"#`.
#include <cstdint>
#include <string>

#include "src/core/config.hpp"
#include "src/core/error.hpp"
#include "tests/fuzz/fuzz_config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  gt::Config cfg;
  try {
    size_t begin = 0;
    while (begin <= text.size()) {
      size_t end = text.find('\n', begin);
      if (end == std::string::npos) end = text.size();
      // an argv element cannot hold a NUL byte: the shell would cut it there
      std::string arg = text.substr(begin, end - begin);
      arg = arg.substr(0, arg.find('\0'));
      if (!arg.empty()) cfg.set(arg);
      begin = end + 1;
    }
    cfg.validate();
  } catch (const gt::Error&) {
    return 0;
  }
  gt::fuzz::check_round_trip(cfg, "overrides");
  return 0;
}
