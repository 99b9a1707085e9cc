#pragma once
// The key table of Config (internal to src/core/config*.cpp): one row per key with its type, where it lives in
// the struct, its one-line documentation and its choices. The parser (config.cpp), the validation
// (config_validate.cpp) and the printed documentation (config_schema.cpp) all walk this one table.
#include <string>
#include <vector>

#include "src/core/config.hpp"
#include "src/core/deck.hpp"
#include "src/core/enums.hpp"

namespace gt {
namespace config_schema {

enum class Kind { Int, Int64, Double, Bool, String };

// One row per key: its type, where it lives, one line of documentation (what `gridtrain keys --doc` and the
// table in docs/config.md print; the defaults and the choices are added from the struct and the enum tables)
// and, for a key that takes one of a few names, those names (src/core/enums.hpp, the one list of them).
struct Field {
  std::string key;
  Kind kind;
  void* ptr;
  std::string doc;
  std::vector<std::string> choices = {};
};

// The names a key of enum type E accepts.
template <class E>
std::vector<std::string> names() {
  return enum_names<E>();
}
// The trainer's precisions: fp8 is the planner's alone (src/core/enums.hpp).
template <>
std::vector<std::string> names<Precision>();

// Every row, bound to the fields of c, in the order of `gridtrain keys`.
std::vector<Field> schema(Config& c);
// The value of a row as the deck writes it (strings quoted, doubles with 17 digits).
std::string format(const Field& f);
// A key with choices holds one of them: throws gt::Error naming the key and the choices otherwise.
void check_choice(const Field& f, const std::string& where);

inline std::string trim(const std::string& s) { return deck_trim(s); }

}  // namespace config_schema
}  // namespace gt
