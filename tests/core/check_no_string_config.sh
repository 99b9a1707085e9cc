#!/usr/bin/env bash
# Issue #20's rule: no config value is compared as a string outside src/core (code branches on the typed views
# of src/core/enums.hpp: Config::choices(), ModelConfig::llama(), ...). Catches `<section>.<key> == "..."` in
# src/ and kernels/; a comparison through a renamed reference (m.arch with m a ModelConfig) is not seen.
#   check_no_string_config.sh SOURCE_DIR
cd "$1" || exit 2
hits=$(grep -rnE '\b(model|train|parallel|data|checkpoint|output|compress|kernels|sparsity)\.[a-z_]+ *[!=]= *"' \
  src kernels --include=*.cpp --include=*.hpp | grep -v '^src/core/')
[ -z "$hits" ] || { echo "config values compared as strings outside src/core:"; echo "$hits"; exit 1; }
echo "ok: no config value compared as a string outside src/core"
